package errorfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"tidemark/storage/vfs"
)

func TestRuleSkipStickyAndPath(t *testing.T) {
	r := &Rule{Op: OpWrite, Path: "*.log", Skip: 2}
	ops := []Op{{OpWrite, "/d/a.log"}, {OpSync, "/d/a.log"}, {OpWrite, "/d/a.index"}, {OpWrite, "/d/b.log"}, {OpWrite, "/d/a.log"}, {OpWrite, "/d/a.log"}}
	var failed []int
	for i, op := range ops {
		if r.MaybeError(op) != nil {
			failed = append(failed, i)
		}
	}
	if len(failed) != 1 || failed[0] != 4 || r.Fired() != 1 {
		t.Fatalf("failed ops %v (fired %d), want only the third matching write (4)", failed, r.Fired())
	}
	sticky := &Rule{Op: OpSync, Sticky: true}
	for i := 0; i < 3; i++ {
		if sticky.MaybeError(Op{OpSync, "x"}) == nil {
			t.Fatalf("sticky rule let sync %d through", i)
		}
	}
}

func TestWrappedFS(t *testing.T) {
	dir := t.TempDir()
	fsys := Wrap(vfs.Default)
	if vfs.Root(fsys) != vfs.Default {
		t.Fatal("Root does not unwrap to the OS file system")
	}
	f, err := fsys.OpenFile(filepath.Join(dir, "a.log"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if vfs.OSFile(f) == nil {
		t.Fatal("OSFile does not reach the *os.File")
	}
	// Torn: half the bytes land; late: all of them land; both still fail.
	for _, tc := range []struct {
		rule *Rule
		want int64
	}{
		{&Rule{Op: OpWrite, Torn: true}, 5},
		{&Rule{Op: OpWrite, Late: true}, 10},
		{&Rule{Op: OpWrite}, 0},
	} {
		if err := f.Truncate(0); err != nil {
			t.Fatal(err)
		}
		fsys.Inject(tc.rule)
		_, err := f.WriteAt([]byte("0123456789"), 0)
		var pe *fs.PathError
		if !errors.Is(err, ErrInjected) || !errors.As(err, &pe) || pe.Op != "write" {
			t.Fatalf("write: %v, want an injected *fs.PathError", err)
		}
		fsys.Inject(nil)
		if st, _ := f.Stat(); st.Size() != tc.want {
			t.Fatalf("%+v: file holds %d bytes, want %d", tc.rule, st.Size(), tc.want)
		}
	}
	fsys.Inject(&Rule{Op: OpRename})
	if err := fsys.Rename(filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")); !errors.Is(err, ErrInjected) {
		t.Fatalf("rename: %v", err)
	}
	fsys.Inject(nil)
	if err := fsys.Rename(filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")); err != nil {
		t.Fatalf("rename with nothing injected: %v", err)
	}
}
