package storage

import (
	"flag"
	"os"
	"runtime"
	"testing"
	"time"
)

var descPartitions = flag.Int("desc-partitions", 1000, "partitions in BenchmarkSegmentDescriptors")

// openFDs counts the process's open descriptors; -1 where /proc is absent.
func openFDs(t testing.TB) int {
	t.Helper()
	if runtime.GOOS != "linux" {
		return -1
	}
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

// segmentedLogs creates n logs of 4 segments each (3 sealed, 1 active) in
// a fresh log dir on clock.
func segmentedLogs(t testing.TB, n int) (*LogDir, []*Log, *testClock) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.SegmentBytes = 1024
	clock := newTestClock()
	d, err := OpenLogDir(t.TempDir(), testOptions(clock, cfg))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Crash() })
	logs := make([]*Log, n)
	for p := range logs {
		if logs[p], err = d.CreateLog(TopicPartition{Topic: "wide", Partition: int32(p)}, cfg); err != nil {
			t.Fatal(err)
		}
		produce(t, logs[p], 0, 0, 4, 1, 700) // one ~800-byte batch per segment
	}
	return d, logs, clock
}

// retentionCheck runs every log's retention check, which closes idle files.
func retentionCheck(t testing.TB, logs []*Log) {
	t.Helper()
	for _, l := range logs {
		if _, err := l.ApplyRetention(0); err != nil {
			t.Fatal(err)
		}
	}
}

// TestIdleSegmentFilesClose: a sealed segment's .log is opened by a read
// and closed by the retention check once no reader needed it for
// IdleFileTimeout, so a broker's descriptors follow its partitions (3 for
// each active segment) rather than its segments; the next read opens the
// file again and sees the same records.
func TestIdleSegmentFilesClose(t *testing.T) {
	const partitions = 100
	base := openFDs(t)
	_, logs, clock := segmentedLogs(t, partitions)
	if n := len(logs[0].segments); n != 4 {
		t.Fatalf("%d segments, want 4", n)
	}
	retentionCheck(t, logs) // closes the files rolled away from, never read
	if base >= 0 {
		if got := openFDs(t) - base; got != 3*partitions {
			t.Fatalf("after writing: %d descriptors for %d partitions, want %d (the active segments' 3 files)", got, partitions, 3*partitions)
		}
	}
	want := make([][]DecodedRecord, partitions)
	for p, l := range logs {
		want[p] = readAll(t, l, l.LogEndOffset())
		if len(want[p]) != 4 {
			t.Fatalf("partition %d: read %d records, want 4", p, len(want[p]))
		}
	}
	read := openFDs(t) - base
	clock.Advance(DefaultIdleFileTimeout - time.Second)
	retentionCheck(t, logs)
	if base >= 0 {
		if got := openFDs(t) - base; got != read || got != 6*partitions {
			t.Fatalf("read %v ago: %d descriptors, want %d (active 3 + 3 sealed, recently read)", DefaultIdleFileTimeout-time.Second, got, 6*partitions)
		}
	}
	clock.Advance(time.Second)
	retentionCheck(t, logs)
	if base >= 0 {
		if got := openFDs(t) - base; got != 3*partitions {
			t.Fatalf("idle %v: %d descriptors, want %d", DefaultIdleFileTimeout, got, 3*partitions)
		}
	}
	for p, l := range logs {
		got := readAll(t, l, l.LogEndOffset())
		if len(got) != len(want[p]) || string(got[0].Value) != string(want[p][0].Value) || got[3].Offset != 3 {
			t.Fatalf("partition %d after reopening: %v", p, got)
		}
		if off, ok, err := l.OffsetForTimestamp(1_002_000); err != nil || !ok || off != 2 {
			t.Fatalf("partition %d: OffsetForTimestamp = %d, %v, %v; want 2", p, off, ok, err)
		}
	}
}

// BenchmarkSegmentDescriptors measures descriptors per partition with
// -desc-partitions partitions of 4 segments each, every segment read once:
// "read" is what every read segment's open .log cost before idle files
// were closed (and costs for IdleFileTimeout after a read), "idle" what
// is left once the retention check has closed them.
func BenchmarkSegmentDescriptors(b *testing.B) {
	for range b.N {
		base := openFDs(b)
		_, logs, clock := segmentedLogs(b, *descPartitions)
		for _, l := range logs {
			readAll(b, l, l.LogEndOffset())
		}
		read := openFDs(b) - base
		clock.Advance(DefaultIdleFileTimeout)
		retentionCheck(b, logs)
		idle := openFDs(b) - base
		n := float64(len(logs))
		b.ReportMetric(float64(read)/n, "fds/partition-read")
		b.ReportMetric(float64(idle)/n, "fds/partition-idle")
		b.ReportMetric(float64(read), "fds-read")
		b.ReportMetric(float64(idle), "fds-idle")
	}
	b.ReportMetric(0, "ns/op")
}
