package cluster

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// TestHistoryFollowsTheLab: a cluster with a history writes every event
// published after its first snapshot, up to those of its shutdown, and the
// state the history rebuilds at the end is the lab's own; a second Open
// starts a fresh history in the same directory.
func TestHistoryFollowsTheLab(t *testing.T) {
	dir := t.TempDir()
	open := func() *Cluster {
		c, err := Open(Options{DataDir: dir, Brokers: 3, Paused: true, HistoryBytes: 4 << 20,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := open()
	h := c.History()
	first, _ := h.Bounds()
	if first != 1 {
		t.Fatalf("the history starts at %d, not at the lab's first event", first)
	}
	// Before the first snapshot the states are what the brokers' start
	// events make; from it on, the lab's own (Rebase).
	if s, err := h.SnapshotAt(0); err != nil || len(s.Brokers) != 0 {
		t.Errorf("the state before the first event: %+v, %v", s, err)
	}
	if _, err := c.CreateTopic("demo", 1, 3, map[string]string{"min.insync.replicas": "2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Produce(context.Background(), "demo", 0, 1, []Record{{Value: []byte("m0")}, {Value: []byte("m1")}}, time.Second); err != nil {
		t.Fatal(err)
	}
	stepFetchAll(t, c, 2, 3)
	if err := c.Crash(3); err != nil {
		t.Fatal(err)
	}
	want := c.Snapshot()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	f, last := h.Bounds()
	if f != first || last < want.Seq || last != c.Bus().LastSeq() || len(h.Gaps()) > 0 {
		t.Fatalf("history %d..%d (gaps %v), lab's first %d, snapshot at %d, bus at %d", f, last, h.Gaps(), first, want.Seq, c.Bus().LastSeq())
	}
	got, err := h.SnapshotAt(want.Seq)
	if err != nil {
		t.Fatal(err)
	}
	got.Time, want.Time = time.Time{}, time.Time{}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the history's state at %d differs from the lab's:\n got %+v\nwant %+v", want.Seq, got, want)
	}
	if names, _ := filepath.Glob(filepath.Join(dir, "history", "*.events")); len(names) == 0 {
		t.Error("no segment in <data-dir>/history")
	}

	c = open() // a restarted lab: the bus numbers from 1 again
	defer c.Close()
	if _, last2 := c.History().Bounds(); last2 >= last || c.History().Size() > 64<<10 {
		t.Errorf("a restarted lab's history ends at %d with %d bytes: the old one was kept", last2, c.History().Size())
	}
}
