package storage

import (
	"fmt"
	"testing"
	"time"
)

// survivors appends n single-record batches, cuts the power, reopens the
// dir and returns how many records came back.
func survivors(t *testing.T, cfg Config, n int, between func(*testClock)) int64 {
	t.Helper()
	d, l, clock := openTestLog(t, cfg)
	for i := 0; i < n; i++ {
		if i > 0 && between != nil {
			between(clock)
		}
		produce(t, l, 0, i, 1, 1, 100)
	}
	if _, err := d.PowerLoss(); err != nil {
		t.Fatal(err)
	}
	_, l2 := reopen(t, d, clock, cfg)
	leo := l2.LogEndOffset()
	for i, r := range readAll(t, l2, leo) {
		if string(r.Key) != fmt.Sprint(i) || r.Offset != int64(i) {
			t.Fatalf("record %d after power loss is %q at offset %d", i, r.Key, r.Offset)
		}
	}
	return leo
}

// flush.messages is honoured by the append itself (Kafka's UnifiedLog.append
// flushes once unflushedMessages >= flush.messages), not only by the
// broker's timer: what an append acknowledged with flush.messages=1 survives
// a power cut right after it.
func TestFlushMessagesOnTheAppendPath(t *testing.T) {
	for _, tc := range []struct {
		flushMessages int64
		appends       int
		want          int64
	}{
		{1, 1, 1}, {1, 7, 7},
		{3, 1, 0}, {3, 2, 0}, {3, 3, 3}, {3, 4, 3}, {3, 5, 3}, {3, 6, 6}, {3, 7, 6},
	} {
		cfg := DefaultConfig()
		cfg.FlushMessages = tc.flushMessages
		if got := survivors(t, cfg, tc.appends, nil); got != tc.want {
			t.Errorf("flush.messages=%d, %d appends: %d records survive power loss, want %d", tc.flushMessages, tc.appends, got, tc.want)
		}
	}
	// The default leaves everything to the page cache, as Kafka does.
	if got := survivors(t, DefaultConfig(), 5, nil); got != 0 {
		t.Errorf("default config: %d records survive power loss, want 0", got)
	}
}

// A batch of several records counts each record toward flush.messages.
func TestFlushMessagesCountsRecords(t *testing.T) {
	cfg := DefaultConfig()
	cfg.FlushMessages = 3
	d, l, clock := openTestLog(t, cfg)
	produce(t, l, 0, 0, 1, 2, 100) // 2 unflushed
	if rp := l.RecoveryPoint(); rp != 0 {
		t.Fatalf("recovery point %d after 2 records, want 0", rp)
	}
	produce(t, l, 0, 2, 1, 2, 100) // 4 >= 3: flushed
	if rp := l.RecoveryPoint(); rp != 4 {
		t.Fatalf("recovery point %d after 4 records, want 4", rp)
	}
	if _, err := d.PowerLoss(); err != nil {
		t.Fatal(err)
	}
	if _, l2 := reopen(t, d, clock, cfg); l2.LogEndOffset() != 4 {
		t.Fatalf("LEO %d after power loss, want 4", l2.LogEndOffset())
	}
}

// flush.ms is checked on the append path too: an append flushes once the
// oldest unflushed append is flush.ms old. Below 1 ms it is Kafka's
// flush.ms=0 and every append flushes.
func TestFlushMsOnTheAppendPath(t *testing.T) {
	step := func(d time.Duration) func(*testClock) { return func(c *testClock) { c.Advance(d) } }
	for _, tc := range []struct {
		name    string
		flushMs time.Duration
		appends int
		between time.Duration
		want    int64
	}{
		{"flush.ms=0 (1ns) flushes every append", time.Nanosecond, 4, 0, 4},
		{"younger than flush.ms stays unflushed", 50 * time.Millisecond, 3, 20 * time.Millisecond, 0},
		// Appends at 0, 20, 40, 60 ms: the one at 60 ms finds the oldest
		// unflushed append 60 ms old and flushes all four.
		{"an append past flush.ms flushes", 50 * time.Millisecond, 4, 20 * time.Millisecond, 4},
		// ...and a fifth at 80 ms is young again.
		{"the clock restarts at the flush", 50 * time.Millisecond, 5, 20 * time.Millisecond, 4},
	} {
		cfg := DefaultConfig()
		cfg.FlushMs = tc.flushMs
		if got := survivors(t, cfg, tc.appends, step(tc.between)); got != tc.want {
			t.Errorf("%s: %d records survive power loss, want %d", tc.name, got, tc.want)
		}
	}
}

// FlushIfDue (the broker's timer) still flushes what became due by time
// without another append.
func TestFlushIfDueByTime(t *testing.T) {
	cfg := DefaultConfig()
	cfg.FlushMs = 50 * time.Millisecond
	_, l, clock := openTestLog(t, cfg)
	produce(t, l, 0, 0, 2, 1, 100)
	if flushed, err := l.FlushIfDue(); flushed || err != nil {
		t.Fatalf("FlushIfDue at 0 ms: %v %v, want no flush", flushed, err)
	}
	clock.Advance(50 * time.Millisecond)
	if flushed, err := l.FlushIfDue(); !flushed || err != nil || l.RecoveryPoint() != 2 {
		t.Fatalf("FlushIfDue at 50 ms: %v %v, recovery point %d, want a flush to 2", flushed, err, l.RecoveryPoint())
	}
}
