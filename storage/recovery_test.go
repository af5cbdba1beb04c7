package storage

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestCleanShutdownSkipsRecovery(t *testing.T) {
	cfg := smallConfig()
	d, l, clock := openTestLog(t, cfg)
	produce(t, l, 0, 0, 40, 2, 100)
	want := readAll(t, l, l.LogEndOffset())
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(d.Path(), CleanShutdownFile)); err != nil {
		t.Fatalf("no clean shutdown marker: %v", err)
	}
	d2, l2 := reopen(t, d, clock, cfg)
	r := l2.Recovery()
	if !r.Clean || len(r.SegmentsRecovered) != 0 || r.BytesTruncated != 0 {
		t.Fatalf("clean open recovered: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(d2.Path(), CleanShutdownFile)); !os.IsNotExist(err) {
		t.Fatal("marker still present after open: a crash now would skip recovery")
	}
	if got := readAll(t, l2, l2.LogEndOffset()); !sameRecords(got, want) {
		t.Fatal("records differ after clean reopen")
	}
}

func TestCrashRecoversOnlyFromRecoveryPoint(t *testing.T) {
	cfg := smallConfig()
	d, l, clock := openTestLog(t, cfg)
	produce(t, l, 0, 0, 60, 2, 100) // several rolls; each roll flushes
	segs, _ := l.Segments()
	active := segs[len(segs)-1].BaseOffset
	if rp := l.RecoveryPoint(); rp != active || len(segs) < 4 {
		t.Fatalf("recovery point %d, active segment %d, %d segments", rp, active, len(segs))
	}
	want := readAll(t, l, l.LogEndOffset())
	leo := l.LogEndOffset()
	d.Crash()
	_, l2 := reopen(t, d, clock, cfg)
	r := l2.Recovery()
	if r.Clean || !reflect.DeepEqual(r.SegmentsRecovered, []int64{active}) || r.RecoveryPoint != active {
		t.Fatalf("recovery report %+v, want only segment %d re-read", r, active)
	}
	// A process crash keeps the page cache: nothing is lost.
	if l2.LogEndOffset() != leo || !sameRecords(readAll(t, l2, leo), want) {
		t.Fatalf("LEO %d after crash, want %d", l2.LogEndOffset(), leo)
	}
	// The lazily loaded older segments still serve lookups.
	if tr, err := l2.Lookup(3); err != nil || tr.Batch.BaseOffset != 2 {
		t.Fatalf("lookup in an unrecovered segment: %+v %v", tr, err)
	}
}

func TestTornTailIsCut(t *testing.T) {
	cfg := DefaultConfig()
	cfg.IndexIntervalBytes = 128
	d, l, clock := openTestLog(t, cfg)
	produce(t, l, 2, 0, 20, 1, 100)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	produce(t, l, 2, 20, 10, 1, 100)
	path := filepath.Join(l.Dir(), segmentFileName(0, LogFileSuffix))
	d.Crash()
	st, _ := os.Stat(path)
	// Tear the last batch in half, as a crash mid-write would.
	if err := os.Truncate(path, st.Size()-50); err != nil {
		t.Fatal(err)
	}
	_, l2 := reopen(t, d, clock, cfg)
	if leo := l2.LogEndOffset(); leo != 29 {
		t.Fatalf("LEO %d after a torn last batch, want 29", leo)
	}
	r := l2.Recovery()
	if r.BytesTruncated == 0 || !reflect.DeepEqual(r.SegmentsRecovered, []int64{0}) {
		t.Fatalf("report %+v", r)
	}
	checkRebuiltIndexes(t, l2)
	// The log goes on after the cut.
	produce(t, l2, 3, 29, 1, 1, 100)
	recs := readAll(t, l2, l2.LogEndOffset())
	if len(recs) != 30 || !bytes.Equal(recs[29].Value, value(29, 100)) {
		t.Fatalf("%d records after the cut and one more append", len(recs))
	}
	if e := l2.Epochs(); !reflect.DeepEqual(e, []EpochEntry{{Epoch: 2, StartOffset: 0}, {Epoch: 3, StartOffset: 29}}) {
		t.Fatalf("epochs %v", e)
	}
}

func TestCorruptSegmentDropsTheRest(t *testing.T) {
	cfg := smallConfig()
	d, l, clock := openTestLog(t, cfg)
	produce(t, l, 0, 0, 60, 2, 100)
	segs, _ := l.Segments()
	d.Crash()
	// Without a recovery point checkpoint every segment is re-read.
	os.Remove(filepath.Join(d.Path(), RecoveryPointCheckpointFile))
	victim := segs[1]
	path := filepath.Join(l.Dir(), victim.Files[0])
	data, _ := os.ReadFile(path)
	data[len(data)/2] ^= 0x40 // a flipped bit inside some batch: its CRC fails
	os.WriteFile(path, data, 0o644)

	_, l2 := reopen(t, d, clock, cfg)
	r := l2.Recovery()
	if len(r.SegmentsRecovered) != 2 || len(r.SegmentsDeleted) != len(segs)-2 {
		t.Fatalf("report %+v for %d segments", r, len(segs))
	}
	leo := l2.LogEndOffset()
	if leo <= victim.BaseOffset || leo >= victim.NextOffset {
		t.Fatalf("LEO %d, want inside the corrupt segment [%d,%d)", leo, victim.BaseOffset, victim.NextOffset)
	}
	got := readAll(t, l2, leo)
	for i, rec := range got {
		if rec.Offset != int64(i) || !bytes.Equal(rec.Value, value(i, 100)) {
			t.Fatalf("record %d wrong after recovery", i)
		}
	}
	left, _ := filepath.Glob(filepath.Join(l2.Dir(), "*.log"))
	if len(left) != 2 {
		t.Fatalf("segment files left: %v", left)
	}
	checkRebuiltIndexes(t, l2)
}

func TestPowerLossKeepsOnlyWhatWasFsynced(t *testing.T) {
	cfg := smallConfig()
	d, l, clock := openTestLog(t, cfg)
	produce(t, l, 0, 0, 30, 2, 100)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	flushed := l.LogEndOffset()
	want := readAll(t, l, flushed)
	produce(t, l, 1, int(flushed), 20, 2, 100) // rolls flush some of these too
	segs, _ := l.Segments()
	durable := segs[len(segs)-1].BaseOffset // everything before the active segment was flushed on roll
	if durable <= flushed {
		t.Fatalf("expected a roll after the flush (active base %d, flushed %d)", durable, flushed)
	}
	produce(t, l, 1, int(l.LogEndOffset()), 1, 2, 100)
	lost, err := d.PowerLoss()
	if err != nil {
		t.Fatal(err)
	}
	if len(lost) == 0 {
		t.Fatal("power loss lost nothing, but the active segment was never fsynced")
	}
	_, l2 := reopen(t, d, clock, cfg)
	if leo := l2.LogEndOffset(); leo != durable {
		t.Fatalf("LEO %d after power loss, want %d (the last fsynced offset)", leo, durable)
	}
	if got := readAll(t, l2, flushed); !sameRecords(got, want) {
		t.Fatal("fsynced records changed")
	}
	for _, e := range l2.Epochs() {
		if e.StartOffset >= l2.LogEndOffset() {
			t.Fatalf("epoch %v starts past the LEO %d", e, l2.LogEndOffset())
		}
	}
	checkRebuiltIndexes(t, l2)
}

func TestPowerLossAfterFlushLosesNothing(t *testing.T) {
	cfg := smallConfig()
	d, l, clock := openTestLog(t, cfg)
	produce(t, l, 0, 0, 25, 2, 100)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	want := readAll(t, l, l.LogEndOffset())
	lost, err := d.PowerLoss()
	if err != nil || len(lost) != 0 {
		t.Fatalf("lost %v (%v) after a flush", lost, err)
	}
	_, l2 := reopen(t, d, clock, cfg)
	if got := readAll(t, l2, l2.LogEndOffset()); !sameRecords(got, want) {
		t.Fatalf("%d records after power loss, want %d", len(got), len(want))
	}
}

func TestCheckpointFiles(t *testing.T) {
	cfg := smallConfig()
	d, l, clock := openTestLog(t, cfg)
	produce(t, l, 0, 0, 5, 2, 10)
	produce(t, l, 4, 10, 5, 2, 10)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(d.Path(), name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := read(RecoveryPointCheckpointFile); got != "0\n1\ndemo 0 20\n" {
		t.Fatalf("recovery-point-offset-checkpoint = %q", got)
	}
	if got := read(filepath.Join("demo-0", LeaderEpochCheckpointFile)); got != "0\n2\n0 0\n4 10\n" {
		t.Fatalf("leader-epoch-checkpoint = %q", got)
	}
	if err := d.WriteHighWatermarks(map[TopicPartition]int64{demoTP: 17, {"gone", 0}: 3}); err != nil {
		t.Fatal(err)
	}
	if got := read(ReplicationCheckpointFile); got != "0\n1\ndemo 0 17\n" {
		t.Fatalf("replication-offset-checkpoint = %q", got)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if got := read(LogStartCheckpointFile); got != "0\n1\ndemo 0 0\n" {
		t.Fatalf("log-start-offset-checkpoint = %q", got)
	}
	d2, _ := reopen(t, d, clock, cfg)
	if hw, ok := d2.HighWatermark(demoTP); !ok || hw != 17 {
		t.Fatalf("high watermark %d %v after reopen", hw, ok)
	}
	// A damaged checkpoint is an error, not a guess.
	os.WriteFile(filepath.Join(d.Path(), ReplicationCheckpointFile), []byte("0\n2\ndemo 0 1\n"), 0o644)
	d2.Crash()
	if _, err := OpenLogDir(d.Path(), testOptions(clock, cfg)); err == nil {
		t.Fatal("opened a log dir with a truncated checkpoint")
	}
}

// checkRebuiltIndexes compares each segment's indexes with indexes built
// from scratch by reading the .log file.
func checkRebuiltIndexes(t *testing.T, l *Log) {
	t.Helper()
	segs, err := l.Segments()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range segs {
		fresh := &segment{dir: l.Dir(), baseOffset: s.BaseOffset, env: l.env, maxTimestamp: -1, offsetOfMaxTimestamp: -1}
		data, err := os.ReadFile(fresh.path(LogFileSuffix))
		if err != nil {
			t.Fatal(err)
		}
		var pos int64
		err = splitBatches(data, func(h BatchHeader, _ []byte) error {
			fresh.indexBatch(h, pos)
			pos += h.Size()
			return nil
		})
		if err != nil {
			t.Fatalf("segment %d holds an invalid batch after recovery: %v", s.BaseOffset, err)
		}
		if !reflect.DeepEqual(fresh.index, nilIfEmpty(s.Index)) {
			t.Fatalf("segment %d index %v, rebuilt %v", s.BaseOffset, s.Index, fresh.index)
		}
		diskIdx, _ := os.ReadFile(fresh.path(IndexFileSuffix))
		if onDisk, _ := parseIndex(diskIdx, pos+1); !reflect.DeepEqual(onDisk, nilIfEmpty(s.Index)) {
			t.Fatalf("segment %d .index file %v, memory %v", s.BaseOffset, onDisk, s.Index)
		}
		if s.NextOffset != fresh.nextOffset && !(len(data) == 0 && s.NextOffset >= s.BaseOffset) {
			t.Fatalf("segment %d next offset %d, file says %d", s.BaseOffset, s.NextOffset, fresh.nextOffset)
		}
	}
}

func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

func sameRecords(a, b []DecodedRecord) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Offset != b[i].Offset || !bytes.Equal(a[i].Key, b[i].Key) || !bytes.Equal(a[i].Value, b[i].Value) || a[i].Timestamp != b[i].Timestamp {
			return false
		}
	}
	return true
}
