package lessons

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"tidemark/server/broker"
	"tidemark/server/cluster"
)

// TestWatcherCompactedTombstones plays on the lab cluster what the
// scenario language cannot write (a null value): on a compacted topic a
// tombstone supersedes its key's value, and the cleaner removes the
// tombstone once it is older than delete.retention.ms. Neither the watcher
// nor the durability checker calls the value or the tombstone lost, or a
// record a consumer saw gone; a key's latest value that the cleaner had
// no right to remove still is (scenarios/compaction-latest-wins tells the
// superseded values).
func TestWatcherCompactedTombstones(t *testing.T) {
	c, err := cluster.Open(cluster.Options{DataDir: t.TempDir(), Brokers: 2, Paused: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Broker: broker.Config{HighWatermarkCheckpointInterval: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := newEnv(ctx, c, func() time.Duration { return 0 })
	e.watch = newWatcher()
	t.Cleanup(func() { cancel(); c.Close(); e.wg.Wait() })
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	check := func() {
		t.Helper()
		must(e.watch.check(e))
	}
	must(e.CreateTopic("t", 1, 2, map[string]string{"cleanup.policy": "compact", "segment.ms": "1000",
		"min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "1000"}))
	// put writes one record (value nil: a tombstone) with acks=1, as
	// produce-key does, and waits until both replicas have it below the HW.
	put := func(name, key string, value []byte) {
		t.Helper()
		sent := e.c.Clock().Now().UnixMilli()
		res, err := e.c.Produce(e.ctx, "t", 0, 1, []cluster.Record{{Key: []byte(key), Value: value}}, 30*time.Second)
		must(err)
		e.setResult("t", name, &result{answered: true, offset: res.BaseOffset, key: key, tombstone: value == nil, sentMs: sent})
		must(e.Settle())
		check()
		must(e.Step(time.Second))
		check()
	}
	put("v1", "k1", []byte("v1"))
	if got, err := e.Consume("t"); err != nil || !slices.Equal(got, []string{"v1"}) {
		t.Fatalf("consumed %v %v", got, err) // a consumer saw v1
	}
	check()
	put("gone", "k1", nil) // the tombstone
	put("w1", "k2", []byte("w1"))
	put("x1", "k3", []byte("x1")) // the first pass removed v1
	put("y1", "k4", []byte("y1")) // the second, the tombstone
	must(e.Step(2 * time.Second))
	check()
	got := []string{}
	for _, x := range e.Records(1, "t") {
		got = append(got, x.Value)
	}
	if !slices.Equal(got, []string{"w1", "x1", "y1"}) || !slices.Equal(e.Values(2, "t"), got) {
		t.Fatalf("b1 holds %v, b2 %v: want the cleaner to have removed v1 and its tombstone", got, e.Values(2, "t"))
	}
	if v := e.watch.violations("t"); len(v) > 0 {
		t.Fatalf("watcher: %v", v)
	}
	if f := e.durableOf("t").findings(); len(f) > 0 {
		t.Fatalf("durability checker: %v", f)
	}
	// Were an acknowledged z1 of key k9 at offset 0 (where v1 was) gone,
	// with no later record of k9 to supersede it, it would be lost.
	e.setResult("t", "z1", &result{answered: true, offset: 0, key: "k9", sentMs: e.c.Clock().Now().UnixMilli()})
	check()
	if v := e.watch.violations("t"); !slices.Equal(v, []string{"lost z1"}) {
		t.Fatalf("watcher: %v, want [lost z1]", v)
	}
	if f := e.durableOf("t").findings(); !slices.Equal(f, []string{"lost z1"}) {
		t.Fatalf("durability checker: %v, want [lost z1]", f)
	}
}
