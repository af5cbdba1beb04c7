package labs

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/server/cluster"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newLabs(t *testing.T, max int, clock *fakeClock) *Labs {
	t.Helper()
	ls, err := New(Options{Root: filepath.Join(t.TempDir(), "lessons"), MaxClusters: max, IdleTimeout: 15 * time.Minute,
		SweepInterval: -1, Now: clock.Now, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ls.Close() })
	return ls
}

// TestBound: at most MaxClusters lesson clusters run; the next Open is
// THROTTLING_QUOTA_EXCEEDED, a pinned cluster does not count, and closing
// one frees its slot and removes its directory.
func TestBound(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1000, 0)}
	ls := newLabs(t, 2, clock)
	main := pinMain(t, ls)
	var closed []string
	var mu sync.Mutex
	open := func() (*Lab, error) {
		var l *Lab
		l, err := ls.Open("", cluster.Options{Brokers: 1}, func() { mu.Lock(); closed = append(closed, l.ID); mu.Unlock() })
		return l, err
	}
	a, err := open()
	if err != nil {
		t.Fatal(err)
	}
	b, err := open()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(a.Dir, "broker-1")); err != nil {
		t.Fatalf("lab dir: %v", err)
	}
	if _, err := open(); !errors.Is(err, ErrFull) || !errors.Is(err, kerr.ThrottlingQuotaExceeded) {
		t.Fatalf("third Open: %v, want THROTTLING_QUOTA_EXCEEDED", err)
	} else if msg := err.Error(); strings.Contains(msg, "lesson clusters are running") ||
		!strings.Contains(msg, "all 2 run lessons, chaos runs, comparisons or class seats") {
		// Chaos runs and comparisons take slots too: the text must not
		// say every slot holds a lesson.
		t.Fatalf("third Open: %q, want it to say all 2 private clusters are in use, by what", msg)
	}
	if err := ls.Remove(a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(a.Dir); !os.IsNotExist(err) {
		t.Fatalf("closed lab's directory still there: %v", err)
	}
	if _, ok := ls.Get(a.ID); ok || !a.Closed() {
		t.Fatal("closed lab still found")
	}
	c, err := open()
	if err != nil {
		t.Fatalf("Open after a Close: %v", err)
	}
	if got := ls.List(); !slices.Equal(got, sorted(b.ID, c.ID, "main")) {
		t.Fatalf("List %v", got)
	}
	mu.Lock()
	if !slices.Equal(closed, []string{a.ID}) {
		t.Fatalf("onClose ran for %v", closed)
	}
	mu.Unlock()
	if _, err := ls.Pin("main", main); err == nil {
		t.Fatal("pinned twice")
	}
}

// TestIdleSweep: a lab untouched for IdleTimeout is closed with its
// cluster and directory; a Get postpones it; the pinned one stays.
func TestIdleSweep(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1000, 0)}
	ls := newLabs(t, 4, clock)
	main := pinMain(t, ls)
	a, err := ls.Open("", cluster.Options{Brokers: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ls.Open("", cluster.Options{Brokers: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	a.Release()
	b.Release()
	clock.Add(10 * time.Minute)
	if _, ok := ls.Get(b.ID); !ok {
		t.Fatal("b missing")
	}
	if got := ls.Sweep(); len(got) != 0 {
		t.Fatalf("swept %v after 10 minutes", got)
	}
	clock.Add(5 * time.Minute)
	if got := ls.Sweep(); !slices.Equal(got, []string{a.ID}) {
		t.Fatalf("swept %v, want only %s (b was used 5 minutes ago)", got, a.ID)
	}
	if _, err := os.Stat(a.Dir); !os.IsNotExist(err) {
		t.Fatalf("swept lab's directory still there: %v", err)
	}
	if !a.Closed() || b.Closed() {
		t.Fatal("wrong lab closed")
	}
	clock.Add(time.Hour)
	if got := ls.Sweep(); !slices.Equal(got, []string{b.ID}) {
		t.Fatalf("swept %v, want %s", got, b.ID)
	}
	if got := ls.List(); !slices.Equal(got, []string{"main"}) {
		t.Fatalf("left %v", got)
	}
	if main.Broker(1) == nil {
		t.Fatal("the pinned cluster was stopped")
	}
	if err := ls.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := ls.Open("", cluster.Options{Brokers: 1}, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Open after Close: %v", err)
	}
}

// TestNewClearsDebris: a directory left by a killed process is removed.
func TestNewClearsDebris(t *testing.T) {
	root := filepath.Join(t.TempDir(), "lessons")
	os.MkdirAll(filepath.Join(root, "old", "broker-1"), 0o755)
	ls, err := New(Options{Root: root, SweepInterval: -1, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	if _, err := os.Stat(filepath.Join(root, "old")); !os.IsNotExist(err) {
		t.Fatalf("debris kept: %v", err)
	}
	if _, err := New(Options{}); err == nil {
		t.Fatal("New without Root succeeded")
	}
}

// pinMain pins a one-broker cluster as "main", closed when the test ends.
func pinMain(t *testing.T, ls *Labs) *cluster.Cluster {
	t.Helper()
	main, err := cluster.Open(cluster.Options{DataDir: t.TempDir(), Brokers: 1, Paused: true, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { main.Close() })
	if _, err := ls.Pin("main", main); err != nil {
		t.Fatal(err)
	}
	return main
}

func sorted(s ...string) []string { slices.Sort(s); return s }

// TestOpenDirKeepsState: a kept lab's directory outlives its cluster, so
// closing it hibernates and the next OpenDir wakes it with its topics; it
// counts against MaxClusters and its id cannot be opened twice.
func TestOpenDirKeepsState(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1000, 0)}
	ls := newLabs(t, 1, clock)
	dir := filepath.Join(t.TempDir(), "seat-1")
	opts := cluster.Options{Brokers: 1, Paused: true, Logger: quiet()}
	l, err := ls.OpenDir("seat-1", dir, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ls.OpenDir("seat-1", dir, opts, nil); err == nil {
		t.Fatal("opening seat-1 twice: no error")
	}
	if _, err := ls.Open("", opts, nil); !errors.Is(err, ErrFull) {
		t.Fatalf("a second cluster with MaxClusters 1: %v, want ErrFull", err)
	}
	if _, err := l.Cluster().CreateTopic("kept", 1, 1, nil); err != nil {
		t.Fatal(err)
	}
	if err := ls.Remove("seat-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the kept directory is gone after Remove: %v", err)
	}
	l, err = ls.OpenDir("seat-1", dir, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := l.Cluster().Controller().Topic("kept"); !ok {
		t.Fatal("topic kept is missing after waking the lab")
	}
}

// TestWatch: Options.Watch sees each opened lab's cluster under its id once
// it runs, and its unwatch runs once when the lab is removed (and not for a
// pinned cluster, whose owner reports it).
func TestWatch(t *testing.T) {
	type call struct {
		id      string
		c       *cluster.Cluster
		removed int
	}
	var (
		mu    sync.Mutex
		calls []*call
	)
	ls, err := New(Options{Root: filepath.Join(t.TempDir(), "lessons"), MaxClusters: 2, SweepInterval: -1, Logger: quiet(),
		Watch: func(id string, c *cluster.Cluster) func() {
			cl := &call{id: id, c: c}
			mu.Lock()
			calls = append(calls, cl)
			mu.Unlock()
			return func() { mu.Lock(); cl.removed++; mu.Unlock() }
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	pinMain(t, ls)
	lab, err := ls.Open("", cluster.Options{Brokers: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(calls) != 1 || calls[0].id != lab.ID || calls[0].c != lab.Cluster() || calls[0].removed != 0 {
		t.Fatalf("after Open: watch calls %+v, want one for %s", calls, lab.ID)
	}
	mu.Unlock()
	if err := ls.Remove(lab.ID); err != nil {
		t.Fatal(err)
	}
	if err := ls.Remove(lab.ID); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 1 || calls[0].removed != 1 {
		t.Fatalf("after Remove: %d watch calls, unwatched %d times; want 1 and 1", len(calls), calls[0].removed)
	}
}

// openAs opens a one-broker lab for owner and releases it (set up), or
// returns Open's error.
func openAs(t *testing.T, ls *Labs, owner string) (*Lab, error) {
	t.Helper()
	l, err := ls.Open(owner, cluster.Options{Brokers: 1}, nil)
	if err == nil {
		l.Release()
	}
	return l, err
}

// full asserts that err is Open's refusal with own and idleIn.
func full(t *testing.T, err error, own int, idleIn time.Duration) {
	t.Helper()
	var fe *FullError
	if !errors.As(err, &fe) || !errors.Is(err, ErrFull) || !errors.Is(err, kerr.ThrottlingQuotaExceeded) {
		t.Fatalf("Open: %v, want a *FullError (THROTTLING_QUOTA_EXCEEDED)", err)
	}
	if fe.Own != own || fe.IdleIn != idleIn {
		t.Fatalf("refusal %+v, want Own %d IdleIn %v", *fe, own, idleIn)
	}
}

// TestOpenEndsOwnIdle: a full lab makes room for an owner by ending their
// own lab used longest ago that no page holds; their held ones stay, and
// with nothing else to end the refusal counts them.
func TestOpenEndsOwnIdle(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1000, 0)}
	ls := newLabs(t, 2, clock)
	a1, err := openAs(t, ls, "alice")
	if err != nil {
		t.Fatal(err)
	}
	clock.Add(time.Second)
	a2, err := openAs(t, ls, "alice")
	if err != nil {
		t.Fatal(err)
	}
	clock.Add(time.Second)
	a3, err := openAs(t, ls, "alice") // no clock moved past IdleAfter: her own go at once
	if err != nil {
		t.Fatal(err)
	}
	if !a1.Closed() || a2.Closed() {
		t.Fatalf("closed a1 %v a2 %v, want only a1 (used longest ago)", a1.Closed(), a2.Closed())
	}
	if _, err := os.Stat(a1.Dir); !os.IsNotExist(err) {
		t.Fatalf("the ended lab's directory is still there: %v", err)
	}
	a2.Hold()
	a3.Hold()
	_, err = openAs(t, ls, "alice")
	full(t, err, 2, 0)
	if a2.Closed() || a3.Closed() {
		t.Fatal("a held lab was ended")
	}
}

// TestOpenRefusesOthersActive: another owner's labs are ended only once
// idle (no page holds them, untouched for IdleAfter); before, the refusal
// says how long until the first is.
func TestOpenRefusesOthersActive(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1000, 0)}
	ls := newLabs(t, 2, clock)
	a1, err := openAs(t, ls, "alice")
	if err != nil {
		t.Fatal(err)
	}
	a2, err := ls.Open("alice", cluster.Options{Brokers: 1}, nil) // still held: being set up
	if err != nil {
		t.Fatal(err)
	}
	clock.Add(30 * time.Second)
	_, err = openAs(t, ls, "bob")
	full(t, err, 0, 90*time.Second)
	if msg := err.Error(); !strings.Contains(msg, "idle in 1m30s") {
		t.Fatalf("refusal %q does not say when", msg)
	}
	if key, args := err.(*FullError).MessageKey(); key != "limits.clusters-full.wait" || !slices.Equal(args, []string{"2", "90"}) {
		t.Fatalf("refusal's text %s %v", key, args)
	}
	clock.Add(time.Minute)
	if _, ok := ls.Get(a1.ID); !ok { // a request: a1 is used again
		t.Fatal("a1 missing")
	}
	_, err = openAs(t, ls, "bob")
	full(t, err, 0, 2*time.Minute)
	clock.Add(2 * time.Minute)
	b1, err := openAs(t, ls, "bob")
	if err != nil {
		t.Fatalf("a1 idle for IdleAfter: %v", err)
	}
	if !a1.Closed() || a2.Closed() {
		t.Fatalf("closed a1 %v a2 %v, want a1 (idle), not a2 (held)", a1.Closed(), a2.Closed())
	}
	_, err = openAs(t, ls, "carol")
	full(t, err, 0, 2*time.Minute) // bob's, from now; alice's is held
	if key, _ := err.(*FullError).MessageKey(); key != "limits.clusters-full.wait" {
		t.Fatalf("key %s", key)
	}
	b1.Hold()
	_, err = openAs(t, ls, "carol")
	full(t, err, 0, 0)
	if key, _ := err.(*FullError).MessageKey(); key != "limits.clusters-full.busy" {
		t.Fatalf("every lab held: key %s", key)
	}
}

// TestOpenPrefersFinished: an owner's finished labs end at their next
// Open even with a slot free; among other owners' idle labs the finished
// one goes first, however recently it was used.
func TestOpenPrefersFinished(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1000, 0)}
	ls := newLabs(t, 3, clock)
	a1, err := openAs(t, ls, "alice")
	if err != nil {
		t.Fatal(err)
	}
	a1.Finish()
	a1.Hold() // still on its page: finished is finished
	a2, err := openAs(t, ls, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if !a1.Closed() || a2.Closed() {
		t.Fatalf("closed a1 %v a2 %v, want a1 (finished) although a slot was free", a1.Closed(), a2.Closed())
	}
	clock.Add(time.Second)
	b1, err := openAs(t, ls, "bob")
	if err != nil {
		t.Fatal(err)
	}
	clock.Add(time.Minute)
	c1, err := openAs(t, ls, "carol")
	if err != nil {
		t.Fatal(err)
	}
	c1.Finish()
	clock.Add(2 * time.Minute) // all three idle; carol's used last, but finished
	if _, err := openAs(t, ls, "dave"); err != nil {
		t.Fatal(err)
	}
	if !c1.Closed() || a2.Closed() || b1.Closed() {
		t.Fatalf("closed c1 %v a2 %v b1 %v, want only c1 (finished)", c1.Closed(), a2.Closed(), b1.Closed())
	}
	clock.Add(2 * time.Minute)
	if _, err := openAs(t, ls, "erin"); err != nil {
		t.Fatal(err)
	}
	if !a2.Closed() || b1.Closed() {
		t.Fatalf("closed a2 %v b1 %v, want a2 (idle longest, opened first)", a2.Closed(), b1.Closed())
	}
}

// TestOpenNeverEndsPinnedOrKept: a pinned lab does not count and a kept
// one (a class seat's) is never ended, however long idle, nor does its
// owner's Open end it.
func TestOpenNeverEndsPinnedOrKept(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1000, 0)}
	ls := newLabs(t, 1, clock)
	main := pinMain(t, ls)
	seat, err := ls.OpenDir("seat-1", filepath.Join(t.TempDir(), "seat-1"), cluster.Options{Brokers: 1, Paused: true, Logger: quiet()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	clock.Add(time.Hour)
	_, err = openAs(t, ls, "alice")
	full(t, err, 0, 0)
	_, err = openAs(t, ls, "")
	full(t, err, 0, 0)
	if seat.Closed() || main.Broker(1) == nil {
		t.Fatal("a kept or pinned lab was ended")
	}
}

// TestOpenNobodysIdle: labs opened for owner "" (nobody's) are never their
// opener's own, yet end like another owner's once idle, for anyone.
func TestOpenNobodysIdle(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1000, 0)}
	ls := newLabs(t, 1, clock)
	a, err := openAs(t, ls, "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = openAs(t, ls, "")
	full(t, err, 0, 2*time.Minute)
	clock.Add(2 * time.Minute)
	if _, err := openAs(t, ls, ""); err != nil || !a.Closed() {
		t.Fatalf("after two idle minutes: %v, first closed %v", err, a.Closed())
	}
}
