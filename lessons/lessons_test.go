package lessons

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"tidemark/events"
	"tidemark/i18n"
	"tidemark/server/labs"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newService(t *testing.T, max int) *Service {
	t.Helper()
	ls, err := labs.New(labs.Options{Root: filepath.Join(t.TempDir(), "lessons"), MaxClusters: max, SweepInterval: -1, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewService(Options{Labs: ls, Speed: SpeedInstant, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); ls.Close() })
	return s
}

// walk runs every step of a run, predicting the first choice, and fails
// on a broken step, a failed check or a prediction whose answer is not
// exactly one choice.
func walk(t *testing.T, r *Run) {
	t.Helper()
	for i, st := range r.Lesson.Steps {
		var err error
		if st.Predict != nil {
			if err := r.Next(); !errors.Is(err, ErrPredictFirst) {
				t.Fatalf("step %d: Next without a prediction: %v", i+1, err)
			}
			err = r.Predict(st.Predict.Choices[0].ID)
		} else {
			err = r.Next()
		}
		if err != nil {
			t.Fatalf("step %d (%s): %v", i+1, st.Title.En, err)
		}
		s := r.State().Steps[i]
		for _, c := range s.Outcome.Checks {
			if !c.Pass {
				t.Errorf("step %d (%s): check %q failed: got %s\n%s", i+1, st.Title.En, c.Name.En, c.Got.En, says(s.Outcome))
			}
		}
		var texts []Text
		texts = append(texts, s.Outcome.Says...)
		for _, c := range s.Outcome.Checks {
			texts = append(texts, c.Name, c.Got)
		}
		if p := s.Prediction; p != nil {
			for _, c := range p.Choices {
				if c.Why == nil {
					t.Errorf("step %d: choice %s shows no why after the step ran", i+1, c.ID)
				} else {
					texts = append(texts, *c.Why)
				}
			}
		}
		for _, x := range texts {
			for _, p := range zhProblems(x) {
				t.Errorf("step %d: %s", i+1, p)
			}
			for _, l := range i18n.Languages() {
				if v := x.In(l); strings.TrimSpace(v) == "" || strings.Contains(v, "%!") {
					t.Errorf("step %d: outcome text %q in %s: %q", i+1, x.En, l, v)
				}
			}
		}
		if len(s.Outcome.Checks) == 0 && st.Predict == nil && len(s.Outcome.Says) == 0 {
			t.Errorf("step %d reports nothing", i+1)
		}
		if p := s.Prediction; p != nil && len(p.Correct) != 1 {
			t.Errorf("step %d: choices that held: %v, want exactly one\n%s", i+1, p.Correct, says(s.Outcome))
		}
	}
	if err := r.Next(); !errors.Is(err, ErrAtEnd) {
		t.Fatalf("Next at the end: %v", err)
	}
}

func says(o *Outcome) string {
	var b strings.Builder
	for _, s := range o.Says {
		b.WriteString("  " + s.En + "\n")
	}
	for _, c := range o.Checks {
		b.WriteString("  check " + c.Name.En + ": " + c.Got.En + "\n")
	}
	return b.String()
}

// TestEveryLesson runs each lesson end to end on its own real cluster,
// asserting every check and that each prediction has one true answer, then
// steps Back through the whole run and forward again: the rebuilt lanes at
// each boundary equal those recorded on the way.
func TestEveryLesson(t *testing.T) {
	s := newService(t, 2)
	sem := make(chan struct{}, 2) // the Labs bound, and the machine's two cores
	for _, l := range All() {
		t.Run(l.ID, func(t *testing.T) {
			t.Parallel()
			sem <- struct{}{}
			defer func() { <-sem }()
			r, err := s.Start("", l.ID, SpeedInstant)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Stop(r.ID)
			walk(t, r)
			// Back to the start and forward again through recorded states.
			final := r.State()
			var boundaries []events.Snapshot
			for i := len(l.Steps); i > 0; i-- {
				if err := r.Back(); err != nil {
					t.Fatal(err)
				}
				st := r.State()
				if st.Cursor != i-1 || st.Live {
					t.Fatalf("after Back: cursor %d live %v", st.Cursor, st.Live)
				}
				boundaries = append(boundaries, st.Lanes)
			}
			if err := r.Back(); !errors.Is(err, ErrAtStart) {
				t.Fatalf("Back at the start: %v", err)
			}
			if got := boundaries[len(boundaries)-1]; got.Seq != r.base.Seq || !sameLanes(got, r.base) {
				t.Fatal("Back to the start does not show the lanes after setup")
			}
			for range l.Steps {
				if err := r.Next(); err != nil {
					t.Fatal(err)
				}
			}
			// The replayed final state equals the cluster's own snapshot at that Seq.
			r.mu.Lock()
			replayed := r.snapshotAt(r.steps[len(r.steps)-1].after)
			r.mu.Unlock()
			if st := r.State(); st.Executed != len(l.Steps) || !st.Done {
				t.Fatalf("after Next through the recorded states: %+v", st.Cursor)
			}
			if replayed.Seq == final.Lanes.Seq && !sameLanes(replayed, final.Lanes) {
				t.Fatalf("replayed lanes differ from the cluster's\nreplayed %+v\nlive %+v", replayed.Topics, final.Lanes.Topics)
			}
		})
	}
}

// sameLanes compares two snapshots without their times.
func sameLanes(a, b events.Snapshot) bool {
	a.Time = b.Time
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

var verbs = regexp.MustCompile(`%[-+# 0-9.]*[a-zA-Z%]`)

// TestEveryTextInEveryLanguage: no lesson text is missing from a language,
// the translations carry the same fmt verbs, and the Chinese texts are not
// English left untranslated.
func TestEveryTextInEveryLanguage(t *testing.T) {
	check := func(where string, x Text) {
		t.Helper()
		for _, l := range i18n.Languages() {
			if strings.TrimSpace(x.In(l)) == "" {
				t.Errorf("%s: no %s text (English: %q)", where, l, x.En)
			}
		}
		if a, b, c := verbs.FindAllString(x.En, -1), verbs.FindAllString(x.Hans, -1), verbs.FindAllString(x.Hant, -1); !slices.Equal(a, b) || !slices.Equal(a, c) {
			t.Errorf("%s: verbs differ: %v %v %v", where, a, b, c)
		}
		if x.Hans != "" && x.Hans == x.En && regexp.MustCompile(`[a-z]{4,} [a-z]{4,} [a-z]{4,}`).MatchString(x.En) {
			t.Errorf("%s: Chinese text is the English one", where)
		}
	}
	if len(All()) < 14 {
		t.Fatalf("%d lessons, want at least 14", len(All()))
	}
	seen := map[string]bool{}
	for _, l := range All() {
		if seen[l.ID] || ByID(l.ID) != l {
			t.Errorf("lesson id %s not unique", l.ID)
		}
		seen[l.ID] = true
		check(l.ID+" title", l.Title)
		check(l.ID+" summary", l.Summary)
		for i, st := range l.Steps {
			where := l.ID + " step " + string(rune('1'+i))
			check(where+" title", st.Title)
			check(where+" explain", st.Explain)
			if p := st.Predict; p != nil {
				check(where+" question", p.Question)
				if len(p.Choices) < 2 {
					t.Errorf("%s: fewer than two choices", where)
				}
				for _, c := range p.Choices {
					check(where+" choice "+c.ID, c.Text)
					if c.Holds == nil {
						t.Errorf("%s: choice %s cannot be verified", where, c.ID)
					}
				}
			}
		}
	}
	// Texts made while a lesson runs (results, check names) are checked in
	// every language by TestEveryLesson's walk.
}

// TestRunControls: predicting where none is asked, unknown choices and
// speeds, Back at the start, and Replay.
func TestRunControls(t *testing.T) {
	s := newService(t, 1)
	if _, err := s.Start("", "no-such", ""); !errors.Is(err, ErrUnknownLesson) {
		t.Fatalf("unknown lesson: %v", err)
	}
	r, err := s.Start("", "08-hw", "")
	if err != nil {
		t.Fatal(err)
	}
	if r.Speed() != SpeedInstant {
		t.Fatalf("default speed %s", r.Speed())
	}
	if _, err := s.Start("", "08-hw", ""); !errors.Is(err, labs.ErrFull) {
		t.Fatalf("second run with a bound of 1: %v", err)
	}
	if err := r.Back(); !errors.Is(err, ErrAtStart) {
		t.Fatalf("Back at start: %v", err)
	}
	if err := r.Predict("x"); !errors.Is(err, ErrNoPrediction) && !errors.Is(err, ErrUnknownChoice) {
		t.Fatalf("Predict: %v", err)
	}
	if err := r.SetSpeed("warp"); !errors.Is(err, ErrBadSpeed) {
		t.Fatalf("speed: %v", err)
	}
	if err := r.SetSpeed(SpeedSlow); err != nil || r.Speed() != SpeedSlow {
		t.Fatal(err)
	}
	r.SetSpeed(SpeedInstant)
	if err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if err := r.Replay(); err != nil || r.State().Cursor != 0 {
		t.Fatalf("replay: %v", err)
	}
	if err := s.Stop(r.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(r.ID); !errors.Is(err, ErrUnknownRun) {
		t.Fatalf("stopped run: %v", err)
	}
	if err := r.Next(); !errors.Is(err, ErrUnknownRun) {
		t.Fatalf("Next on a stopped run: %v", err)
	}
	if !reflect.DeepEqual(Speeds(), []Speed{SpeedInstant, SpeedFast, SpeedNormal, SpeedSlow}) {
		t.Fatal("speeds")
	}
}
