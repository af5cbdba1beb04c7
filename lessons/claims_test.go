package lessons

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tidemark/storage"
)

// TestNamesAreBaseOffsets: the query lesson 02 judges its naming
// prediction by fails for segments named after the previous segment's last
// offset, and for files whose names do not agree.
func TestNamesAreBaseOffsets(t *testing.T) {
	seg := func(base, next int64, name int64) storage.SegmentInfo {
		n := fmt.Sprintf("%020d", name)
		return storage.SegmentInfo{BaseOffset: base, NextOffset: next, Files: [3]string{n + ".log", n + ".index", n + ".timeindex"}}
	}
	if !namesAreBaseOffsets([]storage.SegmentInfo{seg(0, 6, 0), seg(6, 12, 6), seg(12, 13, 12)}) {
		t.Error("base-offset names refused")
	}
	if namesAreBaseOffsets([]storage.SegmentInfo{seg(0, 6, 0), seg(6, 12, 5)}) {
		t.Error("a segment named after the previous one's last offset passes")
	}
	if namesAreBaseOffsets([]storage.SegmentInfo{seg(0, 6, 0), seg(5, 12, 5)}) {
		t.Error("a segment that starts inside the previous one passes")
	}
}

// TestSegmentPredictionAtAnyBatchSize: lesson 02's "how many segments"
// prediction has exactly one right answer, the base-offset rule, also when
// a batch takes 171 bytes (five per segment, the second segment named
// ...05.log, which the wrong rule's old judge, "has ...05.log", took for
// its own).
func TestSegmentPredictionAtAnyBatchSize(t *testing.T) {
	src, err := fs.ReadFile(builtin, "data/02-segments"+Ext)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(src), "lesson 02-segments", "lesson 92-segments-171", 1)
	s = strings.ReplaceAll(s, "do fill logs r 0 1 100", "do fill logs r 0 1 101")
	s = strings.ReplaceAll(s, "do fill logs r 1 12 100", "do fill logs r 1 12 101")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "92-segments-171"+Ext), []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := AddDir(dir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		os.Remove(filepath.Join(dir, "92-segments-171"+Ext))
		AddDir(dir)
	})
	svc := newService(t, 1)
	r, err := svc.Start("", "92-segments-171", SpeedInstant)
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Stop(r.ID)
	walk(t, r)
	st := r.State().Steps[1]
	if p := st.Prediction; p == nil || len(p.Correct) != 1 || p.Correct[0] != "several" {
		t.Fatalf("step 2's right answers: %+v\n%s", st.Prediction, says(st.Outcome))
	}
	if !strings.Contains(says(st.Outcome), "00000000000000000005.log") {
		t.Fatalf("the batches are not 171 bytes (no ...05.log):\n%s", says(st.Outcome))
	}
}
