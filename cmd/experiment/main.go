// Command experiment runs an experiment file — a matrix of topic
// configurations × fault schedules × workloads × seeds, written in the
// lab's scenario language (docs/scripting.md) — and writes its results to
// a directory: results.csv (one row per run), summary.csv (the mean per
// configuration), an SVG per plot and report.md (the table and a sentence
// per finding).
//
//	go tool task experiment -- lessons/experiments/acks-leader-crash.experiment
//	go tool task experiment -- -out /tmp/acks acks-leader-crash   (a built-in study by name)
//	go tool task experiment -- -server http://127.0.0.1:8080 FILE (run it on a running lab's API)
//
// It shows a progress bar on a terminal (a line per run otherwise) and
// exits with status 3 when a claim of the file does not hold.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"tidemark/apiclient"
	"tidemark/i18n"
	"tidemark/lessons"
	"tidemark/server/experiment"
)

func main() {
	err := run(os.Args[1:], os.Stdout, os.Stderr)
	var failed claimsFailed
	switch {
	case errors.As(err, &failed):
		fmt.Fprintln(os.Stderr, "experiment:", err)
		os.Exit(3)
	case err != nil:
		fmt.Fprintln(os.Stderr, "experiment:", err)
		os.Exit(1)
	}
}

// claimsFailed is the error for an experiment whose claims did not all hold.
type claimsFailed int

func (n claimsFailed) Error() string {
	return fmt.Sprintf("%d claims do not hold (report.md says which)", int(n))
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("experiment", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "directory for the results (default experiment-results/<name>)")
	seeds := fs.Int("seeds", 0, "run only the file's first N seeds (0: all)")
	server := fs.String("server", "", "run on a lab's API at this address (http://127.0.0.1:8080) instead of in this process")
	list := fs.Bool("list", false, "list the built-in studies")
	langFlag := fs.String("lang", "en", "the language of report.md and the findings: en, zh-Hans or zh-Hant")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: experiment [flags] FILE|STUDY\nbuilt-in studies: %s\n", strings.Join(lessons.Studies(), ", "))
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *list {
		for _, s := range lessons.Studies() {
			fmt.Fprintln(stdout, s)
		}
		return nil
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errors.New("want one experiment file or study name")
	}
	lang := i18n.Lang(*langFlag)
	if !lang.Valid() {
		return fmt.Errorf("-lang %q: want en, zh-Hans or zh-Hant", *langFlag)
	}
	file, src, err := load(fs.Arg(0))
	if err != nil {
		return err
	}
	x, err := lessons.ParseExperiment(file, src)
	if err != nil {
		return err
	}
	dir := *out
	if dir == "" {
		dir = filepath.Join("experiment-results", x.ID)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	bar := newBar(stdout)
	var files map[string][]byte
	var findings []string
	var failed int
	if *server != "" {
		files, findings, failed, err = viaAPI(ctx, *server, lang, file, src, *seeds, bar)
	} else {
		files, findings, failed, err = inProcess(ctx, x, lang, *seeds, bar)
	}
	bar.end()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	if len(findings) > 0 {
		fmt.Fprintf(stdout, "## %s\n\n", i18n.T(lang, "exp.report.findings"))
		for _, f := range findings {
			fmt.Fprintf(stdout, "- %s\n", f)
		}
	}
	fmt.Fprintf(stdout, "results in %s\n", dir)
	if failed > 0 {
		return claimsFailed(failed)
	}
	return nil
}

// load reads FILE, or the built-in study of that name.
func load(arg string) (string, []byte, error) {
	src, err := os.ReadFile(arg)
	if err == nil {
		return arg, src, nil
	}
	if file, src, ok := lessons.Study(arg); ok {
		return file, src, nil
	}
	return "", nil, fmt.Errorf("%v (nor is it a built-in study: %s)", err, strings.Join(lessons.Studies(), ", "))
}

func inProcess(ctx context.Context, x *lessons.Experiment, lang i18n.Lang, seeds int, bar *bar) (map[string][]byte, []string, int, error) {
	res, err := experiment.Execute(ctx, x, experiment.Options{Seeds: seeds, Progress: func(p experiment.Progress) {
		bar.show(p.Done, p.Total, p.Current, p.Action, p.Actions)
	}, Finished: func(rr experiment.RunResult) { bar.finished(rr.Label(), rr.WallMs, rr.Error) }})
	if err != nil {
		return nil, nil, 0, err
	}
	files, err := res.FilesIn(lang)
	failed := 0
	for _, c := range res.Checks {
		if !c.Holds {
			failed++
		}
	}
	return files, res.FindingsIn(lang), failed, err
}

// viaAPI starts the experiment on a lab's API, follows its progress and
// downloads its files.
func viaAPI(ctx context.Context, addr string, lang i18n.Lang, file string, src []byte, seeds int, bar *bar) (map[string][]byte, []string, int, error) {
	cl := apiclient.New(addr).WithLanguage(string(lang))
	st, err := cl.StartExperiment(ctx, apiclient.ExperimentRequest{Name: filepath.Base(file), Source: string(src), Seeds: seeds})
	if err != nil {
		return nil, nil, 0, err
	}
	st, err = cl.WaitExperiment(ctx, st.ID, 200*time.Millisecond, func(st apiclient.ExperimentState) {
		p := st.Progress
		bar.show(p.Done, p.Total, p.Current, p.Action, p.Actions)
	})
	if err != nil {
		return nil, nil, 0, err
	}
	if st.Error != "" {
		return nil, nil, 0, errors.New(st.Error)
	}
	files := map[string][]byte{}
	for _, name := range st.Files {
		b, err := cl.ExperimentFile(ctx, st.ID, name)
		if err != nil {
			return nil, nil, 0, err
		}
		files[name] = b
	}
	failed := 0
	for _, c := range st.Checks {
		if !c.Holds {
			failed++
		}
	}
	return files, st.Findings, failed, nil
}

// bar is the progress display: a bar redrawn in place on a terminal, a
// line per finished run otherwise.
type bar struct {
	w    io.Writer
	tty  bool
	last time.Time
}

func newBar(w io.Writer) *bar {
	b := &bar{w: w}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			b.tty = true
		}
	}
	return b
}

func (b *bar) show(done, total int, current string, action, actions int) {
	if !b.tty || total == 0 || time.Since(b.last) < 100*time.Millisecond && done < total {
		return
	}
	b.last = time.Now()
	const width = 30
	frac := float64(done) / float64(total)
	if actions > 0 && done < total {
		frac += float64(action) / float64(actions) / float64(total)
	}
	n := int(frac * width)
	fmt.Fprintf(b.w, "\r\033[K[%s%s] %d/%d runs  %s", strings.Repeat("#", n), strings.Repeat(".", width-n), done, total, current)
}

func (b *bar) finished(label string, wallMs int64, errText string) {
	if b.tty {
		return
	}
	if errText != "" {
		fmt.Fprintf(b.w, "%s: failed: %s\n", label, errText)
		return
	}
	fmt.Fprintf(b.w, "%s: %.1fs\n", label, float64(wallMs)/1000)
}

func (b *bar) end() {
	if b.tty {
		fmt.Fprint(b.w, "\r\033[K")
	}
}
