package experiment

import (
	"errors"
	"strings"
	"testing"
	"tidemark/i18n"
	"time"

	"tidemark/lessons"
)

// TestService: an experiment runs in the background; its state shows each
// run as it ends and, once done, the files; a second one waits its turn,
// and past MaxQueued one is refused; a bad file is a ParseError.
func TestService(t *testing.T) {
	s := NewService(ServiceOptions{MaxQueued: 2})
	defer s.Close()
	src := []byte(strings.Replace(small, "seeds 3 4", "seeds 3", 1))
	if _, err := s.Start("bad.experiment", []byte("experiment x\n"), 0); !errors.As(err, new(*lessons.ParseError)) {
		t.Fatalf("a bad file: %v", err)
	}
	a, err := s.Start("small.experiment", src, 0)
	if err != nil || a.Progress.Total != 2 {
		t.Fatal(err, a)
	}
	b, err := s.Start("small.experiment", src, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Start("small.experiment", src, 0); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("a third with two waiting: %v", err)
	}
	for _, id := range []string{a.ID, b.ID} {
		var st State
		for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
			if st, err = s.Get(id); err != nil || st.Done() || time.Now().After(deadline) {
				break
			}
		}
		if err != nil || st.Phase != PhaseDone || len(st.Runs) != 2 || len(st.Files) != 4 {
			t.Fatalf("%v: %+v", err, st)
		}
		if _, ok := s.Recording(id, 1); !ok {
			t.Errorf("%s: no recording of run 1", id)
		}
		if b, err := s.File(id, "summary.csv", i18n.English); err != nil || !strings.HasPrefix(string(b), "topic,faults,workload") {
			t.Fatalf("summary.csv: %v %s", err, b)
		}
		// The report and findings in the reader's language.
		if b, err := s.File(id, "report.md", i18n.SimplifiedChinese); err != nil || !strings.Contains(string(b), "## 发现") || !strings.Contains(string(b), "结论 `lost faults=crash >= 0` 成立") {
			t.Fatalf("report.md in zh-Hans: %v %s", err, b)
		}
		if zh := s.In(st, i18n.TraditionalChinese); len(zh.Findings) != len(st.Findings) || !strings.HasPrefix(zh.Findings[0], "結論") || !strings.HasPrefix(st.Findings[0], "The claim") {
			t.Fatalf("findings %q in zh-Hant, %q kept", zh.Findings, st.Findings)
		}
	}
	if _, err := s.File(a.ID, "nope.csv", i18n.English); !errors.Is(err, ErrUnknown) {
		t.Fatalf("a file it has not: %v", err)
	}
	if l := s.List(); len(l) != 2 || l[0].ID != b.ID {
		t.Fatalf("list %+v", l)
	}
}
