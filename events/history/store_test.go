package history

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"tidemark/events"
)

// testLab publishes on a Bus and keeps the state the events make, as a
// cluster does, with every state along the way for comparison.
type testLab struct {
	bus    *events.Bus
	mu     sync.Mutex
	snap   events.Snapshot
	states map[uint64]events.Snapshot
}

func newTestLab(ring int) *testLab {
	l := &testLab{bus: events.NewBus(events.BusOptions{History: ring}), states: map[uint64]events.Snapshot{}}
	l.snap = events.Snapshot{Brokers: []events.Broker{{ID: 1, State: events.BrokerUp}, {ID: 2, State: events.BrokerUp}}}
	l.states[0] = l.snap.Clone()
	return l
}

func (l *testLab) publish(evs ...events.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	last := l.bus.Publish(evs...)
	first := last.Seq - uint64(len(evs)) + 1
	for i, e := range evs {
		e.Seq = first + uint64(i)
		e.Time = last.Time
		l.snap.Apply(e)
		l.states[e.Seq] = l.snap.Clone()
	}
}

// publishBurst publishes the first n events of the workload in one
// Publish: a writer's queue shorter than n overflows for sure.
func (l *testLab) publishBurst(n int) {
	evs := make([]events.Event, n)
	for i := range evs {
		evs[i] = event(i)
	}
	l.publish(evs...)
}

func (l *testLab) snapshot() events.Snapshot {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.snap.Clone()
}

// event returns the i-th event of a varied workload: a topic, appends,
// HW moves, crashes and clock steps, so states differ along the way.
func event(i int) events.Event {
	if i == 0 {
		return events.Event{Kind: events.KindTopic, Broker: events.NoBroker, Topic: "demo", TopicCreated: &events.Topic{Name: "demo",
			Partitions: []events.Partition{{Leader: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, ReplicaLogs: []events.Replica{{Broker: 1}, {Broker: 2}}}}}}
	}
	off := int64(i)
	switch i % 5 {
	case 0:
		return events.Event{Kind: events.KindAppend, Broker: 1, Topic: "demo", Offsets: &events.Offsets{Base: off, Last: off, LEO: off + 1},
			Records: []events.Record{{Offset: off, Value: "v" + strconv.Itoa(i)}}}
	case 1:
		return events.Event{Kind: events.KindHW, Broker: 1, Topic: "demo", Offsets: &events.Offsets{HW: off}}
	case 2:
		return events.Event{Kind: events.KindFault, Broker: 2, Fault: &events.Fault{Kind: events.FaultCrash}}
	case 3:
		return events.Event{Kind: events.KindFault, Broker: 2, Fault: &events.Fault{Kind: events.FaultRestart}}
	}
	return events.Event{Kind: events.KindClock, Broker: events.NoBroker, Clock: &events.ClockChange{Action: events.ClockStep, StepMs: 10}}
}

func follow(t *testing.T, l *testLab, opts Options) *Store {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = filepath.Join(t.TempDir(), "history")
	}
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	sub := l.bus.SubscribeQueue(s.QueueLen())
	if err := s.Follow(l.bus, sub, l.snapshot(), l.snapshot); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// sameState compares two states but for Time (a checkpoint's is the last
// event's, as the lab's is).
func sameState(t *testing.T, what string, got, want events.Snapshot) {
	t.Helper()
	got.Time, want.Time = time.Time{}, time.Time{}
	if !reflect.DeepEqual(got.Clone(), want.Clone()) {
		t.Fatalf("%s: state differs:\n got %+v\nwant %+v", what, got, want)
	}
}

// TestAppendAndPage: every published event is written; a page is the
// newest events before a Seq, oldest first, and its Base is the state
// before its first; the state after any kept event is rebuilt.
func TestAppendAndPage(t *testing.T) {
	l := newTestLab(0)
	s := follow(t, l, Options{CheckpointEvery: 100})
	for i := range 3000 {
		l.publish(event(i))
	}
	s.Close()
	first, last := s.Bounds()
	if first != 1 || last != 3000 {
		t.Fatalf("Bounds = %d, %d; want 1, 3000", first, last)
	}
	p, err := s.Page(0, 100, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Events) != 100 || p.Events[0].Seq != 2901 || p.Events[99].Seq != 3000 {
		t.Fatalf("newest page: %d events from %d", len(p.Events), p.Events[0].Seq)
	}
	sameState(t, "page base", p.Base, l.states[2900])
	p, err = s.Page(51, 100, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Events) != 50 || p.Events[0].Seq != 1 || p.Base.Seq != 0 {
		t.Fatalf("first page: %d events from %d, base %d", len(p.Events), p.Events[0].Seq, p.Base.Seq)
	}
	sameState(t, "first page base", p.Base, l.states[0])
	for _, seq := range []uint64{0, 1, 99, 100, 101, 1234, 2999, 3000} {
		got, err := s.SnapshotAt(seq)
		if err != nil {
			t.Fatalf("SnapshotAt(%d): %v", seq, err)
		}
		sameState(t, "SnapshotAt("+strconv.Itoa(int(seq))+")", got, l.states[seq])
	}
	if _, err := s.SnapshotAt(3001); !errors.Is(err, ErrNotKept) {
		t.Errorf("SnapshotAt past the end: %v, want ErrNotKept", err)
	}
	// A byte bound keeps the newest events and at least one.
	p, _ = s.Page(0, 100, 1)
	if len(p.Events) != 1 || p.Events[0].Seq != 3000 {
		t.Errorf("page of 1 byte: %d events", len(p.Events))
	}
}

// TestDropOldestAtBound: past MaxBytes whole oldest segments go; what is
// left still rebuilds from its first kept event on.
func TestDropOldestAtBound(t *testing.T) {
	l := newTestLab(0)
	dir := filepath.Join(t.TempDir(), "history")
	s := follow(t, l, Options{Dir: dir, MaxBytes: 256 << 10, SegmentBytes: 64 << 10, CheckpointEvery: 50})
	for i := range 10000 {
		l.publish(event(i))
	}
	s.Close()
	first, last := s.Bounds()
	if first <= 1 || last != 10000 {
		t.Fatalf("Bounds = %d, %d: nothing dropped", first, last)
	}
	if size := s.Size(); size > 256<<10 {
		t.Errorf("Size %d past MaxBytes", size)
	}
	var onDisk int64
	names, _ := segmentNames(dir)
	for _, n := range names {
		st, err := os.Stat(s.segPath(n))
		if err != nil {
			t.Fatal(err)
		}
		onDisk += st.Size()
	}
	if names[0] != first || onDisk != s.Size() {
		t.Errorf("on disk: first segment %d, %d bytes; store says %d, %d", names[0], onDisk, first, s.Size())
	}
	got, err := s.SnapshotAt(first - 1)
	if err != nil {
		t.Fatal(err)
	}
	sameState(t, "oldest state", got, l.states[first-1])
	if _, err := s.SnapshotAt(first - 2); !errors.Is(err, ErrNotKept) {
		t.Errorf("SnapshotAt before the first: %v, want ErrNotKept", err)
	}
	p, err := s.Page(first+10, 100, 1<<20)
	if err != nil || len(p.Events) != 10 || p.Events[0].Seq != first {
		t.Fatalf("oldest page: %v, %d events", err, len(p.Events))
	}
}

// TestTornTailCutOnOpen: a crash mid-write leaves half a record; Open cuts
// it and the history ends at the last whole event.
func TestTornTailCutOnOpen(t *testing.T) {
	l := newTestLab(0)
	dir := filepath.Join(t.TempDir(), "history")
	s := follow(t, l, Options{Dir: dir})
	for i := range 500 {
		l.publish(event(i))
	}
	s.Close()
	names, _ := segmentNames(dir)
	path := s.segPath(names[len(names)-1])
	st, _ := os.Stat(path)
	// Cut the last record in half, and add bytes a torn write may leave.
	if err := os.Truncate(path, st.Size()-20); err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.Write([]byte{0, 0, 0, 40, 1, 2})
	f.Close()
	r, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	first, last := r.Bounds()
	if first != 1 || last != 499 {
		t.Fatalf("after the torn tail: Bounds = %d, %d; want 1, 499", first, last)
	}
	st2, _ := os.Stat(path)
	if st2.Size() >= st.Size()-20 || st2.Size() != r.Size() {
		t.Errorf("file %d bytes after Open, store %d: the torn record was not cut", st2.Size(), r.Size())
	}
	got, err := r.SnapshotAt(499)
	if err != nil {
		t.Fatal(err)
	}
	sameState(t, "last whole state", got, l.states[499])
	// A corrupt byte inside a record ends the segment there too.
	data, _ := os.ReadFile(path)
	data[len(data)/2] ^= 0xff
	os.WriteFile(path, data, 0o644)
	r, err = Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, last2 := r.Bounds(); last2 >= 499 {
		t.Errorf("a corrupt record was kept: last %d", last2)
	}
}

// TestPathsStayInDir: the store writes only segment files in its Dir and
// leaves other files there alone; Follow starts a fresh history.
func TestPathsStayInDir(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "data", "history")
	os.MkdirAll(dir, 0o755)
	strays := []string{"notes.txt", "12.events", "00000000000000000001.events.tmp", "0000000000000000000x.events"}
	for _, n := range strays {
		os.WriteFile(filepath.Join(dir, n), []byte("keep"), 0o644)
	}
	os.WriteFile(filepath.Join(dir, "00000000000000000007.events"), []byte("an old lab's"), 0o644)
	l := newTestLab(0)
	s := follow(t, l, Options{Dir: dir, MaxBytes: 256 << 10, SegmentBytes: 64 << 10})
	for i := range 3000 {
		l.publish(event(i))
	}
	s.Close()
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if fi.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		if strings.Contains(rel, string(filepath.Separator)) || strings.HasPrefix(rel, "..") {
			t.Errorf("file outside the history's dir: %s", p)
		}
		return nil
	})
	for _, n := range strays {
		if b, err := os.ReadFile(filepath.Join(dir, n)); err != nil || string(b) != "keep" {
			t.Errorf("stray file %s touched: %v", n, err)
		}
	}
	if first, _ := s.Bounds(); first == 7 {
		t.Error("the old lab's segment was kept")
	}
}

// TestLagReadsBackFromRing: a writer whose queue overflows fills the hole
// from the Bus's ring and loses nothing.
func TestLagReadsBackFromRing(t *testing.T) {
	l := newTestLab(4096)
	s := follow(t, l, Options{QueueLen: 4})
	l.publishBurst(1000)
	s.Close()
	if _, last := s.Bounds(); last != 1000 || len(s.Gaps()) != 0 {
		t.Fatalf("last %d, gaps %v", last, s.Gaps())
	}
	p, err := s.Page(0, 1000, 1<<20)
	if err != nil || len(p.Events) != 1000 {
		t.Fatalf("%v, %d events", err, len(p.Events))
	}
}

// TestLagBeyondRingRecordsGap: when the ring has forgotten the events too,
// the history says which it lost and goes on from a fresh snapshot.
func TestLagBeyondRingRecordsGap(t *testing.T) {
	l := newTestLab(8)
	s := follow(t, l, Options{QueueLen: 4})
	l.publishBurst(100)
	l.publish(event(100), event(101))
	s.Close()
	gaps := s.Gaps()
	// The writer may drain a few events while the Publish is under way
	// (the queue's lock is not the Bus's), so the gap starts at 1 or soon
	// after, and ends where the fresh snapshot was taken.
	if len(gaps) != 1 || gaps[0].From > 5 || gaps[0].To < 92 {
		t.Fatalf("gaps %v, want one from the first events to past the ring", gaps)
	}
	if _, err := s.SnapshotAt(gaps[0].From); !errors.Is(err, ErrNotKept) && gaps[0].To > gaps[0].From {
		t.Errorf("a state inside the gap: %v", err)
	}
	got, err := s.SnapshotAt(102)
	if err != nil {
		t.Fatal(err)
	}
	sameState(t, "after the gap", got, l.states[102])
	p, err := s.Page(0, 1000, 1<<20)
	if err != nil || len(p.Events) != int(102-gaps[0].To) || p.Base.Seq != gaps[0].To {
		t.Fatalf("page after a gap %v: %v, base %d, %d events", gaps[0], err, p.Base.Seq, len(p.Events))
	}
}

// TestOptions: the defaults, and contradictions refused.
func TestOptions(t *testing.T) {
	o := Options{Dir: "x"}
	if err := o.validate(); err != nil || o.MaxBytes != DefaultMaxBytes || o.SegmentBytes != DefaultMaxBytes/32 || o.CheckpointEvery != 1000 {
		t.Fatalf("defaults %+v, %v", o, err)
	}
	o = Options{Dir: "x", MaxBytes: 100 << 10}
	if err := o.validate(); err != nil || o.SegmentBytes != 50<<10 {
		t.Fatalf("a small bound: segments of %d, %v", o.SegmentBytes, err)
	}
	for _, bad := range []Options{{}, {Dir: "x", MaxBytes: -1}, {Dir: "x", MaxBytes: 1 << 20, SegmentBytes: 1 << 20}, {Dir: "x", MaxBytes: 8}} {
		if err := bad.validate(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// TestRebase: a state the lab took from elsewhere than its events (a
// cluster's first snapshot) is written once the events before it are, and
// the states after it build on it; the states before stay the events'.
func TestRebase(t *testing.T) {
	l := newTestLab(0)
	s := follow(t, l, Options{})
	for i := range 3 {
		l.publish(event(i))
	}
	// The lab reads its brokers: its state at 3 is not what the events made.
	l.mu.Lock()
	l.snap.Brokers = append(l.snap.Brokers, events.Broker{ID: 9, State: events.BrokerFenced})
	l.states[3] = l.snap.Clone()
	s.Rebase(l.snap)
	l.mu.Unlock()
	for deadline := time.Now().Add(10 * time.Second); ; { // the writer is woken: no event needed
		if got, err := s.SnapshotAt(3); err == nil && got.Broker(9) != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the rebase was not written while no event followed")
		}
		time.Sleep(time.Millisecond)
	}
	l.publish(event(3), event(4))
	s.Close()
	for seq := uint64(0); seq <= 5; seq++ {
		got, err := s.SnapshotAt(seq)
		if err != nil {
			t.Fatal(err)
		}
		sameState(t, "state at "+strconv.Itoa(int(seq)), got, l.states[seq])
	}
	p, err := s.Page(0, 10, 1<<20)
	if err != nil || len(p.Events) != 5 || p.Events[0].Seq != 1 {
		t.Fatalf("page across the rebase: %v, %d events", err, len(p.Events))
	}
}
