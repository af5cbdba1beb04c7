package storage

import (
	"errors"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/storage/vfs/errorfs"
)

// TestOutOfDescriptorsIsTransient: a roll, a read of a closed sealed
// segment and a checkpoint write that cannot open a file because the
// process is out of descriptors (EMFILE) or the system is (ENFILE) fail
// with a retriable KAFKA_STORAGE_ERROR, and the log dir stays online: once
// descriptors are back, the same calls succeed and every acknowledged
// record is read back. Before, the first EMFILE took the dir offline and
// the broker halted.
func TestOutOfDescriptorsIsTransient(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE} {
		t.Run(errno.Error(), func(t *testing.T) {
			d, l, clock, fsys := openFaultyLog(t, DefaultConfig())
			short := func(op errorfs.Op) error {
				if op.Kind == errorfs.OpOpen {
					return errno
				}
				return nil
			}
			acked := 0
			for i := 0; i < 7; i++ {
				if i == 3 || i == 6 {
					if err := l.Roll(); err != nil {
						t.Fatal(err)
					}
				}
				if err := appendOne(l, 0, i); err != nil {
					t.Fatal(err)
				}
				acked++
			}
			// Sealed segments idle long enough have their files closed, so
			// reading them needs an open.
			clock.Advance(DefaultIdleFileTimeout * 2)
			if _, err := l.ApplyRetention(0); err != nil {
				t.Fatal(err)
			}

			fsys.Inject(errorfs.InjectorFunc(short))
			check := func(what string, err error) {
				t.Helper()
				var de *DescriptorError
				if !errors.Is(err, kerr.KafkaStorageError) || !errors.Is(err, errno) || !errors.As(err, &de) {
					t.Fatalf("%s out of descriptors: %v, want a transient KAFKA_STORAGE_ERROR", what, err)
				}
				if off := d.Offline(); off != nil {
					t.Fatalf("%s out of descriptors took the dir offline: %v", what, off)
				}
			}
			leo := l.LogEndOffset()
			check("roll", l.Roll())
			if l.LogEndOffset() != leo {
				t.Fatalf("LEO moved from %d to %d on a failed roll", leo, l.LogEndOffset())
			}
			_, err := l.Read(0, leo, 1<<20)
			check("read of a closed sealed segment", err)
			check("replication-offset checkpoint", d.WriteHighWatermarks(map[TopicPartition]int64{demoTP: 3}))

			fsys.Inject(nil)
			if err := l.Roll(); err != nil {
				t.Fatalf("roll once descriptors are back: %v", err)
			}
			for i := 7; i < 10; i++ {
				if err := appendOne(l, 0, i); err != nil {
					t.Fatalf("append %d once descriptors are back: %v", i, err)
				}
				acked++
			}
			if err := d.WriteHighWatermarks(map[TopicPartition]int64{demoTP: 3}); err != nil {
				t.Fatal(err)
			}
			checkRecords(t, l, acked)
		})
	}
}

// TestShortOfFilesClosesSealedSegments: while Options.ShortOfFiles says
// the process is short of descriptors, the retention check closes sealed
// segments idle for ShortIdleFileTimeout rather than IdleFileTimeout: the
// first thing given back. Before, a sealed segment read once held its
// descriptor for 30 s, and a flood of small segments ran the process out.
func TestShortOfFilesClosesSealedSegments(t *testing.T) {
	const partitions = 50
	base := openFDs(t)
	if base < 0 {
		t.Skip("descriptors cannot be counted here")
	}
	var short atomic.Bool
	cfg := DefaultConfig()
	cfg.SegmentBytes = 1024
	clock := newTestClock()
	opts := testOptions(clock, cfg)
	opts.ShortOfFiles = short.Load
	d, err := OpenLogDir(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Crash)
	logs := make([]*Log, partitions)
	for p := range logs {
		if logs[p], err = d.CreateLog(TopicPartition{Topic: "wide", Partition: int32(p)}, cfg); err != nil {
			t.Fatal(err)
		}
		produce(t, logs[p], 0, 0, 4, 1, 700) // one segment per batch
	}
	for _, l := range logs {
		readAll(t, l, l.LogEndOffset())
	}
	clock.Advance(2 * ShortIdleFileTimeout)
	retentionCheck(t, logs)
	if got := openFDs(t) - base; got != 6*partitions {
		t.Fatalf("not short, read %v ago: %d descriptors, want %d", 2*ShortIdleFileTimeout, got, 6*partitions)
	}
	short.Store(true)
	retentionCheck(t, logs)
	if got := openFDs(t) - base; got != 3*partitions {
		t.Fatalf("short of files: %d descriptors, want %d (the active segments' only)", got, 3*partitions)
	}
	for _, l := range logs {
		if got := readAll(t, l, l.LogEndOffset()); len(got) != 4 {
			t.Fatalf("read %d records after closing, want 4", len(got))
		}
	}
}

// TestOutOfDescriptorsAtFirstAppend: a new log's first segment makes its
// files at the first append; when that fails for want of descriptors
// (here the second of its three files), the append fails transiently and
// the next one, with descriptors back, makes them and succeeds. Before the
// segment was left half made and the next append dereferenced its closed
// file.
func TestOutOfDescriptorsAtFirstAppend(t *testing.T) {
	d, l, _, fsys := openFaultyLog(t, DefaultConfig())
	fsys.Inject(errorfs.InjectorFunc(func(op errorfs.Op) error {
		if op.Kind == errorfs.OpOpen && filepath.Ext(op.Path) == IndexFileSuffix {
			return syscall.EMFILE
		}
		return nil
	}))
	err := appendOne(l, 0, 0)
	if !errors.Is(err, kerr.KafkaStorageError) || d.Offline() != nil {
		t.Fatalf("first append out of descriptors: %v (dir offline: %v)", err, d.Offline())
	}
	fsys.Inject(nil)
	if err := appendOne(l, 0, 0); err != nil {
		t.Fatalf("the next append: %v", err)
	}
	checkRecords(t, l, 1)
}
