package cluster

import (
	"context"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
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
