package cluster

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"tidemark/server/broker"
	"tidemark/server/wire"
	"tidemark/storage"
)

// openPaused starts a paused 3-broker cluster in a temp dir.
func openPaused(t *testing.T) *Cluster {
	t.Helper()
	c, err := Open(Options{DataDir: t.TempDir(), Brokers: 3, Paused: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func stepFetchAll(t *testing.T, c *Cluster, ids ...int32) {
	t.Helper()
	for _, id := range ids {
		if err := c.StepFetch(context.Background(), id); err != nil {
			t.Fatalf("fetch round of broker %d: %v", id, err)
		}
	}
}

func TestProduceReplicateAndHW(t *testing.T) {
	c := openPaused(t)
	tp, err := c.CreateTopic("demo", 1, 3, map[string]string{"min.insync.replicas": "2"})
	if err != nil {
		t.Fatal(err)
	}
	p := tp.Partitions[0]
	if p.Leader != 1 || len(p.ISR) != 3 {
		t.Fatalf("partition %+v", p)
	}
	res, err := c.Produce(context.Background(), "demo", 0, 1, []Record{{Value: []byte("m0")}, {Value: []byte("m1")}}, time.Second)
	if err != nil || res.BaseOffset != 0 || res.LastOffset != 1 {
		t.Fatalf("produce: %+v %v", res, err)
	}
	leader := c.Broker(1).Replica("demo", 0)
	if st := leader.Status(); st.LogEndOffset != 2 || st.HighWatermark != 0 {
		t.Fatalf("leader after append: LEO %d HW %d", st.LogEndOffset, st.HighWatermark)
	}
	stepFetchAll(t, c, 2, 3) // followers fetch m0, m1
	for _, id := range []int32{2, 3} {
		if st := c.Broker(id).Replica("demo", 0).Status(); st.LogEndOffset != 2 || st.HighWatermark != 0 {
			t.Fatalf("follower %d: LEO %d HW %d", id, st.LogEndOffset, st.HighWatermark)
		}
	}
	// The leader learns the followers' LEO at their next fetch, and the
	// followers learn the new HW one round later.
	stepFetchAll(t, c, 2, 3)
	if st := leader.Status(); st.HighWatermark != 2 {
		t.Fatalf("leader HW %d after followers reached 2", st.HighWatermark)
	}
	stepFetchAll(t, c, 2, 3)
	for _, id := range []int32{2, 3} {
		if st := c.Broker(id).Replica("demo", 0).Status(); st.HighWatermark != 2 {
			t.Fatalf("follower %d HW %d", id, st.HighWatermark)
		}
	}
	recs, hw, err := c.Consume("demo", 0, 0, 10)
	if err != nil || hw != 2 || len(recs) != 2 || string(recs[1].Value) != "m1" {
		t.Fatalf("consume: %v %d %v", recs, hw, err)
	}
	// acks=all waits for the HW.
	done := make(chan error, 1)
	go func() {
		_, err := c.Produce(context.Background(), "demo", 0, -1, []Record{{Value: []byte("m2")}}, 10*time.Second)
		done <- err
	}()
	waitLEO(t, leader, 3)
	select {
	case err := <-done:
		t.Fatalf("acks=all returned before replication: %v", err)
	default:
	}
	stepFetchAll(t, c, 2, 3)
	stepFetchAll(t, c, 2, 3)
	if err := <-done; err != nil {
		t.Fatalf("acks=all: %v", err)
	}
	snap := c.Snapshot()
	sp := snap.Partition("demo", 0)
	if sp == nil || sp.Replica(2) == nil || sp.Replica(2).LEO != 3 || sp.Replica(1).HW != 3 {
		t.Fatalf("snapshot partition %+v", sp)
	}
}

// waitLEO waits (bounded) until a replica's LEO reaches leo: a produce in
// another goroutine has appended.
func waitLEO(t *testing.T, r *broker.Replica, leo int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for r.Status().LogEndOffset < leo {
		if time.Now().After(deadline) {
			t.Fatalf("LEO stayed %d, want %d", r.Status().LogEndOffset, leo)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestSetCopyFileRegions: a broker switched to user-space copies serves
// fetched record data through read+write from its next restart on, and
// with sendfile before it.
func TestSetCopyFileRegions(t *testing.T) {
	c := openPaused(t)
	if err := c.SetCopyFileRegions(9, true); err == nil {
		t.Fatal("SetCopyFileRegions of an unknown broker: no error")
	}
	// Under ZooKeeper's rule the only replica leads again after its restart.
	if err := c.SetFencingRule("zookeeper"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic("z", 1, 1, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Produce(context.Background(), "z", 0, 1, []Record{{Value: []byte("m0")}}, time.Second); err != nil {
		t.Fatal(err)
	}
	fetch := func() wire.RegionStats {
		t.Helper()
		n, d, _, err := c.FetchRegions(context.Background(), 1, "z", 0)
		if err != nil || n == 0 {
			t.Fatalf("fetch: %d bytes, %v", n, err)
		}
		return d
	}
	if d := fetch(); runtime.GOOS == "linux" && (d.SendfileBytes == 0 || d.CopiedBytes != 0) {
		t.Fatalf("before the switch: %+v, want sendfile only", d)
	}
	if err := c.SetCopyFileRegions(1, true); err != nil {
		t.Fatal(err)
	}
	if err := c.Crash(1); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(1); err != nil {
		t.Fatal(err)
	}
	waitLeader(t, c, "z", 0)
	if d := fetch(); d.CopiedBytes == 0 || d.SendfileBytes != 0 || d.CopySyscalls < 2 {
		t.Fatalf("after the switch and a restart: %+v, want user-space copies only", d)
	}
}

// TestRefusedProduceHasNoOffsets: a produce refused before any append
// (a partition the broker does not host, a follower asked to lead) says
// so with offsets -1, as Kafka's response does, so that nobody reports
// records "appended but not acknowledged" that were never written.
func TestRefusedProduceHasNoOffsets(t *testing.T) {
	c := openPaused(t)
	tp, err := c.CreateTopic("demo", 1, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	follower := tp.Partitions[0].Replicas[1]
	if follower == tp.Partitions[0].Leader {
		follower = tp.Partitions[0].Replicas[0]
	}
	batch := storage.NewBatch([]storage.Record{{Value: []byte("v")}})
	for _, tc := range []struct {
		name   string
		broker int32
		topic  string
	}{{"unknown partition", tp.Partitions[0].Leader, "nope"}, {"not the leader", follower, "demo"}} {
		res := c.Broker(tc.broker).Produce(context.Background(), tc.topic, 0, 1, batch, time.Second)
		if res.Err == nil || res.BaseOffset != -1 || res.LastOffset != -1 {
			t.Errorf("%s: %+v, want an error and offsets -1", tc.name, res)
		}
	}
}
