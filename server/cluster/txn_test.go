package cluster

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// readValues consumes topic from the start at isolation until it has n
// records, then polls half a second more for any it should not have, and
// returns the values.
func readValues(t *testing.T, c *Cluster, topic string, isolation kgo.IsolationLevel, n int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cons, err := kgo.NewClient(kgo.SeedBrokers(seeds(c)...), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(isolation),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var got []string
	for len(got) < n {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: %v; got %q", topic, ctx.Err(), got)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	more, cancelMore := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancelMore()
	cons.PollFetches(more).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	return got
}

// TestTransactionsReadCommitted: franz-go's transactional producer aborts
// one transaction and commits another on a 3-broker lab. A read_committed
// consumer reads only the committed records (the aborted ones and the
// markers skipped), a read_uncommitted one reads both; and an older
// instance of the same transactional id is fenced.
func TestTransactionsReadCommitted(t *testing.T) {
	c := openRunning(t, 3)
	adm := adminClient(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 2, 3, nil, "txn"); err != nil {
		t.Fatal(err)
	}
	newProducer := func() *kgo.Client {
		p, err := kgo.NewClient(kgo.SeedBrokers(seeds(c)...), kgo.TransactionalID("lab-tx"), kgo.DefaultProduceTopic("txn"),
			kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	prod := newProducer()
	defer prod.Close()
	txn := func(commit kgo.TransactionEndTry, values ...string) {
		t.Helper()
		if err := prod.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i, v := range values {
			if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte(v), Partition: int32(i % 2)}).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", v, err)
			}
		}
		if err := prod.EndTransaction(ctx, commit); err != nil {
			t.Fatalf("end transaction: %v", err)
		}
	}
	txn(kgo.TryAbort, "aborted-1", "aborted-2", "aborted-3")
	txn(kgo.TryCommit, "committed-1", "committed-2", "committed-3")

	txn(kgo.TryCommit, "after")

	committed := readValues(t, c, "txn", kgo.ReadCommitted(), 4)
	uncommitted := readValues(t, c, "txn", kgo.ReadUncommitted(), 7)
	slices.Sort(committed)
	slices.Sort(uncommitted)
	if want := []string{"after", "committed-1", "committed-2", "committed-3"}; !slices.Equal(committed, want) {
		t.Fatalf("read_committed read %q, want %q", committed, want)
	}
	t.Logf("read_committed %q; read_uncommitted %q", committed, uncommitted)
	if len(uncommitted) != 7 {
		t.Fatalf("read_uncommitted read %q, want all 7 records", uncommitted)
	}

	// A second instance with the same transactional id fences the first.
	zombie := prod
	fresh := newProducer()
	defer fresh.Close()
	if err := fresh.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := fresh.ProduceSync(ctx, &kgo.Record{Value: []byte("fresh"), Partition: 1}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := fresh.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if err := zombie.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	err := zombie.ProduceSync(ctx, &kgo.Record{Value: []byte("zombie"), Partition: 0}).FirstErr()
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("the fenced instance produced: %v", err)
	}

	// An open transaction holds the last stable offset back: its records
	// appear to read_committed only once it commits.
	if err := fresh.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := fresh.ProduceSync(ctx, &kgo.Record{Value: []byte("pending"), Partition: 1}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if got := readValues(t, c, "txn", kgo.ReadCommitted(), 5); slices.Contains(got, "pending") || !slices.Contains(got, "fresh") {
		t.Fatalf("read_committed with a transaction open: %q", got)
	}
	// ListOffsets latest under read_committed is the last stable offset:
	// the open transaction's first record, below the HW.
	ends, err := adm.ListEndOffsets(ctx, "txn")
	if err != nil {
		t.Fatal(err)
	}
	stable, err := adm.ListCommittedOffsets(ctx, "txn")
	if err != nil {
		t.Fatal(err)
	}
	e1, _ := ends.Lookup("txn", 1)
	s1, _ := stable.Lookup("txn", 1)
	if s1.Err != nil || s1.Offset != e1.Offset-1 {
		t.Fatalf("last stable offset %d (%v), want the HW %d less the open record", s1.Offset, s1.Err, e1.Offset)
	}
	if err := fresh.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if got := readValues(t, c, "txn", kgo.ReadCommitted(), 6); !slices.Contains(got, "pending") {
		t.Fatalf("read_committed after the commit: %q", got)
	}
}

// TestTransactionAcrossLeaderCrash: a transaction whose partition's leader
// crashes mid-way (its records go on at the new leader, and the
// transaction coordinator may move too) is aborted, the next one
// committed; read_committed at the new leader reads exactly the committed
// records: the new leader learned the aborted transaction from its log.
func TestTransactionAcrossLeaderCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("crashes a broker and waits for the failover")
	}
	c := openRunning(t, 3)
	if _, err := c.CreateTopic("txcrash", 1, 3, map[string]string{"min.insync.replicas": "2"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds(c)...), kgo.TransactionalID("crash-tx"), kgo.DefaultProduceTopic("txcrash"),
		kgo.RecordDeliveryTimeout(60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	produce := func(v string) {
		t.Helper()
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", v, err)
		}
	}
	if err := prod.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produce("aborted-1")
	tp, _ := c.Controller().Topic("txcrash")
	old := tp.Partitions[0].Leader
	if err := c.Crash(old); err != nil {
		t.Fatal(err)
	}
	produce("aborted-2") // at the new leader, once the client finds it
	if err := prod.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatalf("abort: %v", err)
	}
	if err := prod.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produce("committed-1")
	produce("committed-2")
	if err := prod.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit: %v", err)
	}
	tp, _ = c.Controller().Topic("txcrash")
	if tp.Partitions[0].Leader == old {
		t.Fatalf("broker %d still leads", old)
	}
	got := readValues(t, c, "txcrash", kgo.ReadCommitted(), 2)
	slices.Sort(got)
	if want := []string{"committed-1", "committed-2"}; !slices.Equal(got, want) {
		t.Fatalf("read_committed after the crash read %q, want %q", got, want)
	}
	if all := readValues(t, c, "txcrash", kgo.ReadUncommitted(), 4); len(all) != 4 {
		t.Fatalf("read_uncommitted read %q, want 4 records", all)
	}
}

// TestTxnOffsetCommit: a transaction's offsets (AddOffsetsToTxn,
// TxnOffsetCommit) are invisible to OffsetFetch until it commits, and
// dropped when it aborts; an EndTxn from a fenced epoch is
// PRODUCER_FENCED.
func TestTxnOffsetCommit(t *testing.T) {
	c := openRunning(t, 3)
	adm := adminClient(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, "consumed"); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(c)...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.TransactionalID, ip.TransactionTimeoutMillis = kmsg.StringPtr("offsets-tx"), 60000
	ipr, err := ip.RequestWith(ctx, cl)
	if err != nil || ipr.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v %v", err, kerr.ErrorForCode(ipr.ErrorCode))
	}
	committedAt := func() int64 {
		offs, err := adm.FetchOffsets(ctx, "txn-group")
		if err != nil {
			t.Fatal(err)
		}
		o, ok := offs.Lookup("consumed", 0)
		if !ok {
			return -1
		}
		return o.At
	}
	for _, commit := range []bool{false, true} {
		ao := kmsg.NewPtrAddOffsetsToTxnRequest()
		ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = "offsets-tx", ipr.ProducerID, ipr.ProducerEpoch, "txn-group"
		if r, err := ao.RequestWith(ctx, cl); err != nil || r.ErrorCode != 0 {
			t.Fatalf("AddOffsetsToTxn: %v %+v", err, r)
		}
		toc := kmsg.NewPtrTxnOffsetCommitRequest()
		toc.TransactionalID, toc.Group, toc.ProducerID, toc.ProducerEpoch, toc.Generation = "offsets-tx", "txn-group", ipr.ProducerID, ipr.ProducerEpoch, -1
		tt := kmsg.NewTxnOffsetCommitRequestTopic()
		tt.Topic = "consumed"
		tp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		tp.Partition, tp.Offset, tp.LeaderEpoch = 0, 5, -1
		if commit {
			tp.Offset = 7
		}
		tt.Partitions = append(tt.Partitions, tp)
		toc.Topics = append(toc.Topics, tt)
		if r, err := toc.RequestWith(ctx, cl); err != nil || r.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("TxnOffsetCommit: %v %+v", err, r)
		}
		if got := committedAt(); got != -1 {
			t.Fatalf("an open transaction's offset is visible: %d", got)
		}
		et := kmsg.NewPtrEndTxnRequest()
		et.TransactionalID, et.ProducerID, et.ProducerEpoch, et.Commit = "offsets-tx", ipr.ProducerID, ipr.ProducerEpoch, commit
		if r, err := et.RequestWith(ctx, cl); err != nil || r.ErrorCode != 0 {
			t.Fatalf("EndTxn: %v %+v", err, r)
		}
	}
	if got := committedAt(); got != 7 {
		t.Fatalf("committed offset %d, want 7 (the committed transaction's, not the aborted one's 5)", got)
	}
	et := kmsg.NewPtrEndTxnRequest()
	et.TransactionalID, et.ProducerID, et.ProducerEpoch, et.Commit = "offsets-tx", ipr.ProducerID, ipr.ProducerEpoch-1, true
	if r, err := et.RequestWith(ctx, cl); err != nil || r.ErrorCode != kerr.ProducerFenced.Code {
		t.Fatalf("EndTxn from an older epoch: %v %v", err, kerr.ErrorForCode(r.ErrorCode))
	}
}

// TestLSOOnEveryProtocol: every replica of a topic that took transactional
// batches says its LSO (the lanes draw it), on each replication protocol:
// with one transaction committed and one left open, the LSO is the open
// one's first offset on the leader and the followers alike.
func TestLSOOnEveryProtocol(t *testing.T) {
	c := openRunning(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, protocol := range []string{"isr", "quorum", "pipeline"} {
		t.Run(protocol, func(t *testing.T) {
			topic := "lso-" + protocol
			if _, err := c.CreateTopic(topic, 1, 3, map[string]string{"replication.protocol": protocol}); err != nil {
				t.Fatal(err)
			}
			prod, err := kgo.NewClient(kgo.SeedBrokers(seeds(c)...), kgo.TransactionalID("lso-"+protocol), kgo.DefaultProduceTopic(topic))
			if err != nil {
				t.Fatal(err)
			}
			defer prod.Close()
			for i, v := range []string{"committed", "open"} {
				if err := prod.BeginTransaction(); err != nil {
					t.Fatal(err)
				}
				if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
					t.Fatalf("produce %s: %v", v, err)
				}
				if i == 0 {
					if err := prod.EndTransaction(ctx, kgo.TryCommit); err != nil {
						t.Fatal(err)
					}
				}
			}
			// committed at 0, its marker at 1, the open one at 2: LSO 2.
			for {
				var lsos []int64
				for _, tp := range c.Snapshot().Topics {
					if tp.Name != topic {
						continue
					}
					for _, r := range tp.Partitions[0].ReplicaLogs {
						if r.Txn != nil && r.HW >= 3 {
							lsos = append(lsos, r.Txn.LSO)
						}
					}
				}
				if len(lsos) == 3 && slices.Max(lsos) == 2 && slices.Min(lsos) == 2 {
					return
				}
				select {
				case <-ctx.Done():
					t.Fatalf("the replicas' LSOs %v, want 2 on all three", lsos)
				case <-time.After(20 * time.Millisecond):
				}
			}
		})
	}
}
