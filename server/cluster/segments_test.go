package cluster

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"
)

// TestSnapshotSegments: the lab's snapshot tells each replica's segments
// (their base offsets, as each log holds them) once a roll changed them,
// the leader's and, after their fetches, the followers', so the lanes draw
// the segments' boundaries (lesson 02).
func TestSnapshotSegments(t *testing.T) {
	c := openPaused(t)
	if _, err := c.CreateTopic("seg", 1, 3, map[string]string{"segment.bytes": "1024"}); err != nil {
		t.Fatal(err)
	}
	value := bytes.Repeat([]byte("x"), 300)
	for range 8 { // ~350 bytes a batch: a roll every three
		if _, err := c.Produce(context.Background(), "seg", 0, 1, []Record{{Value: value}}, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		stepFetchAll(t, c, 2, 3)
	}
	snap := c.Snapshot()
	p := snap.Partition("seg", 0)
	for _, r := range p.ReplicaLogs {
		want := c.Broker(r.Broker).Replica("seg", 0).Log().SegmentBases()
		if len(want) < 2 && r.Broker == p.Leader || !slices.Equal(r.Segments, want) {
			t.Errorf("broker %d: the snapshot says segments %v, its log %v", r.Broker, r.Segments, want)
		}
	}
}
