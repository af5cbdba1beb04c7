package storage

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The storage benchmarks each time two sides in the same run, on the same
// disk, interleaved round by round so that load from other processes hits
// both alike, and report the ratio the README's targets are stated in. Each
// operation does enough work that -benchtime 1x (what `go tool task bench`
// uses) gives a usable figure; see docs/benchmarks.md for the commands and figures.

// benchTP is the partition every benchmark log holds.
var benchTP = TopicPartition{Topic: "bench", Partition: 0}

// openBenchLog opens a fresh log dir at dir holding one log of benchTP; the
// log dir is crashed (closed without flushing) when the benchmark ends.
func openBenchLog(b *testing.B, dir string, cfg Config) (*LogDir, *Log) {
	b.Helper()
	d, err := OpenLogDir(dir, Options{Logger: quietLogger, ConfigFor: func(TopicPartition) Config { return cfg }})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(d.Crash)
	l, err := d.CreateLog(benchTP, cfg)
	if err != nil {
		b.Fatal(err)
	}
	return d, l
}

// produceBatches returns n producer batches of perBatch records with values
// of valueBytes bytes, built with NewBatch; timestamps grow 1 ms per batch,
// as a live producer's do, so the time index keeps growing too.
func produceBatches(n, perBatch, valueBytes int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		recs := make([]Record, perBatch)
		for r := range recs {
			recs[r] = Record{Key: fmt.Appendf(nil, "key-%d", i*perBatch+r), Value: value(i*perBatch+r, valueBytes),
				Timestamp: 1_700_000_000_000 + int64(i)}
		}
		out[i] = NewBatch(recs)
	}
	return out
}

// Append benchmark shape: 1 KiB records, 16 per batch (16 KiB batches), and
// 64 MiB of records per operation, in rounds of 1 MiB.
const (
	appendRecordBytes     = 1 << 10
	appendRecordsPerBatch = 16
	appendBatchesPerOp    = 4096
	appendBatchesPerRound = 64
)

// BenchmarkAppend compares AppendAsLeader (default config: 1 GiB segments,
// page cache, no fsync) with a plain sequential os.File.Write of the same
// batches to a file in the same directory. Each operation appends 64 MiB to
// a fresh log and writes the same 64 MiB to a fresh file, alternating 1 MiB
// rounds; each side's throughput is taken from its median round, so a round
// that another process preempted does not decide the figure. ratio is
// storage throughput / plain write throughput (target ≥ 0.9). The append
// checks every batch's CRC-32C, as Kafka's append does; the write does not.
func BenchmarkAppend(b *testing.B) {
	benchmarkAppendVersusWrite(b, (*Log).AppendAsLeader)
}

// BenchmarkAppendValidated is BenchmarkAppend for AppendValidatedAsLeader,
// the broker's produce path, where ValidateProducedBatch has checked the
// CRC before the append (its cost is in the produce benchmarks). It shows
// what the rest of the append costs against a plain write; the target is
// BenchmarkAppend's.
func BenchmarkAppendValidated(b *testing.B) {
	benchmarkAppendVersusWrite(b, (*Log).AppendValidatedAsLeader)
}

// benchmarkAppendVersusWrite times appendBatch against os.File.Write as
// BenchmarkAppend describes.
func benchmarkAppendVersusWrite(b *testing.B, appendBatch func(l *Log, records []byte, leaderEpoch int32) (AppendInfo, error)) {
	batches := produceBatches(appendBatchesPerOp, appendRecordsPerBatch, appendRecordBytes)
	var opBytes int64
	for _, batch := range batches {
		opBytes += int64(len(batch))
	}
	roundBytes := opBytes / (appendBatchesPerOp / appendBatchesPerRound) // batches are all the same size
	root := b.TempDir()
	var storageRounds, writeRounds []time.Duration
	ops := 0
	for b.Loop() {
		dir := filepath.Join(root, fmt.Sprint(ops))
		d, l := openBenchLog(b, filepath.Join(dir, "logs"), DefaultConfig())
		f, err := os.OpenFile(filepath.Join(dir, "plain"), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		for r := 0; r < appendBatchesPerOp/appendBatchesPerRound; r++ {
			round := batches[r*appendBatchesPerRound : (r+1)*appendBatchesPerRound]
			appendRound := func() {
				start := time.Now()
				for _, batch := range round {
					if _, err := appendBatch(l, batch, 1); err != nil {
						b.Fatal(err)
					}
				}
				storageRounds = append(storageRounds, time.Since(start))
			}
			writeRound := func() {
				start := time.Now()
				for _, batch := range round {
					if _, err := f.Write(batch); err != nil {
						b.Fatal(err)
					}
				}
				writeRounds = append(writeRounds, time.Since(start))
			}
			// Alternate which side goes first, so neither always meets the
			// page cache state the other left.
			if r%2 == 0 {
				appendRound()
				writeRound()
			} else {
				writeRound()
				appendRound()
			}
		}
		if l.Size() != opBytes || l.LogEndOffset() != appendBatchesPerOp*appendRecordsPerBatch {
			b.Fatalf("log holds %d bytes up to offset %d, want %d bytes up to %d", l.Size(), l.LogEndOffset(), opBytes, appendBatchesPerOp*appendRecordsPerBatch)
		}
		// Drop both without fsync, as the timed part did not fsync either.
		d.Crash()
		f.Close()
		if err := os.RemoveAll(dir); err != nil {
			b.Fatal(err)
		}
		ops++
	}
	storageMBps := float64(roundBytes) / 1e6 / median(storageRounds).Seconds()
	writeMBps := float64(roundBytes) / 1e6 / median(writeRounds).Seconds()
	b.ReportMetric(0, "ns/op") // an op is both sides plus setup: not a useful figure
	b.ReportMetric(storageMBps, "storage-MB/s")
	b.ReportMetric(writeMBps, "write-MB/s")
	b.ReportMetric(storageMBps/writeMBps, "ratio")
}

// Lookup benchmark shape: compacted-looking logs whose batches hold one
// 1 KiB record each but span lookupOffsetsPerBatch offsets, in 16 KiB
// segments with the default index.interval.bytes. The 10^8-offset log then
// has 10^4 batches in about 360 segments, the 10^6-offset log 100 batches
// in 4.
const (
	lookupOffsetsPerBatch = 10_000
	lookupSegmentBytes    = 32 << 10
	lookupsPerOp          = 20_000
	lookupsPerRound       = 200
)

// sparseBatch returns a valid one-record batch spanning span offsets, as log
// compaction leaves them: the record kept is the batch's last offset, and
// the offsets before it were compacted away.
func sparseBatch(span int32, valueBytes int) []byte {
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(NewBatch([]Record{{Key: []byte("k"), Value: value(0, valueBytes), Timestamp: 1_700_000_000_000}})); err != nil {
		panic(err)
	}
	rec := kmsg.Record{OffsetDelta: span - 1, Key: []byte("k"), Value: value(0, valueBytes)}
	rec.Length = int32(len(rec.AppendTo(nil)) - 1) // a varint length of 0 takes one byte
	rb.Records = rec.AppendTo(nil)
	rb.LastOffsetDelta = span - 1
	rb.Length = int32(batchHeaderSize - batchLogOverhead + len(rb.Records))
	out := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(out[batchCRCOffset:], crc32.Checksum(out[batchAttrOffset:], castagnoli))
	return out
}

// buildSparseLog appends sparse batches as a follower until the log holds
// offsets [0, offsets).
func buildSparseLog(b *testing.B, dir string, offsets int64) *Log {
	b.Helper()
	cfg := DefaultConfig()
	cfg.SegmentBytes = lookupSegmentBytes
	_, l := openBenchLog(b, dir, cfg)
	batch := sparseBatch(lookupOffsetsPerBatch, 1<<10)
	for base := int64(0); base < offsets; base += lookupOffsetsPerBatch {
		binary.BigEndian.PutUint64(batch, uint64(base)) // not covered by the CRC
		if _, err := l.AppendAsFollower(batch); err != nil {
			b.Fatal(err)
		}
	}
	if l.LogEndOffset() != offsets {
		b.Fatalf("log end offset %d, want %d", l.LogEndOffset(), offsets)
	}
	// Check that a batch reads back whole and holds its one record at the
	// offset a compacted batch keeps.
	got, err := l.ReadBatches(offsets/2, offsets, 1)
	if err != nil || len(got) != 1 || len(got[0].Records) != 1 || got[0].Records[0].Offset != got[0].Header.LastOffset() {
		b.Fatalf("reading back the middle of the log: %v %+v", err, got)
	}
	return l
}

// BenchmarkLookup compares finding a random offset (Log.Read of one batch,
// the fetch path: segment binary search, offset-index binary search, header
// scan) in a log of 10^8 offsets with one of 10^6 offsets, same segment and
// batch shape. Each operation does 20,000 lookups on each side at offsets
// drawn with a fixed seed, alternating rounds of 200; the time per lookup
// is the median round's. ratio is the time per lookup at 10^8 / at 10^6
// (target ≤ 1.5).
//
// A third side looks up offsets of the 10^8 log confined to a window of 10^6
// offsets in its middle: the full segment search of the long log, but the
// working set (pages, files) of the short one. ratio-window (that time / the
// 10^6 log's) is therefore what the log's length costs the algorithm alone;
// ratio minus ratio-window is the cost of reading from a 100 times larger
// working set (CPU caches and TLB in the kernel's read path).
func BenchmarkLookup(b *testing.B) {
	const small, large = int64(1_000_000), int64(100_000_000)
	start := time.Now()
	root := b.TempDir()
	smallLog := buildSparseLog(b, filepath.Join(root, "small"), small)
	largeLog := buildSparseLog(b, filepath.Join(root, "large"), large)
	build := time.Since(start)
	sides := []struct {
		l      *Log
		lo, hi int64 // lookups in [lo, hi)
	}{
		{smallLog, 0, small},
		{largeLog, 0, large},
		{largeLog, large / 2, large/2 + small},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	offsets := make([][]int64, len(sides))
	for i, s := range sides {
		offsets[i] = make([]int64, lookupsPerOp)
		for j := range offsets[i] {
			offsets[i][j] = s.lo + rng.Int64N(s.hi-s.lo)
		}
	}
	rounds := make([][]time.Duration, len(sides))
	for b.Loop() {
		for r := 0; r < lookupsPerOp; r += lookupsPerRound {
			for k := range sides {
				i := (k + r/lookupsPerRound) % len(sides) // rotate which side goes first
				l, leo := sides[i].l, sides[i].l.LogEndOffset()
				t0 := time.Now()
				for _, o := range offsets[i][r : r+lookupsPerRound] {
					d, err := l.Read(o, leo, 1)
					if err != nil || d.FirstOffset > o || d.NextOffset <= o {
						b.Fatalf("Read(%d): %v %+v", o, err, d)
					}
				}
				rounds[i] = append(rounds[i], time.Since(t0))
			}
		}
	}
	perLookup := func(i int) float64 { return float64(median(rounds[i]).Nanoseconds()) / lookupsPerRound }
	smallNs, largeNs, windowNs := perLookup(0), perLookup(1), perLookup(2)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(smallNs, "ns/lookup-1e6")
	b.ReportMetric(largeNs, "ns/lookup-1e8")
	b.ReportMetric(largeNs/smallNs, "ratio")
	b.ReportMetric(windowNs/smallNs, "ratio-window")
	b.ReportMetric(float64(segmentCount(b, largeLog)), "segments-1e8")
	b.ReportMetric(build.Seconds(), "setup-s")
}

func segmentCount(b *testing.B, l *Log) int {
	segs, err := l.Segments()
	if err != nil {
		b.Fatal(err)
	}
	return len(segs)
}

// Open-after-crash benchmark shape: flushed segments of 1 MiB, then a 4 MiB
// unflushed tail in the active segment.
const (
	recoverySegmentBytes = 1 << 20
	recoveryTailBytes    = 4 << 20
	recoveryRoundsPerOp  = 9
)

// crashedLogDir is a log dir that is put back in the same crashed state
// before each timed open.
type crashedLogDir struct {
	path      string
	d         *LogDir
	tailStart int64 // the recovery point: where the unflushed tail starts
	tailEnd   int64
	tail      [][]byte
}

// newCrashedLogDir builds a log of segments flushed 1 MiB segments (rolled
// explicitly, so the active segment can then take the whole tail without
// rolling), flushes, appends the tail without flushing and crashes.
func newCrashedLogDir(b *testing.B, path string, segments int, tail [][]byte) *crashedLogDir {
	b.Helper()
	fill := produceBatches(recoverySegmentBytes/(appendRecordsPerBatch*appendRecordBytes), appendRecordsPerBatch, appendRecordBytes)
	d, l := openBenchLog(b, path, DefaultConfig())
	for range segments {
		for _, batch := range fill {
			if _, err := l.AppendAsLeader(batch, 1); err != nil {
				b.Fatal(err)
			}
		}
		if err := l.Roll(); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Flush(); err != nil {
		b.Fatal(err)
	}
	c := &crashedLogDir{path: path, d: d, tailStart: l.LogEndOffset(), tail: tail}
	b.Cleanup(func() { c.d.Crash() }) // the latest open, if a check failed before it crashed
	c.appendTailAndCrash(b, l)
	return c
}

func (c *crashedLogDir) appendTailAndCrash(b *testing.B, l *Log) {
	for _, batch := range c.tail {
		if _, err := l.AppendAsLeader(batch, 1); err != nil {
			b.Fatal(err)
		}
	}
	c.tailEnd = l.LogEndOffset()
	c.d.Crash()
}

// open times OpenLogDir (the recovery) and checks that it really recovered:
// no clean-shutdown marker, only the active segment re-read, the whole tail
// kept. It then cuts the tail off again (which moves the checkpointed
// recovery point back to its start), re-appends it and crashes, untimed.
func (c *crashedLogDir) open(b *testing.B) time.Duration {
	b.Helper()
	start := time.Now()
	d, err := OpenLogDir(c.path, Options{Logger: quietLogger})
	elapsed := time.Since(start)
	if err != nil {
		b.Fatal(err)
	}
	c.d = d // crashed again below, and by the cleanup newCrashedLogDir registered
	l, ok := d.Log(benchTP)
	if !ok {
		b.Fatal("log missing after recovery")
	}
	rep := l.Recovery()
	if rep.Clean || rep.RecoveryPoint != c.tailStart || len(rep.SegmentsRecovered) != 1 || rep.LogEndOffset != c.tailEnd {
		b.Fatalf("recovery %+v: want a crash recovery from %d of one segment up to %d", rep, c.tailStart, c.tailEnd)
	}
	if _, err := l.TruncateTo(c.tailStart); err != nil {
		b.Fatal(err)
	}
	c.appendTailAndCrash(b, l)
	return elapsed
}

// BenchmarkOpenAfterCrash compares OpenLogDir after a crash of a log with 1
// flushed segment and of one with 100, both followed by the same 4 MiB
// unflushed tail. Each operation opens each log dir 9 times, alternating,
// re-creating the crashed state untimed in between; the per-open figures are
// medians. ratio is the time at 100 segments / at 1 (target ≤ 1.5).
func BenchmarkOpenAfterCrash(b *testing.B) {
	start := time.Now()
	root := b.TempDir()
	tail := produceBatches(recoveryTailBytes/(appendRecordsPerBatch*appendRecordBytes), appendRecordsPerBatch, appendRecordBytes)
	dirs := []*crashedLogDir{
		newCrashedLogDir(b, filepath.Join(root, "one"), 1, tail),
		newCrashedLogDir(b, filepath.Join(root, "hundred"), 100, tail),
	}
	build := time.Since(start)
	var samples [2][]time.Duration
	for b.Loop() {
		for r := range recoveryRoundsPerOp {
			for k := range dirs {
				i := (k + r) % 2
				samples[i] = append(samples[i], dirs[i].open(b))
			}
		}
	}
	one, hundred := median(samples[0]), median(samples[1])
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(one.Nanoseconds()), "ns/open-1seg")
	b.ReportMetric(float64(hundred.Nanoseconds()), "ns/open-100seg")
	b.ReportMetric(float64(hundred)/float64(one), "ratio")
	b.ReportMetric(build.Seconds(), "setup-s")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkClean compares the log cleaner with plain appends on the same
// log: each operation appends 16 MiB of 1 KiB records (16 per batch,
// cycling over 1,000 keys, so 1 in 16 survives) to a fresh compacted log
// of 1 MiB segments, timing the appends, then runs one cleaner pass over
// every sealed segment, timing it. ratio is cleaner throughput (bytes of
// log read per second) / append throughput; clean-MB/s and append-MB/s are
// the two sides, kept the share of bytes the pass left.
func BenchmarkClean(b *testing.B) {
	const keys, batches = 1000, 1024
	var all [][]byte
	for i := range batches {
		recs := make([]Record, appendRecordsPerBatch)
		for r := range recs {
			n := i*appendRecordsPerBatch + r
			recs[r] = Record{Key: fmt.Appendf(nil, "key-%d", n%keys), Value: value(n, appendRecordBytes), Timestamp: 1_700_000_000_000 + int64(i)}
		}
		all = append(all, NewBatch(recs))
	}
	cfg := DefaultConfig()
	cfg.SegmentBytes = 1 << 20
	cfg.Cleanup = CleanupCompact
	cfg.MinCleanableDirtyRatio = 0
	root := b.TempDir()
	var appendTime, cleanTime time.Duration
	var appended, cleaned, left int64
	ops := 0
	for b.Loop() {
		_, l := openBenchLog(b, filepath.Join(root, fmt.Sprint(ops)), cfg)
		ops++
		start := time.Now()
		for _, batch := range all {
			if _, err := l.AppendAsLeader(batch, 1); err != nil {
				b.Fatal(err)
			}
		}
		appendTime += time.Since(start)
		appended += l.Size()
		start = time.Now()
		res, err := l.Clean(l.LogEndOffset())
		if err != nil || !res.Ran {
			b.Fatalf("clean: %+v %v", res, err)
		}
		cleanTime += time.Since(start)
		cleaned += res.BytesBefore
		left += res.BytesAfter
	}
	appendMBs := float64(appended) / appendTime.Seconds() / (1 << 20)
	cleanMBs := float64(cleaned) / cleanTime.Seconds() / (1 << 20)
	b.ReportMetric(appendMBs, "append-MB/s")
	b.ReportMetric(cleanMBs, "clean-MB/s")
	b.ReportMetric(cleanMBs/appendMBs, "ratio")
	b.ReportMetric(float64(left)/float64(cleaned), "kept")
}
