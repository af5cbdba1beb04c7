package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/time/rate"
)

// StorageError is KAFKA_STORAGE_ERROR: file I/O failed in a log dir, which
// is now offline. Like Kafka (LogDirFailureChannel), Tidemark takes the
// whole log dir offline on the first I/O or fsync error in it, not just the
// log that hit it: a disk that failed once is not trusted again until the
// broker restarts. errors.Is(err, ErrKafkaStorage) holds, and errors.Is and
// errors.As reach the file-system error too.
type StorageError struct {
	Dir string // the log dir that went offline
	Op  string // what was being done, e.g. "append to demo-0"
	Err error  // the file-system error
}

func (e *StorageError) Error() string {
	return fmt.Sprintf("KAFKA_STORAGE_ERROR: log dir %s is offline: %s: %v", e.Dir, e.Op, e.Err)
}

// Unwrap returns kerr.KafkaStorageError and the file-system error.
func (e *StorageError) Unwrap() []error { return []error{ErrKafkaStorage, e.Err} }

// isIOError reports whether err came from the file system (the OS reports
// I/O failures as *fs.PathError, *os.LinkError or *os.SyscallError), as
// opposed to a rejected request (a kerr code) or a closed log.
func isIOError(err error) bool {
	if err == nil {
		return false
	}
	var pe *fs.PathError
	var le *os.LinkError
	var se *os.SyscallError
	var st *StorageError
	return errors.As(err, &pe) || errors.As(err, &le) || errors.As(err, &se) || errors.As(err, &st)
}

// DescriptorError is KAFKA_STORAGE_ERROR for an operation that could not
// open a file because the process (EMFILE) or the system (ENFILE) is out
// of file descriptors. Unlike a *StorageError it leaves the log dir online:
// the operation failed before it changed the log, descriptors come back as
// connections and idle segments close, and the client retries
// (KAFKA_STORAGE_ERROR is retriable). errors.Is(err, ErrKafkaStorage) and
// errors.Is(err, syscall.EMFILE) hold.
type DescriptorError struct {
	Op  string // what was being done, e.g. "append to demo-0"
	Err error  // the file-system error
}

func (e *DescriptorError) Error() string {
	return fmt.Sprintf("KAFKA_STORAGE_ERROR: out of file descriptors (transient, the log dir stays online): %s: %v", e.Op, e.Err)
}

// Unwrap returns kerr.KafkaStorageError and the file-system error.
func (e *DescriptorError) Unwrap() []error { return []error{ErrKafkaStorage, e.Err} }

// offlineAnyway marks an I/O error that takes the dir offline even when it
// is running out of descriptors: the operation had changed the log already.
type offlineAnyway struct{ error }

func (e offlineAnyway) Unwrap() error { return e.error }

// outOfDescriptors reports whether err is EMFILE or ENFILE from an
// operation that left the log unchanged.
func outOfDescriptors(err error) bool {
	var oa offlineAnyway
	return (errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)) && !errors.As(err, &oa)
}

// dirHealth is whether a log dir is online, shared by the dir and its logs.
// It goes offline once and stays so.
type dirHealth struct {
	path    string
	logger  *slog.Logger
	err     atomic.Pointer[StorageError] // the failure that took the dir offline; nil while online
	offline chan struct{}                // closed when err is set

	// short counts DescriptorErrors; shortLog writes one line per
	// interval for them, with the count since the last line.
	short, shortUnlogged atomic.Int64
	shortLog             rate.Sometimes
}

func newDirHealth(path string, logger *slog.Logger) *dirHealth {
	return &dirHealth{path: path, logger: logger, offline: make(chan struct{}),
		shortLog: rate.Sometimes{Interval: 10 * time.Second}}
}

// check returns the error that took the dir offline; nil while online.
// Every call that touches files starts with it.
func (h *dirHealth) check() error {
	if e := h.err.Load(); e != nil {
		return e
	}
	return nil
}

// fail takes the dir offline if err is an I/O error and returns what the
// caller should return: err itself if it is not an I/O error, else a
// *StorageError saying that op (on tp's log, if tp is set) failed. The
// message is only built on failure: fail runs on every read and append.
func (h *dirHealth) fail(op string, tp TopicPartition, err error) error {
	if err == nil || !isIOError(err) {
		return err
	}
	var se *StorageError
	var de *DescriptorError
	if errors.As(err, &se) || errors.As(err, &de) {
		return err
	}
	if tp.Topic != "" {
		op += " " + tp.String()
	}
	if outOfDescriptors(err) {
		h.short.Add(1)
		h.shortUnlogged.Add(1)
		h.shortLog.Do(func() {
			h.logger.Warn("out of file descriptors: the operation fails and is retried; the log dir stays online",
				"dir", h.path, "op", op, "err", err, "failures", h.shortUnlogged.Swap(0))
		})
		return &DescriptorError{Op: op, Err: err}
	}
	se = &StorageError{Dir: h.path, Op: op, Err: err}
	if h.err.CompareAndSwap(nil, se) {
		h.logger.Error("log dir offline: I/O error", "dir", h.path, "op", op, "err", err)
		close(h.offline)
	} else {
		h.logger.Error("I/O error in an offline log dir", "dir", h.path, "op", op, "err", err)
	}
	return se
}

// Offline returns the *StorageError that took the log dir offline, nil
// while it is online. Once offline, every call on the dir or its logs that
// would touch files (appends, truncations, flushes, reads, checkpoint
// writes, CreateLog, DeleteLog) returns that error without trying; Close
// writes nothing more, so the next open recovers.
func (d *LogDir) Offline() error { return d.health.check() }

// OfflineC returns a channel closed when the log dir goes offline, for a
// broker to learn it (Kafka then moves the dir's leaderships away and
// answers KAFKA_STORAGE_ERROR). Offline says why.
func (d *LogDir) OfflineC() <-chan struct{} { return d.health.offline }

// Offline returns the error that took the log's dir offline; nil while it
// is online.
func (l *Log) Offline() error { return l.env.health.check() }
