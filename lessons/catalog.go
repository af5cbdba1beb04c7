package lessons

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"sync"
)

// The built-in lessons are files in data/, one lesson each; a teacher adds
// more with AddDir (the --lessons-dir flag).

//go:embed data/*.lesson
var builtin embed.FS

// Ext is the file extension of a lesson file.
const Ext = ".lesson"

var (
	catalogMu   sync.RWMutex // guards catalog
	catalog     []*Lesson
	builtinOnce sync.Once
)

// loadBuiltin fills the catalog with the built-in lessons once, after the
// package's vocabulary is initialised. A broken built-in lesson is a bug
// that TestBuiltinLessonsParse reports; here it panics.
func loadBuiltin() {
	builtinOnce.Do(func() {
		ls, err := loadFS(builtin, "data", nil, "")
		if err != nil {
			panic("lessons: a built-in lesson is broken: " + err.Error())
		}
		catalogMu.Lock()
		catalog = append(ls, catalog...)
		catalogMu.Unlock()
	})
}

// loadFS parses and compiles every lesson file of dir, and checks the set
// together with have: ids unique, builds-on naming earlier lessons.
func loadFS(fsys fs.FS, dir string, have []*Lesson, shownDir string) ([]*Lesson, error) {
	names, err := fs.Glob(fsys, path.Join(dir, "*"+Ext))
	if err != nil {
		return nil, err
	}
	var out []*Lesson
	for _, name := range names {
		src, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		s, err := ParseScript(filepath.Join(shownDir, path.Base(name)), src)
		if err != nil {
			return nil, err
		}
		l, err := compile(s)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	all := append(slices.Clone(have), out...)
	if err := checkPath(all); err != nil {
		return nil, err
	}
	return out, nil
}

// checkPath checks lessons together: unique ids and numbers, and each
// builds-on naming a lesson earlier on the path.
func checkPath(all []*Lesson) error {
	byID := map[string]*Lesson{}
	byNum := map[int]string{}
	for _, l := range all {
		if o := byID[l.ID]; o != nil {
			return parseErr(l.File, 1, "lesson.error.id-taken", l.ID, o.File)
		}
		if o, ok := byNum[l.Number]; ok {
			return parseErr(l.File, 1, "lesson.error.number-taken", l.Number, o)
		}
		byID[l.ID], byNum[l.Number] = l, l.ID
	}
	for _, l := range all {
		for _, b := range l.BuildsOn {
			d := byID[b]
			switch {
			case d == nil:
				return parseErr(l.File, 1, "lesson.error.builds-on-missing", b)
			case d.Number >= l.Number:
				return parseErr(l.File, 1, "lesson.error.builds-on-later", b)
			}
		}
	}
	return nil
}

// AddDir loads every *.lesson file of dir into the catalog, beside the
// built-in ones; loading a directory again replaces what it added before.
// A bad file refuses the whole directory with the file, its line and what
// is wrong; the catalog is unchanged then.
func AddDir(dir string) ([]*Lesson, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("lessons directory: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("lessons directory %s is not a directory", dir)
	}
	loadBuiltin()
	catalogMu.Lock()
	defer catalogMu.Unlock()
	dir = filepath.Clean(dir)
	others := slices.DeleteFunc(slices.Clone(catalog), func(l *Lesson) bool { return filepath.Dir(l.File) == dir })
	ls, err := loadFS(os.DirFS(dir), ".", others, dir)
	if err != nil {
		return nil, err
	}
	catalog = append(others, ls...)
	sortLessons(catalog)
	return ls, nil
}

func sortLessons(ls []*Lesson) {
	sort.SliceStable(ls, func(i, j int) bool { return ls[i].Number < ls[j].Number })
}

// All returns every lesson in the order of the learning path.
func All() []*Lesson {
	loadBuiltin()
	catalogMu.RLock()
	defer catalogMu.RUnlock()
	out := slices.Clone(catalog)
	sortLessons(out)
	return out
}

// ByID returns the lesson with id; nil if there is none.
func ByID(id string) *Lesson {
	loadBuiltin()
	catalogMu.RLock()
	defer catalogMu.RUnlock()
	for _, l := range catalog {
		if l.ID == id {
			return l
		}
	}
	return nil
}

// Validate parses and compiles src, a lesson file shown as file, and checks it
// against the catalog as AddDir(dir) would add it: its id and number free
// (a lesson of dir with the same id is the one it would replace), its
// builds-on naming lessons earlier on the path. It changes nothing; a
// refusal is a *ParseError with the line and what is wrong.
func Validate(dir, file string, src []byte) (*Lesson, error) {
	loadBuiltin()
	s, err := ParseScript(file, src)
	if err != nil {
		return nil, err
	}
	if s.Scenario {
		return nil, parseErr(file, 1, "lesson.error.scenario")
	}
	l, err := compile(s)
	if err != nil {
		return nil, err
	}
	dir = filepath.Clean(dir)
	catalogMu.RLock()
	others := slices.DeleteFunc(slices.Clone(catalog), func(o *Lesson) bool { return filepath.Dir(o.File) == dir && o.ID == l.ID })
	catalogMu.RUnlock()
	if err := checkPath(append(others, l)); err != nil {
		return nil, err
	}
	return l, nil
}

// RemoveDir takes the lessons AddDir(dir) added out of the catalog (a
// class closing takes its teacher's lessons with it).
func RemoveDir(dir string) {
	catalogMu.Lock()
	defer catalogMu.Unlock()
	dir = filepath.Clean(dir)
	catalog = slices.DeleteFunc(catalog, func(l *Lesson) bool { return filepath.Dir(l.File) == dir })
}
