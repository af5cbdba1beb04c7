package storage

import (
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// castagnoli is the standard library's CRC-32C table: tests build batches
// with it, independently of the crc32c package the log checks them with.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// testClock is a stepped clock: time moves only when a test says so.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func newTestClock() *testClock {
	return &testClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

var quietLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

// smallConfig is the lab's shape: tiny segments and a dense index.
func smallConfig() Config {
	c := DefaultConfig()
	c.SegmentBytes = 4096
	c.IndexIntervalBytes = 256
	return c
}

func testOptions(clock *testClock, cfg Config) Options {
	return Options{Now: clock.Now, Logger: quietLogger, ConfigFor: func(TopicPartition) Config { return cfg }}
}

var demoTP = TopicPartition{Topic: "demo", Partition: 0}

// openTestLog opens a fresh log dir with one log.
func openTestLog(t testing.TB, cfg Config) (*LogDir, *Log, *testClock) {
	t.Helper()
	clock := newTestClock()
	d, err := OpenLogDir(t.TempDir(), testOptions(clock, cfg))
	if err != nil {
		t.Fatal(err)
	}
	l, err := d.CreateLog(demoTP, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Crash() })
	return d, l, clock
}

// reopen opens the same log dir again (after Close, Crash or PowerLoss).
func reopen(t testing.TB, d *LogDir, clock *testClock, cfg Config) (*LogDir, *Log) {
	t.Helper()
	d2, err := OpenLogDir(d.Path(), testOptions(clock, cfg))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d2.Crash() })
	l, ok := d2.Log(demoTP)
	if !ok {
		t.Fatalf("log %s not found after reopen", demoTP)
	}
	return d2, l
}

// value is the payload of the record produced as number i.
func value(i int, size int) []byte {
	b := make([]byte, size)
	s := fmt.Sprintf("m%d-", i)
	for j := range b {
		b[j] = s[j%len(s)]
	}
	return b
}

// produce appends n batches of perBatch records with values of size bytes,
// numbered from first, with timestamps 1000 ms apart per batch.
func produce(t testing.TB, l *Log, epoch int32, first, n, perBatch, size int) {
	t.Helper()
	for b := 0; b < n; b++ {
		recs := make([]Record, perBatch)
		for r := range recs {
			i := first + b*perBatch + r
			recs[r] = Record{Key: []byte(fmt.Sprint(i)), Value: value(i, size), Timestamp: int64(1_000_000 + i*1000)}
		}
		if _, err := l.AppendAsLeader(NewBatch(recs), epoch); err != nil {
			t.Fatalf("append batch %d: %v", b, err)
		}
	}
}

// readAll decodes every record in [log start, limit).
func readAll(t testing.TB, l *Log, limit int64) []DecodedRecord {
	t.Helper()
	batches, err := l.ReadBatches(l.LogStartOffset(), limit, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	var out []DecodedRecord
	for _, b := range batches {
		out = append(out, b.Records...)
	}
	return out
}
