package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/storage/vfs"
	"tidemark/storage/vfs/errorfs"
)

// openFaultyLog is openTestLog on an errorfs.FS over the OS, injecting
// nothing until the test says so.
func openFaultyLog(t *testing.T, cfg Config) (*LogDir, *Log, *testClock, *errorfs.FS) {
	t.Helper()
	clock := newTestClock()
	fsys := errorfs.Wrap(vfs.Default)
	opts := testOptions(clock, cfg)
	opts.FS = fsys
	d, err := OpenLogDir(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Crash)
	l, err := d.CreateLog(demoTP, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d, l, clock, fsys
}

// appendOne appends record number i as one single-record batch.
func appendOne(l *Log, epoch int32, i int) error {
	_, err := l.AppendAsLeader(NewBatch([]Record{{Key: []byte(fmt.Sprint(i)), Value: value(i, 100), Timestamp: int64(1_000_000 + i*1000)}}), epoch)
	return err
}

// checkRecords fails unless the log holds exactly records 0..n-1, each at
// its own offset.
func checkRecords(t *testing.T, l *Log, n int) {
	t.Helper()
	got := readAll(t, l, l.LogEndOffset())
	if len(got) != n || l.LogEndOffset() != int64(n) {
		t.Fatalf("log holds %d records up to LEO %d, want %d", len(got), l.LogEndOffset(), n)
	}
	for i, r := range got {
		if r.Offset != int64(i) || string(r.Key) != fmt.Sprint(i) || string(r.Value) != string(value(i, 100)) {
			t.Fatalf("record at %d is %q at offset %d", i, r.Key, r.Offset)
		}
	}
}

// isStorageError fails unless err is KAFKA_STORAGE_ERROR caused by an
// injected fault.
func isStorageError(t *testing.T, what string, err error) {
	t.Helper()
	var se *StorageError
	if !errors.Is(err, kerr.KafkaStorageError) || !errors.Is(err, errorfs.ErrInjected) || !errors.As(err, &se) {
		t.Fatalf("%s: %v, want KAFKA_STORAGE_ERROR from the injected fault", what, err)
	}
}

// faultCase is one injection point: after setup appends records 0..5
// (0..2 flushed by Flush unless the config flushes every append), the rule
// is armed and act meets it.
type faultCase struct {
	name string
	cfg  Config
	rule func() errorfs.Injector
	act  func(l *Log) error
	// kept is how many records a reader and a restart must find: the act
	// failed, so nothing of it is there.
	kept int
	// flushed is how many records survive a power cut after the failure.
	flushed int
}

func flushEvery() Config {
	c := DefaultConfig()
	c.FlushMessages = 1
	return c
}

func faultCases() []faultCase {
	appendNext := func(l *Log) error { return appendOne(l, 0, 6) }
	return []faultCase{
		{name: "write", cfg: DefaultConfig(), rule: func() errorfs.Injector { return &errorfs.Rule{Op: errorfs.OpWrite, Path: "*.log"} },
			act: appendNext, kept: 6, flushed: 3},
		{name: "torn write", cfg: DefaultConfig(), rule: func() errorfs.Injector { return &errorfs.Rule{Op: errorfs.OpWrite, Path: "*.log", Torn: true} },
			act: appendNext, kept: 6, flushed: 3},
		// The rollback cuts the whole batch, or a restart would find it.
		{name: "write reported failed after it wrote", cfg: DefaultConfig(), rule: func() errorfs.Injector { return &errorfs.Rule{Op: errorfs.OpWrite, Path: "*.log", Late: true} },
			act: appendNext, kept: 6, flushed: 3},
		{name: "fsync of a flush.messages=1 append", cfg: flushEvery(), rule: func() errorfs.Injector { return &errorfs.Rule{Op: errorfs.OpSync, Path: "*.log"} },
			act: appendNext, kept: 6, flushed: 6},
		{name: "recovery point checkpoint after a flush", cfg: flushEvery(),
			rule: func() errorfs.Injector {
				return &errorfs.Rule{Op: errorfs.OpRename, Path: RecoveryPointCheckpointFile + ".tmp"}
			},
			act: appendNext, kept: 6, flushed: 6},
		{name: "leader-epoch checkpoint at a new epoch", cfg: DefaultConfig(),
			rule: func() errorfs.Injector {
				return &errorfs.Rule{Op: errorfs.OpRename, Path: LeaderEpochCheckpointFile + ".tmp"}
			},
			act: func(l *Log) error { return appendOne(l, 1, 6) }, kept: 6, flushed: 3},
		{name: "replication-offset checkpoint", cfg: DefaultConfig(),
			rule: func() errorfs.Injector {
				return &errorfs.Rule{Op: errorfs.OpRename, Path: ReplicationCheckpointFile + ".tmp"}
			},
			act: func(l *Log) error { return l.dl.WriteHighWatermarks(map[TopicPartition]int64{demoTP: 4}) }, kept: 6, flushed: 3},
		{name: "open of a new segment at a roll", cfg: DefaultConfig(), rule: func() errorfs.Injector { return &errorfs.Rule{Op: errorfs.OpOpen, Path: "*.log"} },
			act: func(l *Log) error {
				if err := appendOne(l, 0, 6); err != nil {
					return err
				}
				return l.Roll()
			}, kept: 7, flushed: 3}, // the roll fails after record 6 was appended
		{name: "fsync of a flush", cfg: DefaultConfig(), rule: func() errorfs.Injector { return &errorfs.Rule{Op: errorfs.OpSync, Path: "*.log"} },
			act: (*Log).Flush, kept: 6, flushed: 3},
		{name: "truncate of a follower truncation", cfg: DefaultConfig(), rule: func() errorfs.Injector { return &errorfs.Rule{Op: errorfs.OpTruncate, Path: "*.log"} },
			act: func(l *Log) error { _, err := l.TruncateTo(4); return err }, kept: 6, flushed: 3},
		{name: "read", cfg: DefaultConfig(), rule: func() errorfs.Injector { return &errorfs.Rule{Op: errorfs.OpRead, Path: "*.log"} },
			act: func(l *Log) error { _, err := l.Read(1, 6, 1<<20); return err }, kept: 6, flushed: 3},
		// A dead disk: the write tears and so does every later write and
		// truncate, so the rollback cannot cut the torn half; recovery does
		// at the next open (the CRC fails).
		{name: "torn write on a dead disk", cfg: DefaultConfig(),
			rule: func() errorfs.Injector {
				return errorfs.Any(&errorfs.Rule{Op: errorfs.OpWrite, Sticky: true, Torn: true}, &errorfs.Rule{Op: errorfs.OpTruncate, Sticky: true})
			},
			act: appendNext, kept: 6, flushed: 3},
	}
}

// TestStorageFailuresStick injects a failure at each point and checks
// Kafka's behaviour: the call fails with KAFKA_STORAGE_ERROR, the whole log
// dir goes offline and stays so (every later call on any of its logs fails
// the same way), the LEO does not move, nothing of the failed call is ever
// read, and a restart — after a crash, a clean close or a power cut — finds
// exactly the appends that succeeded (fewer after a power cut, but never
// fewer than were flushed).
func TestStorageFailuresStick(t *testing.T) {
	for _, tc := range faultCases() {
		for _, restart := range []string{"crash", "close", "power loss"} {
			t.Run(tc.name+"/"+restart, func(t *testing.T) {
				d, l, clock, fsys := openFaultyLog(t, tc.cfg)
				other, err := d.CreateLog(TopicPartition{Topic: "other", Partition: 0}, tc.cfg)
				if err != nil {
					t.Fatal(err)
				}
				for i := 0; i < 6; i++ {
					if err := appendOne(l, 0, i); err != nil {
						t.Fatal(err)
					}
					if i == 2 {
						if err := l.Flush(); err != nil {
							t.Fatal(err)
						}
					}
				}
				if err := appendOne(other, 0, 0); err != nil {
					t.Fatal(err)
				}
				inj := tc.rule()
				fsys.Inject(inj)
				isStorageError(t, "the failing call", tc.act(l))
				fsys.Inject(nil) // the disk works again: the dir stays offline anyway

				if err := d.Offline(); !errors.Is(err, kerr.KafkaStorageError) {
					t.Fatalf("Offline() = %v after the failure", err)
				}
				select {
				case <-d.OfflineC():
				default:
					t.Fatal("OfflineC not closed")
				}
				if got := l.LogEndOffset(); got != int64(tc.kept) {
					t.Fatalf("LEO %d after the failure, want %d", got, tc.kept)
				}
				checkRefused(t, d, l, other)

				switch restart {
				case "crash":
					d.Crash()
				case "close":
					isStorageError(t, "Close", d.Close())
				case "power loss":
					if _, err := d.PowerLoss(); err != nil {
						t.Fatal(err)
					}
				}
				d2, l2 := reopen(t, d, clock, tc.cfg)
				if d2.WasCleanShutdown() {
					t.Fatal("an offline dir was closed as clean")
				}
				want := tc.kept
				if restart == "power loss" {
					want = min(int(l2.LogEndOffset()), tc.kept)
					if want < tc.flushed {
						t.Fatalf("%d records after power loss, want at least the %d flushed", want, tc.flushed)
					}
				}
				checkRecords(t, l2, want)
				// The restarted dir is healthy and the log goes on.
				if err := appendOne(l2, 1, want); err != nil {
					t.Fatalf("append after restart: %v", err)
				}
				checkRecords(t, l2, want+1)
			})
		}
	}
}

// checkRefused fails unless every call that touches files, on l and on
// another log of the same dir, returns KAFKA_STORAGE_ERROR.
func checkRefused(t *testing.T, d *LogDir, l, other *Log) {
	t.Helper()
	batch := NewBatch([]Record{{Value: []byte("late")}})
	calls := map[string]func() error{
		"AppendAsLeader": func() error { _, err := l.AppendAsLeader(batch, 0); return err },
		"AppendAsFollower": func() error {
			b := NewBatch([]Record{{Value: []byte("late")}})
			stampBatch(b, l.LogEndOffset(), 0)
			_, err := l.AppendAsFollower(b)
			return err
		},
		"Read":                    func() error { _, err := l.Read(0, 100, 1<<20); return err },
		"ReadBatches":             func() error { _, err := l.ReadBatches(0, 100, 10); return err },
		"Lookup":                  func() error { _, err := l.Lookup(0); return err },
		"OffsetForTimestamp":      func() error { _, _, err := l.OffsetForTimestamp(0); return err },
		"Segments":                func() error { _, err := l.Segments(); return err },
		"TruncateTo":              func() error { _, err := l.TruncateTo(1); return err },
		"TruncateFullyAndStartAt": func() error { return l.TruncateFullyAndStartAt(100) },
		"SetLogStartOffset":       func() error { return l.SetLogStartOffset(1, 1) },
		"ApplyRetention":          func() error { _, err := l.ApplyRetention(100); return err },
		"AssignLeaderEpoch":       func() error { return l.AssignLeaderEpoch(9, l.LogEndOffset()) },
		"Flush":                   l.Flush,
		"FlushIfDue":              func() error { _, err := l.FlushIfDue(); return err },
		"Roll":                    l.Roll,
		"other log's append":      func() error { _, err := other.AppendAsLeader(batch, 0); return err },
		"other log's read":        func() error { _, err := other.Read(0, 1, 1<<20); return err },
		"CreateLog": func() error {
			_, err := d.CreateLog(TopicPartition{Topic: "new", Partition: 0}, DefaultConfig())
			return err
		},
		"DeleteLog":           func() error { return d.DeleteLog(other.TopicPartition()) },
		"WriteHighWatermarks": func() error { return d.WriteHighWatermarks(map[TopicPartition]int64{demoTP: 1}) },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, kerr.KafkaStorageError) {
			t.Errorf("%s on an offline log dir: %v, want KAFKA_STORAGE_ERROR", name, err)
		}
	}
}

// On a dead disk where even the rollback fails, a whole batch whose fsync
// failed stays in the file: the log still reports the LEO from before the
// append and refuses every call, but a restart finds the batch — the
// append's outcome is unknown, as with Kafka — and the log is whole.
func TestFailedRollbackOnADeadDisk(t *testing.T) {
	d, l, clock, fsys := openFaultyLog(t, flushEvery())
	for i := 0; i < 3; i++ {
		if err := appendOne(l, 0, i); err != nil {
			t.Fatal(err)
		}
	}
	fsys.Inject(errorfs.Any(&errorfs.Rule{Op: errorfs.OpSync, Sticky: true}, &errorfs.Rule{Op: errorfs.OpTruncate, Sticky: true}))
	isStorageError(t, "append", appendOne(l, 0, 3))
	if got := l.LogEndOffset(); got != 3 {
		t.Fatalf("LEO %d after a failed append, want 3", got)
	}
	if _, err := l.Read(0, 4, 1<<20); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("read: %v", err)
	}
	d.Crash()
	_, l2 := reopen(t, d, clock, flushEvery())
	checkRecords(t, l2, int(l2.LogEndOffset()))
	if n := l2.LogEndOffset(); n != 3 && n != 4 {
		t.Fatalf("LEO %d after restart, want 3 or 4", n)
	}
}

// A failed open leaves no dir to use: it is KAFKA_STORAGE_ERROR too.
func TestOpenLogDirIOError(t *testing.T) {
	fsys := errorfs.Wrap(vfs.Default)
	fsys.Inject(&errorfs.Rule{Op: errorfs.OpReadDir})
	opts := testOptions(newTestClock(), DefaultConfig())
	opts.FS = fsys
	_, err := OpenLogDir(filepath.Join(t.TempDir(), "d"), opts)
	isStorageError(t, "OpenLogDir", err)
}

// The errorfs files still hand the network layer an *os.File for zero-copy
// reads.
func TestFileRegionOnErrorFS(t *testing.T) {
	_, l, _, _ := openFaultyLog(t, DefaultConfig())
	if err := appendOne(l, 0, 0); err != nil {
		t.Fatal(err)
	}
	d, err := l.Read(0, 1, 1<<20)
	if err != nil || d.Region.File == nil {
		t.Fatalf("read: %+v %v", d, err)
	}
	if _, ok := any(d.Region.File).(*os.File); !ok {
		t.Fatal("region file is not an *os.File")
	}
}

// Readers running while appends fail never see part of a failed append:
// every read returns whole, valid batches below the LEO the failed append
// left, or KAFKA_STORAGE_ERROR once the dir is offline.
func TestReadersDuringAFailure(t *testing.T) {
	cfg := flushEvery() // the fsync after the write fails: the batch was whole in the file
	d, l, _, fsys := openFaultyLog(t, cfg)
	for i := 0; i < 20; i++ {
		if err := appendOne(l, 0, i); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				batches, err := l.ReadBatches(0, 1<<40, 1<<20)
				if errors.Is(err, kerr.KafkaStorageError) {
					return
				}
				if err == nil && len(batches) > 0 && batches[len(batches)-1].Header.NextOffset() > 20 {
					err = fmt.Errorf("read up to offset %d, past the last append that succeeded", batches[len(batches)-1].Header.NextOffset())
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	fsys.Inject(&errorfs.Rule{Op: errorfs.OpSync, Path: "*.log"})
	isStorageError(t, "append", appendOne(l, 0, 20))
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	if d.Offline() == nil || l.LogEndOffset() != 20 {
		t.Fatalf("offline %v, LEO %d, want offline at 20", d.Offline(), l.LogEndOffset())
	}
}
