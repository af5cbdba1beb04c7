// Package errorfs wraps a vfs.FS and fails chosen operations, so tests can
// show what the log does when a write, an fsync, a truncate, a rename or an
// open fails. Pebble's vfs/errorfs is the model: an Injector looks at each
// operation before it runs and may return an error instead of running it.
package errorfs

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"sync/atomic"

	"tidemark/storage/vfs"
)

// ErrInjected is the cause of every injected failure; the operation returns
// it inside an *fs.PathError, as the OS reports an I/O error.
var ErrInjected = errors.New("injected I/O error")

// ErrInjectedTorn is an injected write failure after the first half of the
// bytes reached the file, as a write cut short by a failing disk leaves it.
// errors.Is(ErrInjectedTorn, ErrInjected) holds.
var ErrInjectedTorn = fmt.Errorf("%w (torn: half the bytes were written)", ErrInjected)

// ErrInjectedLate is an injected write failure reported after all the
// bytes reached the file, as an I/O error surfacing late leaves it.
// errors.Is(ErrInjectedLate, ErrInjected) holds.
var ErrInjectedLate = fmt.Errorf("%w (late: the bytes were written)", ErrInjected)

// OpKind is a kind of file-system operation.
type OpKind int

// The operations an Injector sees.
const (
	OpOpen     OpKind = iota // OpenFile, including creating a file
	OpRead                   // File.Read and ReadAt
	OpWrite                  // File.Write and WriteAt
	OpSync                   // File.Sync (of a file or a directory)
	OpTruncate               // File.Truncate
	OpRename                 // FS.Rename
	OpRemove                 // FS.Remove and RemoveAll
	OpMkdir                  // FS.Mkdir and MkdirAll
	OpStat                   // FS.Stat and File.Stat
	OpReadDir                // FS.ReadDir
)

var opNames = [...]string{"open", "read", "write", "sync", "truncate", "rename", "remove", "mkdir", "stat", "readdir"}

// String returns the operation's name, as used in the *fs.PathError.
func (k OpKind) String() string {
	if k < 0 || int(k) >= len(opNames) {
		return fmt.Sprintf("op(%d)", int(k))
	}
	return opNames[k]
}

// Op is one operation about to run: its kind and the path it acts on (the
// old name for a rename).
type Op struct {
	Kind OpKind
	Path string
}

// Injector decides, before each operation, whether it fails: a non-nil
// error is returned in place of running it.
type Injector interface {
	MaybeError(Op) error
}

// InjectorFunc is an Injector written as a function.
type InjectorFunc func(Op) error

// MaybeError calls f.
func (f InjectorFunc) MaybeError(op Op) error { return f(op) }

// Any returns an Injector that fails an operation if any of injs does
// (each is asked in turn until one fails it).
func Any(injs ...Injector) Injector {
	return InjectorFunc(func(op Op) error {
		for _, inj := range injs {
			if err := inj.MaybeError(op); err != nil {
				return err
			}
		}
		return nil
	})
}

// Rule fails the operations of one kind, optionally only on paths whose
// base name matches a glob: it lets Skip matching operations through, fails
// the next one, and with Sticky every later one too (a dead disk). The zero
// Skip fails the very next match. A Rule is safe for concurrent use.
type Rule struct {
	Op     OpKind
	Path   string // filepath.Match pattern for the base name; "" matches every path
	Skip   int    // matching operations let through before the first failure
	Sticky bool   // keep failing every matching operation after the first failure
	Torn   bool   // a failing write first writes half its bytes (ErrInjectedTorn)
	Late   bool   // a failing write first writes all its bytes (ErrInjectedLate)

	mu    sync.Mutex
	seen  int
	fired int
}

// MaybeError counts op if it matches and fails it if its turn has come.
func (r *Rule) MaybeError(op Op) error {
	if op.Kind != r.Op {
		return nil
	}
	if r.Path != "" {
		if ok, _ := filepath.Match(r.Path, filepath.Base(op.Path)); !ok {
			return nil
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen++
	if r.seen <= r.Skip || r.fired > 0 && !r.Sticky {
		return nil
	}
	r.fired++
	switch {
	case r.Torn && op.Kind == OpWrite:
		return ErrInjectedTorn
	case r.Late && op.Kind == OpWrite:
		return ErrInjectedLate
	}
	return ErrInjected
}

// Fired returns how many operations the rule has failed.
func (r *Rule) Fired() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fired
}

// FS is a vfs.FS that asks its Injector before each operation. With no
// Injector set it only passes operations through.
type FS struct {
	fs  vfs.FS
	inj atomic.Pointer[Injector]
}

// Wrap returns an FS over fsys that injects nothing until Inject is called.
func Wrap(fsys vfs.FS) *FS { return &FS{fs: fsys} }

// Inject makes inj decide every later operation, on files already open too;
// nil stops injecting.
func (e *FS) Inject(inj Injector) {
	if inj == nil {
		e.inj.Store(nil)
		return
	}
	e.inj.Store(&inj)
}

// Unwrap returns the wrapped FS (see vfs.Root).
func (e *FS) Unwrap() vfs.FS { return e.fs }

func (e *FS) maybeError(kind OpKind, path string) error {
	p := e.inj.Load()
	if p == nil {
		return nil
	}
	if err := (*p).MaybeError(Op{kind, path}); err != nil {
		return &fs.PathError{Op: kind.String(), Path: path, Err: err}
	}
	return nil
}

// OpenFile implements vfs.FS.
func (e *FS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	if err := e.maybeError(OpOpen, name); err != nil {
		return nil, err
	}
	f, err := e.fs.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &file{File: f, fs: e}, nil
}

// Mkdir implements vfs.FS.
func (e *FS) Mkdir(name string, perm fs.FileMode) error {
	if err := e.maybeError(OpMkdir, name); err != nil {
		return err
	}
	return e.fs.Mkdir(name, perm)
}

// MkdirAll implements vfs.FS.
func (e *FS) MkdirAll(name string, perm fs.FileMode) error {
	if err := e.maybeError(OpMkdir, name); err != nil {
		return err
	}
	return e.fs.MkdirAll(name, perm)
}

// Remove implements vfs.FS.
func (e *FS) Remove(name string) error {
	if err := e.maybeError(OpRemove, name); err != nil {
		return err
	}
	return e.fs.Remove(name)
}

// RemoveAll implements vfs.FS.
func (e *FS) RemoveAll(name string) error {
	if err := e.maybeError(OpRemove, name); err != nil {
		return err
	}
	return e.fs.RemoveAll(name)
}

// Rename implements vfs.FS.
func (e *FS) Rename(oldname, newname string) error {
	if err := e.maybeError(OpRename, oldname); err != nil {
		return err
	}
	return e.fs.Rename(oldname, newname)
}

// ReadDir implements vfs.FS.
func (e *FS) ReadDir(name string) ([]fs.DirEntry, error) {
	if err := e.maybeError(OpReadDir, name); err != nil {
		return nil, err
	}
	return e.fs.ReadDir(name)
}

// Stat implements vfs.FS.
func (e *FS) Stat(name string) (fs.FileInfo, error) {
	if err := e.maybeError(OpStat, name); err != nil {
		return nil, err
	}
	return e.fs.Stat(name)
}

// file asks its FS's Injector before each operation; Close never fails.
type file struct {
	vfs.File
	fs *FS
}

// Unwrap returns the wrapped file (see vfs.OSFile).
func (f *file) Unwrap() vfs.File { return f.File }

func (f *file) Read(p []byte) (int, error) {
	if err := f.fs.maybeError(OpRead, f.Name()); err != nil {
		return 0, err
	}
	return f.File.Read(p)
}

func (f *file) ReadAt(p []byte, off int64) (int, error) {
	if err := f.fs.maybeError(OpRead, f.Name()); err != nil {
		return 0, err
	}
	return f.File.ReadAt(p, off)
}

func (f *file) Write(p []byte) (int, error) {
	err := f.fs.maybeError(OpWrite, f.Name())
	if err == nil {
		return f.File.Write(p)
	}
	n, _ := f.File.Write(p[:written(err, len(p))])
	return n, err
}

func (f *file) WriteAt(p []byte, off int64) (int, error) {
	err := f.fs.maybeError(OpWrite, f.Name())
	if err == nil {
		return f.File.WriteAt(p, off)
	}
	n, _ := f.File.WriteAt(p[:written(err, len(p))], off)
	return n, err
}

// written is how many of n bytes a write failing with err still writes.
func written(err error, n int) int {
	switch {
	case errors.Is(err, ErrInjectedLate):
		return n
	case errors.Is(err, ErrInjectedTorn):
		return n / 2
	}
	return 0
}

func (f *file) Stat() (fs.FileInfo, error) {
	if err := f.fs.maybeError(OpStat, f.Name()); err != nil {
		return nil, err
	}
	return f.File.Stat()
}

func (f *file) Sync() error {
	if err := f.fs.maybeError(OpSync, f.Name()); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *file) Truncate(size int64) error {
	if err := f.fs.maybeError(OpTruncate, f.Name()); err != nil {
		return err
	}
	return f.File.Truncate(size)
}
