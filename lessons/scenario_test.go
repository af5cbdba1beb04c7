package lessons

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestScenarios plays every file of scenarios/ on each back-end it names
// and under each of its fencing rules; a failure prints the lanes.
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
		for _, run := range s.Runs() {
			t.Run(strings.TrimSuffix(filepath.Base(file), ".scenario")+"/"+run.String(), func(t *testing.T) {
				if err := RunScenario(context.Background(), s, run, t.TempDir()); err != nil {
					t.Fatal(err)
				}
			})
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
