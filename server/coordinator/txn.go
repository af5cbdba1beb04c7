package coordinator

import (
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Transaction states, as Kafka's DescribeTransactions names them.
const (
	TxnEmpty         = "Empty"
	TxnOngoing       = "Ongoing"
	TxnCompleteAbort = "CompleteAbort"
	TxnCompleteCmt   = "CompleteCommit"
)

// TxnPartition is a partition in a transaction.
type TxnPartition struct {
	Topic     string
	Partition int32
}

// Txn is one transactional id's state at the transaction coordinator:
// its producer id and epoch, and while a transaction is open the
// partitions it wrote to, the groups it commits offsets for and those
// offsets, held until the transaction commits.
type Txn struct {
	ID         string
	ProducerID int64
	Epoch      int16
	State      string
	Partitions []TxnPartition
	Offsets    map[string]map[string]map[int32]Committed // group → topic → partition
}

// Txns is the lab's transaction coordinator state (Kafka keeps it in the
// __transaction_state log). It is kept in memory: after a restart of the
// lab, a transactional producer starts over with InitProducerId (an open
// transaction then is neither committed nor aborted, so its partitions'
// LSO stays at its first record until the records are deleted; see
// broker/txn.go). Its methods are safe for concurrent use; one
// transactional id's requests are serialized by Lock.
type Txns struct {
	mu   sync.Mutex
	byID map[string]*txnEntry
}

type txnEntry struct {
	mu  sync.Mutex // held through a whole request, markers included
	txn Txn
}

// Transactions returns the lab's transaction coordinator state.
func (c *Coordinator) Transactions() *Txns {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.txns == nil {
		c.txns = &Txns{byID: map[string]*txnEntry{}}
	}
	return c.txns
}

// Lock returns the state of transactional id, locked (with ok false if
// it has none yet), and the function that stores the changed state and
// unlocks it.
func (t *Txns) Lock(id string) (txn *Txn, ok bool, unlock func()) {
	t.mu.Lock()
	e := t.byID[id]
	if e == nil {
		e = &txnEntry{txn: Txn{ID: id, ProducerID: -1, Epoch: -1, State: TxnEmpty}}
		t.byID[id] = e
	}
	t.mu.Unlock()
	e.mu.Lock()
	return &e.txn, e.txn.ProducerID >= 0, e.mu.Unlock
}

// Check reports whether a request of producer id and epoch may act on txn:
// INVALID_PRODUCER_ID_MAPPING for another producer id, PRODUCER_FENCED
// for an older epoch (a zombie: another instance called InitProducerId
// since).
func (txn *Txn) Check(producerID int64, epoch int16) *kerr.Error {
	switch {
	case txn.ProducerID < 0 || producerID != txn.ProducerID:
		return kerr.InvalidProducerIDMapping
	case epoch != txn.Epoch:
		return kerr.ProducerFenced
	}
	return nil
}

// AddPartition adds a partition to the open transaction (opening it).
func (txn *Txn) AddPartition(p TxnPartition) {
	txn.State = TxnOngoing
	if !slices.Contains(txn.Partitions, p) {
		txn.Partitions = append(txn.Partitions, p)
	}
}

// Reset ends the transaction: no partitions, no pending offsets.
func (txn *Txn) Reset(state string) {
	txn.State, txn.Partitions, txn.Offsets = state, nil, nil
}

// NewProducerID hands out a producer id from the coordinator's block, as
// InitProducerId does for an idempotent producer.
func (c *Coordinator) NewProducerID() (int64, error) {
	resp := c.InitProducerID(kmsg.NewPtrInitProducerIDRequest())
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return -1, err
	}
	return resp.ProducerID, nil
}

// CommitTxnOffsets commits a committed transaction's offsets for group,
// durably, as OffsetCommit does.
func (c *Coordinator) CommitTxnOffsets(group string, offsets map[string]map[int32]Committed) error {
	c.mu.Lock()
	for topic, parts := range offsets {
		for p, cm := range parts {
			c.commitLocked(group, topic, p, cm)
		}
	}
	c.seq++
	c.mu.Unlock()
	return c.persist()
}
