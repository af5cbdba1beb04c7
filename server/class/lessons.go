package class

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"tidemark/lessons"
)

// A teacher's own lessons: a .lesson file the teacher uploads is checked
// by the lesson language itself (lessons.Validate), kept with the roster
// (Dir/lessons/<id>.lesson) and added to the lesson catalog, which every
// seat's lesson list reads: the class has it at once, and after a restart
// on the same data directory.

// MaxLessonBytes bounds an uploaded lesson file: the longest built-in
// lesson is about 20 KiB.
const MaxLessonBytes = 256 << 10

// lessonsDir is where the class keeps its teacher's lessons.
func (c *Class) lessonsDir() string { return filepath.Join(c.opts.Dir, "lessons") }

// loadLessons adds the class's kept lessons to the catalog at Open. A file
// the lesson language refuses now (a newer lab) is logged, not fatal: the
// class still opens, without them.
func (c *Class) loadLessons() {
	if _, err := os.Stat(c.lessonsDir()); err != nil {
		return
	}
	if _, err := lessons.AddDir(c.lessonsDir()); err != nil {
		c.opts.Logger.Warn("class: the teacher's lessons are refused", "dir", c.lessonsDir(), "err", err)
	}
}

// ErrLessonTooBig: an uploaded lesson file over MaxLessonBytes.
var ErrLessonTooBig = fmt.Errorf("a lesson file is at most %d KiB", MaxLessonBytes>>10)

// AddLesson checks src, a lesson file the teacher named file, keeps it as
// Dir/lessons/<id>.lesson (replacing the kept lesson of that id) and adds
// it to the catalog. A refusal is the lesson language's *lessons.ParseError
// (file, line, what is wrong); nothing is kept then.
func (c *Class) AddLesson(file string, src []byte) (*lessons.Lesson, error) {
	if len(src) > MaxLessonBytes {
		return nil, ErrLessonTooBig
	}
	c.lessonsMu.Lock()
	defer c.lessonsMu.Unlock()
	dir := c.lessonsDir()
	l, err := lessons.Validate(dir, file, src)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, l.ID+lessons.Ext)
	old, oldErr := os.ReadFile(path)
	if err := writeSynced(dir, path, src); err != nil {
		return nil, err
	}
	if _, err := lessons.AddDir(dir); err != nil {
		// Checked above, so only a file changed meanwhile gets here: put
		// back what was kept.
		if oldErr == nil {
			err = errors.Join(err, writeSynced(dir, path, old))
		} else {
			err = errors.Join(err, os.Remove(path))
		}
		return nil, err
	}
	return lessons.ByID(l.ID), nil
}

// writeSynced writes data to path through a temporary file in dir, fsynced
// and renamed, then fsyncs dir: a crash leaves the old file or the new.
func writeSynced(dir, path string, data []byte) error {
	f, err := os.CreateTemp(dir, ".upload-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
