// Package vfs is the small file-system interface storage does its file I/O
// through, so that tests can put a fault-injecting file system (package
// errorfs) between the log and the disk. Default is the operating system's,
// with nothing in between: its files are *os.File.
//
// The shape follows pebble's vfs: an FS opens Files by path; wrappers embed
// another FS and expose it with Unwrap, and Root finds the FS underneath.
package vfs

import (
	"io"
	"io/fs"
	"os"
)

// FS is the file-system operations storage uses. Paths are OS paths.
type FS interface {
	// OpenFile opens a file (or, with os.O_RDONLY, a directory, to fsync it)
	// as os.OpenFile does.
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	Mkdir(name string, perm fs.FileMode) error
	MkdirAll(name string, perm fs.FileMode) error
	// Remove deletes a file or an empty directory; a missing one is an error
	// that errors.Is(err, fs.ErrNotExist).
	Remove(name string) error
	RemoveAll(name string) error
	Rename(oldname, newname string) error
	ReadDir(name string) ([]fs.DirEntry, error)
	Stat(name string) (fs.FileInfo, error)
}

// File is an open file. *os.File implements it.
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.WriterAt
	io.Closer
	Name() string
	Stat() (fs.FileInfo, error)
	// Sync is fsync: it returns once the file's data is on stable storage.
	Sync() error
	Truncate(size int64) error
}

// Default is the operating system's file system.
var Default FS = osFS{}

type osFS struct{}

func (osFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		// A nil *os.File in a File interface would not be nil.
		return nil, err
	}
	return f, nil
}

func (osFS) Mkdir(name string, perm fs.FileMode) error    { return os.Mkdir(name, perm) }
func (osFS) MkdirAll(name string, perm fs.FileMode) error { return os.MkdirAll(name, perm) }
func (osFS) Remove(name string) error                     { return os.Remove(name) }
func (osFS) RemoveAll(name string) error                  { return os.RemoveAll(name) }
func (osFS) Rename(oldname, newname string) error         { return os.Rename(oldname, newname) }
func (osFS) ReadDir(name string) ([]fs.DirEntry, error)   { return os.ReadDir(name) }
func (osFS) Stat(name string) (fs.FileInfo, error)        { return os.Stat(name) }

// Root returns the file system underneath every wrapper of fsys (each
// wrapper has an Unwrap method returning the FS it wraps); fsys itself if it
// wraps none.
func Root(fsys FS) FS {
	for {
		w, ok := fsys.(interface{ Unwrap() FS })
		if !ok {
			return fsys
		}
		fsys = w.Unwrap()
	}
}

// OSFile returns the *os.File underneath f and its wrappers (each has an
// Unwrap method returning the File it wraps), for zero-copy sends with
// sendfile(2); nil if f is not backed by an OS file.
func OSFile(f File) *os.File {
	for {
		switch v := f.(type) {
		case *os.File:
			return v
		case interface{ Unwrap() File }:
			f = v.Unwrap()
		default:
			return nil
		}
	}
}

// ReadFile reads the whole named file, as os.ReadFile does.
func ReadFile(fsys FS, name string) ([]byte, error) {
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// SyncDir fsyncs a directory, making the names created, renamed or removed
// in it durable.
func SyncDir(fsys FS, dir string) error {
	d, err := fsys.OpenFile(dir, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
