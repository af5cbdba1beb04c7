package storage

import (
	"errors"
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
