package cluster

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"tidemark/replication"
)

// consumeAll reads every partition of topic from the start up to its high
// watermark and returns the values with how often each was read.
func consumeAll(t *testing.T, c *Cluster, topic string, partitions int32) map[string]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	want := map[int32]int64{}
	offsets := map[int32]kgo.Offset{}
	for p := int32(0); p < partitions; p++ {
		tp, _ := c.Controller().Topic(topic)
		b := c.Broker(tp.Partitions[p].Leader)
		if b == nil {
			t.Fatalf("partition %d has no running leader", p)
		}
		want[p] = b.Replica(topic, p).Status().HighWatermark
		offsets[p] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(c)...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	seen := map[string]int{}
	next := map[int32]int64{}
	done := func() bool {
		for p, hw := range want {
			if next[p] < hw {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed up to %v, the high watermarks are %v", next, want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			seen[string(r.Value)]++
			next[r.Partition] = r.Offset + 1
		})
	}
	return seen
}

// TestIdempotentProduceSurvivesLeaderCrash crashes a partition leader while
// franz-go (idempotent, acks=all) writes 10,000 records: after the
// controller fails over, every acknowledged record is in the log exactly
// once, and no record is in it twice.
func TestIdempotentProduceSurvivesLeaderCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("crashes a broker and waits for the failover")
	}
	c := openRunning(t, 3)
	const topic, partitions, n = "crash", 3, 10000
	if _, err := c.CreateTopic(topic, partitions, 3, map[string]string{"min.insync.replicas": "2"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds(c)...), kgo.DefaultProduceTopic(topic),
		kgo.RecordDeliveryTimeout(60*time.Second), kgo.MaxBufferedRecords(2000))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()

	var mu sync.Mutex
	acked := map[string]bool{}
	var failed []error
	var ackedCount atomic.Int64
	var wg sync.WaitGroup
	crashed := make(chan int32, 1)
	for i := 0; i < n; i++ {
		if i == n/3 {
			// Crash the leader of partition 0 mid-stream.
			tp, _ := c.Controller().Topic(topic)
			leader := tp.Partitions[0].Leader
			if err := c.Crash(leader); err != nil {
				t.Fatal(err)
			}
			crashed <- leader
		}
		wg.Add(1)
		v := fmt.Sprintf("r%05d", i)
		prod.Produce(ctx, &kgo.Record{Key: []byte(v), Value: []byte(v)}, func(r *kgo.Record, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed = append(failed, err)
				return
			}
			acked[string(r.Value)] = true
			ackedCount.Add(1)
		})
	}
	// Every record is answered within its 60 s delivery timeout, unless one
	// is in flight to a broker that never answers: bound the wait and say
	// what the cluster and the client looked like (once seen to hang under
	// a full suite's load).
	answered := make(chan struct{})
	go func() { wg.Wait(); close(answered) }()
	select {
	case <-answered:
	case <-time.After(3 * time.Minute):
		tp, _ := c.Controller().Topic(topic)
		mu.Lock()
		answeredN := len(acked) + len(failed)
		mu.Unlock()
		t.Fatalf("%d of %d records unanswered after 3 minutes (%d buffered in the client); partitions: %+v",
			n-answeredN, n, prod.BufferedProduceRecords(), tp.Partitions)
	}
	leader := <-crashed
	if len(failed) > 0 {
		t.Logf("%d records not acknowledged (first: %v)", len(failed), failed[0])
	}
	if len(acked) < n/2 {
		t.Fatalf("only %d of %d records acknowledged", len(acked), n)
	}
	tp, _ := c.Controller().Topic(topic)
	if tp.Partitions[0].Leader == leader {
		t.Fatalf("partition 0 still led by crashed broker %d", leader)
	}
	seen := consumeAll(t, c, topic, partitions)
	for v, k := range seen {
		if k > 1 {
			t.Errorf("record %s is in the log %d times", v, k)
		}
	}
	lost := 0
	for v := range acked {
		if seen[v] == 0 {
			lost++
		}
	}
	if lost > 0 {
		t.Fatalf("%d acknowledged records are missing", lost)
	}
	t.Logf("%d acknowledged, %d in the log, broker %d crashed", len(acked), len(seen), leader)
}

// TestIdempotentRetries is the scenario
// lessons/scenarios/idempotent-retries.scenario.

// waitLeader waits (bounded) until a running broker leads the partition.
func waitLeader(t *testing.T, c *Cluster, topic string, p int32) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if tp, ok := c.Controller().Topic(topic); ok {
			if b := c.Broker(tp.Partitions[p].Leader); b != nil {
				if r := b.Replica(topic, p); r != nil && r.Status().Role == replication.RoleLeader {
					return
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s-%d has no running leader", topic, p)
}
