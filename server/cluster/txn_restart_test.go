package cluster

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// relay lets clients made for one run of the lab reach the next run on
// the same data dir, whose brokers listen on other ports: it dials the
// address the same broker has now.
type relay struct {
	mu sync.Mutex
	to map[string]string
}

func (r *relay) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	r.mu.Lock()
	if now, ok := r.to[addr]; ok {
		addr = now
	}
	r.mu.Unlock()
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

// moved maps the brokers' addresses in old (by id, taken before that run
// stopped) to their addresses in now.
func (r *relay) moved(old map[int32]string, now *Cluster) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.to = map[string]string{}
	for id, addr := range old {
		r.to[addr] = now.Broker(id).Addr()
	}
}

func addrsByID(c *Cluster) map[int32]string {
	out := map[int32]string{}
	for _, b := range c.liveBrokers() {
		out[b.ID()] = b.Addr()
	}
	return out
}

// TestTransactionsSurviveCoordinatorRestart: the transaction coordinator's
// state is durable, as Kafka's __transaction_state. Three transactions are
// open when the whole lab stops (the lab's coordinator outlives a crash of
// the broker FindCoordinator names, so a restart is where its state would
// be lost); after it starts again on the same data dir, one producer
// commits its transaction, one aborts its own, and a new instance of the
// third's transactional id aborts the abandoned one (InitProducerId).
// read_committed reads exactly the committed records, and is not held
// back by the abandoned transaction.
func TestTransactionsSurviveCoordinatorRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts a lab")
	}
	dir := t.TempDir()
	c, err := Open(Options{DataDir: dir, Brokers: 3, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			c.Close()
		}
	}()
	if _, err := c.CreateTopic("durable", 2, 3, map[string]string{"min.insync.replicas": "2"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	rl := &relay{}
	producer := func(c *Cluster, id string) *kgo.Client {
		p, err := kgo.NewClient(kgo.SeedBrokers(seeds(c)...), kgo.Dialer(rl.dial), kgo.TransactionalID(id),
			kgo.DefaultProduceTopic("durable"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.RecordDeliveryTimeout(60*time.Second), kgo.TransactionTimeout(60*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		return p
	}
	begin := func(p *kgo.Client, values ...string) {
		t.Helper()
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i, v := range values {
			if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte(v), Partition: int32(i % 2)}).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", v, err)
			}
		}
	}
	keep, drop, lost := producer(c, "keep"), producer(c, "drop"), producer(c, "lost")
	begin(keep, "keep-1", "keep-2")
	begin(drop, "drop-1", "drop-2")
	begin(lost, "lost-1", "lost-2")

	old := addrsByID(c)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	closed = true
	c, err = Open(Options{DataDir: dir, Brokers: 3, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	rl.moved(old, c)

	if err := keep.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit after the restart: %v", err)
	}
	if err := drop.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatalf("abort after the restart: %v", err)
	}
	again := producer(c, "lost") // InitProducerId aborts the abandoned transaction
	begin(again, "again-1")
	if err := again.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("the new instance's commit: %v", err)
	}

	got := readValues(t, c, "durable", kgo.ReadCommitted(), 3)
	slices.Sort(got)
	if want := []string{"again-1", "keep-1", "keep-2"}; !slices.Equal(got, want) {
		t.Fatalf("read_committed after the restart read %q, want %q", got, want)
	}
	if all := readValues(t, c, "durable", kgo.ReadUncommitted(), 7); len(all) != 7 {
		t.Fatalf("read_uncommitted read %q, want all 7 records", all)
	}
	for _, id := range []string{"keep", "drop", "lost"} {
		txn, _, unlock := c.Coordinator().Transactions().Lock(id)
		state := txn.State
		unlock()
		if state == "Ongoing" || state == "PrepareCommit" || state == "PrepareAbort" {
			t.Fatalf("transactional id %s is left %s", id, state)
		}
	}
}

// TestTransactionTimeout: a transaction left open past its producer's
// transaction.timeout.ms is aborted by the coordinator, as Kafka's
// abortTimedOutTransactions does: the last stable offset moves past it
// (read_committed reads what comes after, never its record), and its
// producer, fenced by the epoch bump, cannot commit it. InitProducerId
// asking more than transaction.max.timeout.ms is INVALID_TRANSACTION_TIMEOUT.
func TestTransactionTimeout(t *testing.T) {
	c := openRunning(t, 3)
	if _, err := c.CreateTopic("slow", 1, 3, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	newProducer := func(id string, timeout time.Duration) *kgo.Client {
		p, err := kgo.NewClient(kgo.SeedBrokers(seeds(c)...), kgo.TransactionalID(id), kgo.DefaultProduceTopic("slow"),
			kgo.TransactionTimeout(timeout))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		return p
	}
	slow := newProducer("slow-tx", 1500*time.Millisecond)
	if err := slow.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := slow.ProduceSync(ctx, &kgo.Record{Value: []byte("left-open")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	adm := adminClient(t, c)
	waitFor(t, "the coordinator to abort the timed-out transaction", func() bool {
		stable, err1 := adm.ListCommittedOffsets(ctx, "slow")
		ends, err2 := adm.ListEndOffsets(ctx, "slow")
		s, _ := stable.Lookup("slow", 0)
		e, _ := ends.Lookup("slow", 0)
		return err1 == nil && err2 == nil && e.Offset == 2 && s.Offset == 2 // the record and the abort marker
	})
	if err := slow.EndTransaction(ctx, kgo.TryCommit); err == nil {
		t.Fatal("the timed-out transaction's producer committed it")
	}
	fresh := newProducer("fresh-tx", 30*time.Second)
	if err := fresh.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := fresh.ProduceSync(ctx, &kgo.Record{Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := fresh.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if got := readValues(t, c, "slow", kgo.ReadCommitted(), 1); !slices.Equal(got, []string{"after"}) {
		t.Fatalf("read_committed read %q, want only \"after\"", got)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(c)...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.TransactionalID, ip.TransactionTimeoutMillis = kmsg.StringPtr("greedy-tx"), 16*60*1000
	resp, err := ip.RequestWith(ctx, cl)
	if err != nil || resp.ErrorCode != kerr.InvalidTransactionTimeout.Code {
		t.Fatalf("InitProducerId with a 16-minute timeout: %v %v", err, kerr.ErrorForCode(resp.ErrorCode))
	}
}

// TestTransactionDecisionKept: an EndTxn(commit) whose marker cannot be
// written (the partition's only replica is down) records the decision
// (PrepareCommit) and answers CONCURRENT_TRANSACTIONS; meanwhile the
// transaction takes no partitions and cannot be aborted instead
// (INVALID_TXN_STATE). Once the replica is back, the coordinator writes
// the commit marker by itself, as Kafka's coordinator retries its markers,
// and the EndTxn retried succeeds.
func TestTransactionDecisionKept(t *testing.T) {
	if testing.Short() {
		t.Skip("crashes a broker")
	}
	c := openRunning(t, 3)
	if _, err := c.CreateTopic("single", 1, 1, nil); err != nil {
		t.Fatal(err)
	}
	tp, _ := c.Controller().Topic("single")
	replica := tp.Partitions[0].Replicas[0]
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(c)...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// A transactional id the surviving brokers coordinate.
	txnID := ""
	for i := 0; txnID == ""; i++ {
		id := fmt.Sprintf("kept-%d", i)
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.CoordinatorType, fc.CoordinatorKeys = 1, []string{id}
		resp, err := fc.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Coordinators[0].NodeID != replica {
			txnID = id
		}
	}
	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds(c)...), kgo.TransactionalID(txnID), kgo.DefaultProduceTopic("single"))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	if err := prod.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("kept")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	pid, epoch, err := prod.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	endTxn := func(commit bool) int16 {
		t.Helper()
		et := kmsg.NewPtrEndTxnRequest()
		et.TransactionalID, et.ProducerID, et.ProducerEpoch, et.Commit = txnID, pid, epoch, commit
		resp, err := et.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.ErrorCode
	}

	if err := c.Crash(replica); err != nil {
		t.Fatal(err)
	}
	if code := endTxn(true); code != kerr.ConcurrentTransactions.Code {
		t.Fatalf("EndTxn(commit) with the partition down: %v, want CONCURRENT_TRANSACTIONS", kerr.ErrorForCode(code))
	}
	if code := endTxn(false); code != kerr.InvalidTxnState.Code {
		t.Fatalf("EndTxn(abort) after the commit was decided: %v, want INVALID_TXN_STATE", kerr.ErrorForCode(code))
	}
	ap := kmsg.NewPtrAddPartitionsToTxnRequest()
	ap.TransactionalID, ap.ProducerID, ap.ProducerEpoch = txnID, pid, epoch
	at := kmsg.NewAddPartitionsToTxnRequestTopic()
	at.Topic, at.Partitions = "single", []int32{0}
	ap.Topics = append(ap.Topics, at)
	if resp, err := ap.RequestWith(ctx, cl); err != nil || resp.Topics[0].Partitions[0].ErrorCode != kerr.ConcurrentTransactions.Code {
		t.Fatalf("AddPartitionsToTxn while the markers are pending: %v %+v, want CONCURRENT_TRANSACTIONS", err, resp)
	}

	if err := c.Restart(replica); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the coordinator to complete the commit", func() bool {
		txn, _, unlock := c.Coordinator().Transactions().Lock(txnID)
		defer unlock()
		return txn.State == "CompleteCommit"
	})
	if code := endTxn(true); code != 0 {
		t.Fatalf("EndTxn(commit) retried: %v", kerr.ErrorForCode(code))
	}
	if got := readValues(t, c, "single", kgo.ReadCommitted(), 1); !slices.Equal(got, []string{"kept"}) {
		t.Fatalf("read_committed read %q, want the committed record", got)
	}
}
