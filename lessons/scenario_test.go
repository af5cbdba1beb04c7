package lessons

import (
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rewrite makes TestScenarios write what each show line printed into the
// scenario files instead of comparing (see transcript.go).
var rewrite = flag.Bool("rewrite", false, "write the scenarios' show blocks from what they printed")

// TestScenarios plays every file of scenarios/ on each back-end it names
// and under each of its fencing rules; a failure prints the lanes. With
// -rewrite it transcribes the plays into the files' show blocks.
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("scenarios/*.scenario")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		s, err := ParseScript(file, src)
		if err != nil {
			t.Fatal(err)
		}
		if !s.Scenario {
			t.Fatalf("%s: want a scenario line, not a lesson", file)
		}
		shown := map[string]Shown{}
		for _, run := range s.Runs() {
			t.Run(strings.TrimSuffix(filepath.Base(file), ".scenario")+"/"+run.String(), func(t *testing.T) {
				if *rewrite {
					out, err := TranscribeScenario(context.Background(), s, run, t.TempDir())
					if err != nil {
						t.Fatal(err)
					}
					shown[run.String()] = out
					return
				}
				if err := RunScenario(context.Background(), s, run, t.TempDir()); err != nil {
					t.Fatal(err)
				}
			})
		}
		if *rewrite && len(shown) == len(s.Runs()) {
			if out := RewriteShows(src, s, s.Runs(), shown); string(out) != string(src) {
				if err := os.WriteFile(file, out, 0o644); err != nil {
					t.Fatal(err)
				}
				t.Logf("%s: show blocks rewritten", file)
			}
		}
	}
}

// TestScenarioFailurePrintsLanes: a check that does not hold names its
// line and shows the lanes, on both back-ends.
func TestScenarioFailurePrintsLanes(t *testing.T) {
	src := `scenario wrong
brokers 2
fencing zookeeper
backends rules cluster
setup
  do create-topic t rf=2
step
  do produce t m1 acks=1
  check values 1 t == [m2]
`
	s, err := ParseScript("wrong.scenario", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range s.Runs() {
		err := RunScenario(context.Background(), s, run, t.TempDir())
		var se *ScenarioError
		if !errors.As(err, &se) || se.Line != 9 || !strings.Contains(se.Lanes, "m1") {
			t.Errorf("%s: %v, want a failure at line 9 with lanes holding m1", run, err)
		}
	}
}

// TestScenarioRulesVocabulary: a file that runs on the rules may only use
// what the rules back-end has; the parser says which line.
func TestScenarioRulesVocabulary(t *testing.T) {
	src := "scenario x\nbrokers 2\nbackends rules\nsetup\n  do create-topic t rf=2\nstep\n  do fail-disk 1\n"
	_, err := ParseScript("x.scenario", []byte(src))
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Line != 7 || !strings.Contains(pe.Msg, "rules") {
		t.Fatalf("got %v, want a refusal at line 7", err)
	}
}

// TestParseScenarioErrors: what a scenario adds to the language (expect,
// quoted values, rules-only vocabulary, hw-checkpoint-interval) is refused
// with its line and what is wrong.
func TestParseScenarioErrors(t *testing.T) {
	const base = "scenario s\nbrokers 2\nfencing zookeeper\nbackends rules\nsetup\n  do create-topic t rf=2\nstep\n  do produce t m1 acks=1\n  expect lost t m1\n  check truncation-reason 1 t == \"a and b\"\n"
	if _, err := ParseScript("s.scenario", []byte(base)); err != nil {
		t.Fatalf("the base scenario: %v", err)
	}
	for _, c := range []struct {
		name, old, new string
		line           int
		msg            string
	}{
		{"unknown violation", "expect lost t m1", "expect gone t m1", 9, `expect "gone": want one of`},
		{"violation without its value", "expect lost t m1", "expect lost t", 9, "missing word"},
		{"violation of no topic", "expect lost t m1", "expect lost u m1", 9, `topic "u" is never created`},
		{"offset not a number", "expect lost t m1", "expect diverged t x", 9, "not a whole number"},
		{"rules-only query on the cluster", "backends rules", "backends rules cluster", 10, "runs only on the rules"},
		{"rules-only action on the cluster", "backends rules\n", "backends cluster\n", 0, ""},
		{"unbalanced quotes", `"a and b"`, `"a b`, 10, "unbalanced quotes"},
		{"periodic checkpoint on the rules", "backends rules", "backends rules\nhw-checkpoint-interval 5s", 5, "runs on the cluster alone"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := strings.Replace(base, c.old, c.new, 1)
			if c.line == 0 { // an action instead of the query
				src = strings.Replace(src, "  check truncation-reason 1 t == \"a and b\"", "  do notice 1", 1)
				c.line, c.msg = 10, "runs only on the rules"
			}
			_, err := ParseScript("s.scenario", []byte(src))
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Line != c.line || !strings.Contains(pe.Msg, c.msg) {
				t.Fatalf("got %v, want line %d with %q", err, c.line, c.msg)
			}
		})
	}
	lesson := strings.Replace(minimal, "do produce t m1 acks=1", "do produce t m1 acks=1\n  expect lost t m1", 1)
	var pe *ParseError
	if _, err := ParseScript("m.lesson", []byte(lesson)); !errors.As(err, &pe) || pe.Line != 44 || !strings.Contains(pe.Msg, "belongs to scenarios") {
		t.Fatalf("expect in a lesson: %v", err)
	}
}

// TestScenarioUnexpectedViolation: a violation no expect line names fails
// the run with the line after which it happened; an expect line naming one
// that did not happen fails at its line. On both back-ends.
func TestScenarioUnexpectedViolation(t *testing.T) {
	const src = "scenario v\nbrokers 2\nfencing zookeeper\nbackends rules cluster\nsetup\n  do create-topic t rf=2\nstep\n  do produce t m1 acks=1\n  do crash 1\n  do step 2100ms\n"
	for _, c := range []struct {
		name, extra string
		line        int
		msg         string
	}{
		{"unexpected", "", 10, "t: lost m1 (after line 10)"},
		{"expected but not seen", "  expect diverged t 0\n", 11, "expect diverged t 0: not (yet) seen"},
	} {
		s, err := ParseScript("v.scenario", []byte(src+c.extra))
		if err != nil {
			t.Fatal(err)
		}
		for _, run := range s.Runs() {
			err := RunScenario(context.Background(), s, run, t.TempDir())
			var se *ScenarioError
			if !errors.As(err, &se) || se.Line != c.line || !strings.Contains(se.Msg, c.msg) {
				t.Errorf("%s %s: %v, want line %d with %q", c.name, run, err, c.line, c.msg)
			}
		}
	}
}

// TestShowBlocks: a show line keeps its block; a lesson may not show; an
// unclosed block names the line that opened it; and RewriteShows writes
// one block when the plays agree and a section per play when they do not.
func TestShowBlocks(t *testing.T) {
	const src = "scenario s\nbrokers 2\nbackends cluster\nsetup\n  do create-topic t rf=2\nstep\n  show t\n  ----\n  old\n  ----\n  show t\n"
	s, err := ParseScript("s.scenario", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	first, second := s.Steps[0].Items[0].Show, s.Steps[0].Items[1].Show
	if first == nil || first.Want[""] != "old" || first.Start != 8 || first.End != 10 || second == nil || second.Start != 0 {
		t.Fatalf("shows %+v %+v", first, second)
	}
	a := ScenarioRun{Backend: BackendCluster, Fencing: "kraft"}
	b := ScenarioRun{Backend: BackendCluster, Fencing: "zookeeper"}
	same := RewriteShows([]byte(src), s, []ScenarioRun{a, b}, map[string]Shown{a.String(): {7: "x\ny", 11: "z"}, b.String(): {7: "x\ny", 11: "z"}})
	if want := "step\n  show t\n  ----\n  x\n  y\n  ----\n  show t\n  ----\n  z\n  ----\n"; !strings.HasSuffix(string(same), want) {
		t.Errorf("rewritten:\n%s\nwant it to end\n%s", same, want)
	}
	differ := RewriteShows([]byte(src), s, []ScenarioRun{a, b}, map[string]Shown{a.String(): {7: "x", 11: "z"}, b.String(): {7: "w", 11: "z"}})
	if want := "  show t\n  ----\n  [cluster/kraft]\n  x\n  [cluster/zookeeper]\n  w\n  ----\n"; !strings.Contains(string(differ), want) {
		t.Errorf("rewritten:\n%s\nwant\n%s", differ, want)
	}
	re, err := ParseScript("s.scenario", differ)
	if err != nil {
		t.Fatal(err)
	}
	if w, _ := re.Steps[0].Items[0].Show.want(b); w != "w" {
		t.Errorf("play %s wants %q, want w", b, w)
	}
	for name, c := range map[string]struct {
		src  string
		line int
		msg  string
	}{
		"unclosed":    {"scenario s\nbrokers 2\nsetup\n  do create-topic t rf=2\nstep\n  show t\n  ----\n  x\n", 7, "never closed"},
		"in a lesson": {"lesson 01-x\nbrokers 2\nsetup\n  do create-topic t rf=2\nstep\n  show t\n", 6, "scenarios"},
		"no topic":    {"scenario s\nbrokers 2\nsetup\n  do create-topic t rf=2\nstep\n  show\n", 6, "show"},
	} {
		_, err := ParseScript("x", []byte(c.src))
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Line != c.line || !strings.Contains(pe.Msg, c.msg) {
			t.Errorf("%s: %v, want line %d saying %q", name, err, c.line, c.msg)
		}
	}
}
