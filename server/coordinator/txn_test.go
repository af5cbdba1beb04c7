package coordinator

import (
	"testing"
	"time"
)

// TestTransactionsDurable: a transactional id's state (producer id,
// epoch, a recorded decision, its partitions and pending offsets) is
// saved when its lock is released and read back by the next Open of the
// same dir; an id that never got a producer id is not kept.
func TestTransactionsDurable(t *testing.T) {
	dir := t.TempDir()
	clk := &fakeClock{now: time.Unix(1000, 0)}
	c := open(t, dir, clk)
	pid, err := c.NewProducerID()
	if err != nil {
		t.Fatal(err)
	}
	txn, known, unlock := c.Transactions().Lock("tx")
	if known {
		t.Fatal("a new transactional id is known")
	}
	txn.ProducerID, txn.Epoch = pid, 3
	txn.AddPartition(TxnPartition{Topic: "orders", Partition: 1})
	txn.Offsets = map[string]map[string]map[int32]Committed{"g": {"in": {0: {Offset: 7, LeaderEpoch: -1}}}}
	txn.State = TxnPrepareCommit
	unlock()
	_, _, unlock = c.Transactions().Lock("never-used")
	unlock()
	c.Close()

	c = open(t, dir, clk)
	txn, known, unlock = c.Transactions().Lock("tx")
	defer unlock()
	if !known || txn.ProducerID != pid || txn.Epoch != 3 || txn.State != TxnPrepareCommit {
		t.Fatalf("after reopening: %+v", txn)
	}
	if len(txn.Partitions) != 1 || txn.Partitions[0] != (TxnPartition{Topic: "orders", Partition: 1}) || txn.Offsets["g"]["in"][0].Offset != 7 {
		t.Fatalf("after reopening: %+v", txn)
	}
	if prepared, commit := txn.Prepared(); !prepared || !commit {
		t.Fatalf("Prepared() = %v, %v", prepared, commit)
	}
	if _, ok := c.Transactions().snapshot()["never-used"]; ok {
		t.Fatal("an id without a producer id was saved")
	}
}
