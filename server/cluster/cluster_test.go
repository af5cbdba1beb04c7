package cluster

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"testing"
	"time"

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

// TestProduceReplicateAndHW is the scenario
// lessons/scenarios/hw-one-fetch-behind.scenario.

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
