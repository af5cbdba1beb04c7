package storage

import (
	"fmt"
	"testing"
	"time"
)

// compactConfig is smallConfig compacted, with tiny segments so a few
// hundred records make many.
func compactConfig() Config {
	c := smallConfig()
	c.SegmentBytes = MinSegmentBytes
	c.Cleanup = CleanupCompact
	c.DeleteRetention = time.Hour
	return c
}

// produceKeyed appends n batches of 4 records from offset first; record i
// has key k<keyOf(i)> and value v<i> (nil, a tombstone, when tomb says
// so), stamped now. keys records each offset's key.
func produceKeyed(t testing.TB, l *Log, clock *testClock, first, n int, keys map[int64]string, keyOf func(i int) int, tomb func(i int) bool) {
	t.Helper()
	for b := range n {
		recs := make([]Record, 4)
		for r := range recs {
			i := first + b*4 + r
			k := fmt.Sprintf("k%d", keyOf(i))
			keys[int64(i)] = k
			recs[r] = Record{Key: []byte(k), Value: fmt.Appendf(nil, "v%d", i), Timestamp: clock.Now().UnixMilli()}
			if tomb(i) {
				recs[r].Value = nil
			}
		}
		if _, err := l.AppendAsLeader(NewBatch(recs), 0); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCleanerLatestWins compacts a log: below the cleaned end every key
// appears once, at its latest offset, with its offset unchanged; a
// tombstone stays through the pass that compacts it and goes once it is
// in the clean section and older than delete.retention.ms; the dirty
// ratio gates a pass; and the cleaned segments survive a reopen.
func TestCleanerLatestWins(t *testing.T) {
	cfg := compactConfig()
	d, l, clock := openTestLog(t, cfg)
	keys := map[int64]string{}
	produceKeyed(t, l, clock, 0, 60, keys, func(i int) int { return i % 7 }, func(i int) bool { return i%7 == 5 && i > 150 }) // k5's latest writes are tombstones
	leo := l.LogEndOffset()
	if len(l.SegmentBases()) < 4 {
		t.Fatalf("only %d segments", len(l.SegmentBases()))
	}
	sizeBefore := l.Size()
	res, err := l.Clean(leo)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Ran || res.Superseded == 0 || res.FirstDirty != 0 || res.DirtyRatio != 1 {
		t.Fatalf("first pass: %+v", res)
	}
	t.Logf("first pass: %+v; log %d → %d bytes", res, sizeBefore, l.Size())
	checkLatest := func(end int64, wantTombstone bool) {
		t.Helper()
		seen := map[string]int64{}
		tombstone := false
		for _, r := range readAll(t, l, leo) {
			if want := fmt.Sprintf("v%d", r.Offset); r.Value != nil && string(r.Value) != want {
				t.Fatalf("offset %d holds %s: offsets moved", r.Offset, r.Value)
			}
			if r.Offset >= end {
				continue
			}
			if prev, dup := seen[string(r.Key)]; dup {
				t.Fatalf("key %s at offsets %d and %d below the cleaned end %d", r.Key, prev, r.Offset, end)
			}
			seen[string(r.Key)] = r.Offset
			tombstone = tombstone || r.Value == nil
		}
		done := map[string]bool{}
		for off := end - 1; off >= 0; off-- { // each key's latest offset below end
			k := keys[off]
			if done[k] {
				continue
			}
			done[k] = true
			got, ok := seen[k]
			if !ok && k == "k5" && !wantTombstone {
				continue // its latest record was a tombstone, now removed
			}
			if got != off {
				t.Fatalf("key %s kept at %d, its latest below %d is %d", k, got, end, off)
			}
		}
		if tombstone != wantTombstone {
			t.Fatalf("tombstone kept: %v, want %v", tombstone, wantTombstone)
		}
	}
	checkLatest(res.CleanableEnd, true)

	// Nothing new is dirty: the ratio is 0, below 0.5, and no pass runs.
	res2, err := l.Clean(leo)
	if err != nil || res2.Ran {
		t.Fatalf("second pass ran on a clean log: %+v %v", res2, err)
	}

	// Later passes: the tombstone stays while it is in the dirty section
	// (the pass that compacts it keeps it); once it is in the clean
	// section and older than delete.retention.ms, a pass removes it.
	noK5 := func(i int) int { return []int{0, 1, 2, 3, 4, 6}[i%6] }
	var res3 CleanResult
	for pass, want := range []bool{true, false} {
		clock.Advance(2 * time.Hour)
		produceKeyed(t, l, clock, int(leo), 60, keys, noK5, func(int) bool { return false })
		leo = l.LogEndOffset()
		if res3, err = l.Clean(leo); err != nil || !res3.Ran {
			t.Fatalf("pass %d: %+v %v", pass+3, res3, err)
		}
		checkLatest(res3.CleanableEnd, want)
	}
	if res3.TombstonesRemoved != 1 {
		t.Fatalf("last pass removed %d tombstones, want 1", res3.TombstonesRemoved)
	}
	start, dirty := l.CleanerSections()
	if start != 0 || dirty != res3.CleanableEnd {
		t.Fatalf("sections [%d, %d), want [0, %d)", start, dirty, res3.CleanableEnd)
	}

	// The cleaned segments pass recovery's checks.
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	_, l = reopen(t, d, clock, cfg)
	checkLatest(res3.CleanableEnd, false)
	if l.LogEndOffset() != leo {
		t.Fatalf("LEO %d after reopen, want %d", l.LogEndOffset(), leo)
	}
}

// TestLogAppendTimeAndRecompression: message.timestamp.type=LogAppendTime
// stamps the batch's max timestamp with the append time and sets the
// attribute; compression.type=zstd recompresses what the producer sent
// uncompressed, and the records read back the same.
func TestLogAppendTimeAndRecompression(t *testing.T) {
	cfg := smallConfig()
	cfg.LogAppendTime = true
	cfg.CompressionType = "zstd"
	_, l, clock := openTestLog(t, cfg)
	recs := []Record{{Key: []byte("a"), Value: []byte("one"), Timestamp: 5}, {Key: []byte("b"), Value: []byte("two"), Timestamp: 6}}
	if _, err := l.AppendAsLeader(NewBatch(recs), 0); err != nil {
		t.Fatal(err)
	}
	bs, err := l.ReadBatches(0, 2, 10)
	if err != nil || len(bs) != 1 {
		t.Fatalf("read: %v %d", err, len(bs))
	}
	h := bs[0].Header
	if h.Attributes&timestampTypeBit == 0 || h.MaxTimestamp != clock.Now().UnixMilli() {
		t.Fatalf("attributes %#x max timestamp %d, want LogAppendTime %d", h.Attributes, h.MaxTimestamp, clock.Now().UnixMilli())
	}
	if h.Compression() != "zstd" {
		t.Fatalf("stored as %s, want zstd", h.Compression())
	}
	if got := bs[0].Records; len(got) != 2 || string(got[1].Value) != "two" {
		t.Fatalf("records %+v", got)
	}
	if off, ok, err := l.OffsetForTimestamp(clock.Now().UnixMilli()); err != nil || !ok || off != 0 {
		t.Fatalf("time index: offset %d %v %v, want 0 by the append time", off, ok, err)
	}
}
