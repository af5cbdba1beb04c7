package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunWritesTheResults: the command runs a file and writes
// results.csv, summary.csv, the plot and report.md to -out, printing the
// findings; a claim that does not hold is exit status 3 (claimsFailed).
func TestRunWritesTheResults(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tiny.experiment")
	src := `experiment tiny
duration 1s
workload w rate=20 acks=1 producers=1
plot throughput by workload
check lost == 0
check throughput > 1000000
`
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	err := run([]string{"-out", filepath.Join(dir, "res"), file}, &out, &errOut)
	var failed claimsFailed
	if !errors.As(err, &failed) || failed != 1 {
		t.Fatalf("%v\n%s%s", err, out.String(), errOut.String())
	}
	for _, f := range []string{"results.csv", "summary.csv", "report.md", "plot-1-throughput-by-workload.svg"} {
		if _, err := os.Stat(filepath.Join(dir, "res", f)); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(out.String(), "## Findings") || !strings.Contains(out.String(), "does not hold") || !strings.Contains(out.String(), "default / none / w / seed 1") {
		t.Fatalf("output:\n%s", out.String())
	}
	if err := run([]string{"no-such-file"}, &out, &errOut); err == nil || !strings.Contains(err.Error(), "acks-leader-crash") {
		t.Fatalf("a missing file: %v", err)
	}
}
