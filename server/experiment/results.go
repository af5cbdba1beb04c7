package experiment

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"tidemark/i18n"
	"tidemark/lessons"
)

// Results is a finished experiment: every run, the mean of each
// configuration over its seeds, and the file's checks.
type Results struct {
	Experiment *lessons.Experiment `json:"-"`
	Runs       []RunResult         `json:"runs"`
	Summary    []SummaryRow        `json:"summary"`
	Checks     []CheckResult       `json:"checks"`
	// Findings are the report's sentences: one per check, one per plot.
	Findings []string      `json:"findings"`
	Elapsed  time.Duration `json:"elapsed_ns"`
}

// SummaryRow is one configuration (topic × faults × workload): the mean of
// each measurement over its runs that finished.
type SummaryRow struct {
	Topic    string             `json:"topic"`
	Faults   string             `json:"faults"`
	Workload string             `json:"workload"`
	Runs     int                `json:"runs"`
	Failed   int                `json:"failed"`
	Mean     map[string]float64 `json:"mean"`
}

// CheckResult is one of the file's checks: whether it holds, and the
// values it compared.
type CheckResult struct {
	Line  int      `json:"line"`
	Check string   `json:"check"`
	Holds bool     `json:"holds"`
	Got   []string `json:"got"`
	Error string   `json:"error,omitempty"`
	// got and noRun are Got and Error for a reader of another language.
	got   []gotValue
	noRun string
}

// GotIn is Got in lang, "; "-joined, or why the check could not be made.
func (cr CheckResult) GotIn(lang i18n.Lang) string {
	if cr.noRun != "" {
		return i18n.T(lang, "exp.finding.no-run", cr.noRun)
	}
	var got []string
	for _, g := range cr.got {
		got = append(got, i18n.T(lang, "exp.finding.against", g.query, num(g.got), num(g.want)))
	}
	return strings.Join(got, "; ")
}

// gotValue is what a check compared: query's value, against want.
type gotValue struct {
	query     string
	got, want float64
}

// Passed reports whether every check holds.
func (r *Results) Passed() bool {
	for _, c := range r.Checks {
		if !c.Holds {
			return false
		}
	}
	return true
}

// sumUp fills Summary, Checks and Findings from Runs.
func (r *Results) sumUp() {
	x := r.Experiment
	r.Summary = nil
	for _, t := range x.Topics {
		for _, f := range x.Faults {
			for _, w := range x.Workloads {
				row := SummaryRow{Topic: t.Name, Faults: f.Name, Workload: w.Name, Mean: map[string]float64{}}
				var ok []RunResult
				for _, rr := range r.Runs {
					if rr.Topic == t.Name && rr.Faults == f.Name && rr.Workload == w.Name {
						row.Runs++
						if rr.Error != "" {
							row.Failed++
						} else {
							ok = append(ok, rr)
						}
					}
				}
				for _, m := range lessons.Measures {
					row.Mean[m] = mean(ok, m)
				}
				r.Summary = append(r.Summary, row)
			}
		}
	}
	r.Checks = nil
	for _, c := range x.Checks {
		r.Checks = append(r.Checks, r.check(c))
	}
	r.Findings = r.FindingsIn(i18n.English)
}

// FindingsIn are the report's sentences in lang: one per check, one per
// plot.
func (r *Results) FindingsIn(lang i18n.Lang) []string {
	var out []string
	for _, cr := range r.Checks {
		key := "exp.finding.holds"
		if !cr.Holds {
			key = "exp.finding.fails"
		}
		s := i18n.T(lang, key, cr.Check, cr.GotIn(lang))
		switch {
		case cr.noRun != "":
			s = i18n.T(lang, "exp.finding.unchecked", cr.Check, cr.GotIn(lang))
		case cr.Error != "":
			s = i18n.T(lang, "exp.finding.unchecked", cr.Check, cr.Error)
		}
		out = append(out, s)
	}
	for _, p := range r.Experiment.Plots {
		out = append(out, r.plotFinding(p, lang))
	}
	return out
}

func mean(runs []RunResult, m string) float64 {
	if len(runs) == 0 {
		return 0
	}
	var s float64
	for _, rr := range runs {
		s += rr.Values[m]
	}
	return s / float64(len(runs))
}

// selected returns the finished runs a query's DIM=VALUE selectors match.
func (r *Results) selected(q lessons.Query) []RunResult {
	var out []RunResult
	for _, rr := range r.Runs {
		if rr.Error != "" {
			continue
		}
		match := true
		for _, a := range q.Args {
			k, v, _ := strings.Cut(a, "=")
			if rr.dim(k) != v {
				match = false
			}
		}
		if match {
			out = append(out, rr)
		}
	}
	return out
}

// value is a query's value: the mean of its measure over the runs it
// selects (an error when it selects none).
func (r *Results) value(q lessons.Query) (float64, error) {
	runs := r.selected(q)
	if len(runs) == 0 {
		return 0, noRunError(joinArgs(q))
	}
	return mean(runs, q.Name), nil
}

// noRunError is a query that selects no finished run.
type noRunError string

func (e noRunError) Error() string { return i18n.T(i18n.English, "exp.finding.no-run", string(e)) }

func (r *Results) check(c lessons.Cond) CheckResult {
	var parts []string
	cr := CheckResult{Line: c.Line, Holds: true, Got: []string{}}
	for _, t := range c.Terms {
		want := t.Want
		if t.WantQ != nil {
			want = "{" + joinArgs(*t.WantQ) + "}"
		}
		parts = append(parts, joinArgs(t.Q)+" "+t.Op+" "+want)
		got, err := r.value(t.Q)
		var w float64
		if err == nil {
			if t.WantQ != nil {
				w, err = r.value(*t.WantQ)
			} else {
				w, _ = strconv.ParseFloat(t.Want, 64)
			}
		}
		if err != nil {
			var nr noRunError
			errors.As(err, &nr)
			cr.Holds, cr.Error, cr.noRun = false, err.Error(), string(nr)
			continue
		}
		cr.Got = append(cr.Got, i18n.T(i18n.English, "exp.finding.against", joinArgs(t.Q), num(got), num(w)))
		cr.got = append(cr.got, gotValue{joinArgs(t.Q), got, w})
		if !lessons.CompareFloat(got, t.Op, w) {
			cr.Holds = false
		}
	}
	cr.Check = strings.Join(parts, " and ")
	return cr
}

// plotFinding says what a plot shows: where its measure is highest and
// lowest.
func (r *Results) plotFinding(p lessons.ExpPlot, lang i18n.Lang) string {
	vals := r.dimValues(p.By)
	type kv struct {
		k string
		v float64
	}
	var got []kv
	for _, v := range vals {
		runs := r.selected(lessons.Query{Name: p.Measure, Args: []string{p.By + "=" + v}})
		if len(runs) > 0 {
			got = append(got, kv{v, mean(runs, p.Measure)})
		}
	}
	if len(got) == 0 {
		return i18n.T(lang, "exp.finding.no-plot", p.Measure, p.By)
	}
	hi := slices.MaxFunc(got, func(a, b kv) int { return cmpF(a.v, b.v) })
	lo := slices.MinFunc(got, func(a, b kv) int { return cmpF(a.v, b.v) })
	if hi.v == lo.v {
		return i18n.T(lang, "exp.finding.flat", p.Measure, num(hi.v), p.By)
	}
	return i18n.T(lang, "exp.finding.range", p.Measure, p.By, hi.k, num(hi.v), p.By, lo.k, num(lo.v))
}

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// dimValues are a dimension's values in the file's order.
func (r *Results) dimValues(d string) []string {
	x := r.Experiment
	var out []string
	switch d {
	case "topic":
		for _, t := range x.Topics {
			out = append(out, t.Name)
		}
	case "faults":
		for _, f := range x.Faults {
			out = append(out, f.Name)
		}
	case "workload":
		for _, w := range x.Workloads {
			out = append(out, w.Name)
		}
	case "seed":
		for _, s := range x.Seeds {
			out = append(out, strconv.FormatUint(s, 10))
		}
	}
	return out
}

// Num writes a measurement as the report does.
func Num(v float64) string { return num(v) }

// num writes a measurement for a person: whole numbers as such, others
// with up to 3 significant decimals.
func num(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// --- files ---

// Files are an experiment's output files by name: results.csv,
// summary.csv, one SVG per plot and report.md (in English: FilesIn).
func (r *Results) Files() (map[string][]byte, error) { return r.FilesIn(i18n.English) }

// FilesIn are Files with report.md in lang.
func (r *Results) FilesIn(lang i18n.Lang) (map[string][]byte, error) {
	out := map[string][]byte{}
	var err error
	if out["results.csv"], err = r.resultsCSV(); err != nil {
		return nil, err
	}
	if out["summary.csv"], err = r.summaryCSV(); err != nil {
		return nil, err
	}
	for i, p := range r.Experiment.Plots {
		out[PlotFile(i, p)] = r.plotSVG(p)
	}
	out["report.md"] = r.Report(lang)
	return out, nil
}

// PlotFile is the file name of the i-th plot.
func PlotFile(i int, p lessons.ExpPlot) string {
	name := fmt.Sprintf("plot-%d-%s-by-%s", i+1, p.Measure, p.By)
	if p.Per != "" {
		name += "-per-" + p.Per
	}
	return name + ".svg"
}

// WriteDir writes Files into dir (made if missing).
func (r *Results) WriteDir(dir string) error {
	files, err := r.Files()
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
	return nil
}

func (r *Results) resultsCSV() ([]byte, error) {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	head := append([]string{"run", "topic", "faults", "workload", "seed"}, lessons.Measures...)
	w.Write(append(head, "actions", "wall_ms", "error"))
	for _, rr := range r.Runs {
		row := []string{strconv.Itoa(rr.Index), rr.Topic, rr.Faults, rr.Workload, strconv.FormatUint(rr.Seed, 10)}
		for _, m := range lessons.Measures {
			row = append(row, csvNum(rr.Values[m], rr.Error != ""))
		}
		w.Write(append(row, strconv.Itoa(rr.Actions), strconv.FormatInt(rr.WallMs, 10), rr.Error))
	}
	w.Flush()
	return b.Bytes(), w.Error()
}

func (r *Results) summaryCSV() ([]byte, error) {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	w.Write(append([]string{"topic", "faults", "workload", "runs", "failed"}, lessons.Measures...))
	for _, s := range r.Summary {
		row := []string{s.Topic, s.Faults, s.Workload, strconv.Itoa(s.Runs), strconv.Itoa(s.Failed)}
		for _, m := range lessons.Measures {
			row = append(row, csvNum(s.Mean[m], s.Runs == s.Failed))
		}
		w.Write(row)
	}
	w.Flush()
	return b.Bytes(), w.Error()
}

func csvNum(v float64, none bool) string {
	if none {
		return ""
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// Report is report.md in lang: what ran, the summary table, the plots
// and the findings.
func (r *Results) Report(lang i18n.Lang) []byte {
	x := r.Experiment
	var b strings.Builder
	title := x.Title.In(lang)
	if title == "" {
		title = x.ID
	}
	fmt.Fprintf(&b, "# %s\n\n", title)
	b.WriteString(i18n.T(lang, "exp.report.intro", x.ID, x.File, len(x.Topics), len(x.Faults), len(x.Workloads), len(x.Seeds), len(r.Runs),
		x.Duration.String(), x.Tick.String(), r.Elapsed.Round(time.Second).String()) + "\n\n")
	failed := 0
	for _, rr := range r.Runs {
		if rr.Error != "" {
			failed++
		}
	}
	if failed > 0 {
		b.WriteString(i18n.T(lang, "exp.report.failed", failed) + "\n\n")
	}
	fmt.Fprintf(&b, "## %s\n\n| topic | faults | workload |", i18n.T(lang, "exp.report.summary"))
	for _, m := range x.Measures {
		fmt.Fprintf(&b, " %s |", m)
	}
	b.WriteString("\n|---|---|---|")
	for range x.Measures {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	for _, s := range r.Summary {
		fmt.Fprintf(&b, "| %s | %s | %s |", s.Topic, s.Faults, s.Workload)
		for _, m := range x.Measures {
			if s.Runs == s.Failed {
				b.WriteString(" – |")
			} else {
				fmt.Fprintf(&b, " %s |", num(s.Mean[m]))
			}
		}
		b.WriteString("\n")
	}
	if len(x.Plots) > 0 {
		fmt.Fprintf(&b, "\n## %s\n\n", i18n.T(lang, "exp.report.plots"))
		for i, pl := range x.Plots {
			fmt.Fprintf(&b, "![%s](%s)\n\n", i18n.T(lang, "exp.report.plot", pl.Measure, pl.By), PlotFile(i, pl))
		}
	}
	if fs := r.FindingsIn(lang); len(fs) > 0 {
		fmt.Fprintf(&b, "## %s\n\n", i18n.T(lang, "exp.report.findings"))
		for _, f := range fs {
			fmt.Fprintf(&b, "- %s\n", f)
		}
	}
	b.WriteString("\n" + i18n.T(lang, "exp.report.lab-time") + "\n")
	if slices.ContainsFunc(x.Measures, func(m string) bool { return strings.HasPrefix(m, "latency-") }) {
		b.WriteString("\n" + i18n.T(lang, "exp.report.latency") + "\n")
	}
	return []byte(b.String())
}
