package main

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"tidemark/events"
	"tidemark/server/experiment"
	"tidemark/server/web"
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
	// -lang: report.md and the findings in the reader's language.
	out.Reset()
	if err := run([]string{"-lang", "zh-Hant", "-out", filepath.Join(dir, "zh"), file}, &out, &errOut); !errors.As(err, &failed) {
		t.Fatal(err)
	}
	rep, err := os.ReadFile(filepath.Join(dir, "zh", "report.md"))
	if err != nil || !strings.Contains(string(rep), "## 發現") || !strings.Contains(string(rep), "結論 `throughput > 1000000` 不成立") || !strings.Contains(out.String(), "## 發現") {
		t.Fatalf("%v\n%s\noutput:\n%s", err, rep, out.String())
	}
	if err := run([]string{"-lang", "fr", file}, &out, &errOut); err == nil || !strings.Contains(err.Error(), "-lang") {
		t.Fatalf("-lang fr: %v", err)
	}
}

// webLab is the least a web.Server needs: a snapshot and a bus.
type webLab struct{ bus *events.Bus }

func (l webLab) Snapshot() events.Snapshot { return events.Snapshot{} }
func (l webLab) Bus() *events.Bus          { return l.bus }

// TestRunThroughTheAPI: with -server the command runs the file on a lab's
// API through the typed client and writes the files it downloads.
func TestRunThroughTheAPI(t *testing.T) {
	svc := experiment.NewService(experiment.ServiceOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer svc.Close()
	ws, err := web.New(web.Options{Lab: webLab{events.NewBus(events.BusOptions{})}, Static: fstest.MapFS{"app.css": {Data: []byte("")}},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Experiments: svc})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	srv := httptest.NewServer(ws.Handler())
	defer srv.Close()
	dir := t.TempDir()
	file := filepath.Join(dir, "tiny.experiment")
	if err := os.WriteFile(file, []byte("experiment tiny\nduration 1s\nworkload w rate=20 acks=1 producers=1\ncheck lost == 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if err := run([]string{"-server", srv.URL, "-out", filepath.Join(dir, "res"), file}, &out, &errOut); err != nil {
		t.Fatalf("%v\n%s%s", err, out.String(), errOut.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, "res", "results.csv"))
	if err != nil || strings.Count(string(b), "\n") != 2 {
		t.Fatalf("results.csv: %v\n%s", err, b)
	}
	if !strings.Contains(out.String(), "holds") {
		t.Fatalf("output:\n%s", out.String())
	}
}
