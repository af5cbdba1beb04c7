package fds

import (
	"os"
	"sync/atomic"
	"testing"
	"time"
)

// TestLevels: the levels follow the share of the limit open, and an
// unknown limit is Plenty.
func TestLevels(t *testing.T) {
	open := 0
	defer SetAccount(1000, func() int { return open })()
	for _, tc := range []struct {
		open int
		want Level
	}{{0, Plenty}, {599, Plenty}, {600, CloseIdle}, {849, CloseIdle}, {850, RefuseConns}, {900, RefuseTopics}, {1200, RefuseTopics}} {
		open = tc.open
		if got := Now(); got != tc.want {
			t.Errorf("%d of 1000 open: %v, want %v", tc.open, got, tc.want)
		}
	}
	restore := SetAccount(0, func() int { return 5 })
	if Now() != Plenty {
		t.Error("unknown limit: not Plenty")
	}
	restore()
}

// TestCountOpen: the process has stdin, stdout and stderr at least.
func TestCountOpen(t *testing.T) {
	if Limit() == 0 {
		t.Skip("no limit here")
	}
	if n, _ := InUse(); n < 3 {
		t.Fatalf("%d descriptors open", n)
	}
}

// TestCountOpenExact: the count follows descriptors opened and closed,
// and agrees with reading /proc/self/fd's names.
func TestCountOpenExact(t *testing.T) {
	if Limit() == 0 {
		t.Skip("no limit here")
	}
	names := func() int {
		f, err := os.Open("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		n, _ := f.Readdirnames(-1)
		return len(n) - 1
	}
	before := countOpen()
	if want := names(); before != want {
		t.Fatalf("countOpen %d, /proc/self/fd's names %d", before, want)
	}
	var files []*os.File
	for range 3000 { // several ReadDirent buffers' worth
		f, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	if got, want := countOpen(), names(); got != want || got < before+3000 {
		t.Fatalf("3,000 opened: countOpen %d, names %d, before %d", got, want, before)
	}
	for _, f := range files {
		f.Close()
	}
	if got := countOpen(); got != before {
		t.Fatalf("all closed again: %d, want %d", got, before)
	}
}

// TestInUseDoesNotWait: past the first reading, InUse answers from the
// last figure while a slow reading runs in the background.
func TestInUseDoesNotWait(t *testing.T) {
	release := make(chan struct{})
	var readings atomic.Int32
	a := &account{limit: 1000, refresh: time.Hour, inUse: func() int {
		if readings.Add(1) > 1 {
			<-release // the second reading is slow
		}
		return 42
	}}
	prev := current.Swap(a)
	defer current.Store(prev)
	defer close(release)
	if n, _ := InUse(); n != 42 {
		t.Fatalf("first reading %d", n)
	}
	a.mu.Lock()
	a.interval = 0 // the next reading is due
	a.mu.Unlock()
	done := make(chan int)
	go func() { n, _ := InUse(); done <- n }()
	select {
	case n := <-done:
		if n != 42 {
			t.Fatalf("%d", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("InUse waited for a slow reading")
	}
	for readings.Load() < 2 { // the slow reading did begin (bounded by the test's timeout)
		time.Sleep(time.Millisecond)
	}
}
