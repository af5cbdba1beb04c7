package lessons

import (
	"bufio"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"tidemark/i18n"
)

// An experiment is a file of the scenario language that measures rather
// than tests: it starts with "experiment NAME" and names a matrix of runs,
// what to measure in each, the plots to draw and the claims to check.
// Lines are read as in a lesson (a keyword first, # comments, blank lines
// skipped, indentation free, a title's other languages on en:, zh-Hans:
// and zh-Hant: lines); its checks are the scenario language's conditions
// (QUERY OP VALUE [and …], {QUERY} on the right), asked of the results.
//
//	experiment acks-leader-crash   the name: lowercase words joined by dashes
//	title Acks 0, 1 and all        what it shows (other languages optional)
//	brokers 3                      each cluster's brokers (1-5, default 3); a topic line's
//	                               brokers=N sets its own
//	cluster shared                 every topic configuration of a run on one cluster,
//	                               a topic each, played the same schedule (default
//	                               own: a cluster per topic configuration)
//	duration 10s                   lab time each run's workload lasts
//	tick 100ms                     how often producers send, followers fetch and time moves
//	seeds 1 2 3                    or a range: seeds 1-5
//	topic NAME KEY=VALUE…          one topic configuration: its configs (replication.protocol,
//	                               min.insync.replicas, unclean.leader.election.enable, …),
//	                               and its cluster's brokers=N (1-5), partitions=N (1-8,
//	                               default 3) and replication.factor=N (default min(brokers, 3))
//	workload NAME KEY=VALUE…       rate (records/s), size (bytes), acks (0, 1, all),
//	                               idempotence (yes, no, or mixed: the chaos checker's
//	                               producers 1-2 plain, 3-4 idempotent), retries (yes: plain
//	                               producers resend what failed; default no), producers (1-4)
//	faults NAME                    a fault schedule: the "at" lines after it, or
//	faults NAME random N [down=D]  N crashes of random brokers at random times,
//	                               each back after D (default 3s), drawn from the seed
//	faults NAME chaos [actions=N]  the chaos checker's schedule of the seed (its own
//	                               produces, fetches and steps; the workload is not played)
//	faults NAME none               no faults
//	at TIME do ACTION ARGS         a fault at TIME of lab time: crash B|leader,
//	                               power-loss B|leader, restart B…|all, cut A B [one-way], heal
//	measure NAME…                  the measurements the summary and report show
//	plot MEASURE by DIM [per DIM]  an SVG bar chart: the mean by one dimension
//	                               (topic, faults, workload, seed), a bar per value of another
//	check COND                     a claim: MEASURE [DIM=VALUE…] is the mean over matching runs
//
// Every run is one topic × one fault schedule × one workload × one seed,
// on a fresh cluster; the same seed draws the same random faults and the
// same workload jitter under every configuration.

// Measures are what an experiment can measure in each run, in column order.
var Measures = []string{"throughput", "latency-p50", "latency-p99", "attempted", "acked", "availability", "lost",
	"duplicates", "unavailable-ms", "isr-shrinks", "elections"}

// Dimensions are an experiment's matrix axes, as checks and plots name them.
var Dimensions = []string{"topic", "faults", "workload", "seed"}

// Experiment is a parsed experiment file.
type Experiment struct {
	File    string
	ID      string
	Title   Text
	Brokers int
	// Shared plays a run's topic configurations on one cluster, a topic
	// each ("cluster shared"): one cluster run per faults × workload ×
	// seed.
	Shared    bool
	Duration  time.Duration
	Tick      time.Duration
	Seeds     []uint64
	Topics    []ExpTopic
	Faults    []ExpFaults
	Workloads []ExpWorkload
	Measures  []string
	Plots     []ExpPlot
	Checks    []Cond
}

// ExpTopic is one topic configuration: the topic's configs and the size
// of its cluster and topic (filled in by ParseExperiment).
type ExpTopic struct {
	Line              int
	Name              string
	Configs           map[string]string
	Brokers           int
	Partitions        int
	ReplicationFactor int
}

// The kinds of fault schedule.
const (
	FaultsAt     = "at"     // named faults at times
	FaultsRandom = "random" // seeded random crashes
	FaultsChaos  = "chaos"  // the chaos checker's whole schedule of the seed
	FaultsNone   = "none"
)

// ExpFaults is one fault schedule.
type ExpFaults struct {
	Line int
	Name string
	Kind string // FaultsAt, FaultsRandom, FaultsChaos or FaultsNone
	At   []FaultAt
	// Random: Count crashes, each broker back after Down.
	Count int
	Down  time.Duration
	// Chaos: the schedule's length in actions.
	Actions int
}

// FaultAt is one fault at a time of lab time since the workload began.
type FaultAt struct {
	Line   int
	At     time.Duration
	Action Action
}

// ExpWorkload is one workload.
type ExpWorkload struct {
	Line       int
	Name       string
	Rate       int // records per second of lab time, all producers together
	Size       int // bytes per record
	Acks       string
	Idempotent bool
	// Mixed: the chaos checker's producers, 1 and 2 plain (Acks), 3 and 4
	// idempotent (idempotence=mixed).
	Mixed bool
	// Retries: plain producers resend what failed (retries=yes).
	Retries   bool
	Producers int
}

// ExpPlot is one chart: Measure's mean by By, one bar per value of Per
// ("" for one bar).
type ExpPlot struct {
	Line             int
	Measure, By, Per string
}

// Bounds of an experiment file.
const (
	MaxExperimentRuns = 500
	MaxExpDuration    = 5 * time.Minute
	MaxRate           = 2000
	MaxProducers      = 4
	MaxExpBrokers     = 5
	MaxExpPartitions  = 8
)

// faultActions are the actions a fault schedule may use, with the
// arguments each takes.
var faultActions = map[string]string{"crash": "broker-or-leader", "power-loss": "broker-or-leader", "restart": "brokers-or-all",
	"cut": "node node one-way?", "heal": ""}

// ParseExperiment reads an experiment file; a bad one is a *ParseError
// naming the line.
func ParseExperiment(file string, src []byte) (*Experiment, error) {
	if len(src) > MaxScriptBytes {
		return nil, parseErr(file, 0, "lesson.error.too-big", len(src), MaxScriptBytes)
	}
	x := &Experiment{File: file, Brokers: 3, Tick: 100 * time.Millisecond}
	errf := func(n int, key string, a ...any) error { return parseErr(file, n, key, a...) }
	var text *Text // the title, whose language lines may follow
	var faults *ExpFaults
	names := map[string]map[string]bool{"topic": {}, "faults": {}, "workload": {}}
	sc := bufio.NewScanner(strings.NewReader(string(src)))
	sc.Buffer(make([]byte, 0, 4096), MaxScriptBytes+1)
	n := 0
	for sc.Scan() {
		n++
		raw := sc.Text()
		if !strings.ContainsRune(raw, '\t') && strings.ContainsFunc(raw, func(r rune) bool { return r < ' ' }) {
			return nil, errf(n, "lesson.error.control-character")
		}
		line := strings.TrimSpace(raw)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		kw, rest, _ := strings.Cut(line, " ")
		rest = strings.TrimSpace(rest)
		if lang, ok := strings.CutSuffix(kw, ":"); ok {
			l := i18n.Lang(lang)
			switch {
			case !l.Valid():
				return nil, errf(n, "lesson.error.unknown-language", lang)
			case text == nil:
				return nil, errf(n, "lesson.error.text-nothing-belong-put-2", lang)
			case rest == "":
				return nil, errf(n, "lesson.error.text-empty", lang)
			}
			switch l {
			case i18n.SimplifiedChinese:
				text.Hans = rest
			case i18n.TraditionalChinese:
				text.Hant = rest
			default:
				text.En = rest
			}
			continue
		}
		text = nil
		if x.ID == "" && kw != "experiment" {
			return nil, errf(n, "lesson.error.file-must-start-experiment")
		}
		if kw != "at" {
			faults = nil
		}
		f := strings.Fields(rest)
		switch kw {
		case "experiment":
			if x.ID != "" {
				return nil, errf(n, "lesson.error.second-experiment-line")
			}
			if !namePattern.MatchString(rest) {
				return nil, errf(n, "lesson.error.experiment-name-want-lowercase", rest)
			}
			x.ID = rest
		case "title":
			if rest == "" {
				return nil, errf(n, "lesson.error.title-needs-text")
			}
			x.Title = T(rest, rest, rest)
			text = &x.Title
		case "brokers":
			b, err := strconv.Atoi(rest)
			if err != nil || b < 1 || b > MaxExpBrokers {
				return nil, errf(n, "lesson.error.key-range", "brokers", rest, 1, MaxExpBrokers)
			}
			x.Brokers = b
		case "cluster":
			if rest != "shared" && rest != "own" {
				return nil, errf(n, "lesson.error.cluster-want-shared-own", rest)
			}
			x.Shared = rest == "shared"
		case "duration", "tick":
			d, err := time.ParseDuration(rest)
			if err != nil || d <= 0 || d > MaxExpDuration {
				return nil, errf(n, "lesson.error.want-duration-such-as", kw, rest, MaxExpDuration)
			}
			if kw == "tick" {
				if d < 10*time.Millisecond || d > 5*time.Second {
					return nil, errf(n, "lesson.error.tick-want-10ms-5s", d)
				}
				x.Tick = d
			} else {
				x.Duration = d
			}
		case "seeds":
			seeds, err := parseSeeds(f)
			if err != nil {
				return nil, errf(n, "lesson.error.seeds", err)
			}
			x.Seeds = seeds
		case "topic", "workload", "faults":
			if len(f) == 0 || !namePattern.MatchString(f[0]) {
				return nil, errf(n, "lesson.error.needs-name-lowercase-words", kw)
			}
			if names[kw][f[0]] {
				return nil, errf(n, "lesson.error.name-twice", kw, f[0])
			}
			names[kw][f[0]] = true
			var err error
			switch kw {
			case "topic":
				var t ExpTopic
				t, err = parseExpTopic(n, f)
				x.Topics = append(x.Topics, t)
			case "workload":
				var w ExpWorkload
				w, err = parseWorkload(n, f)
				x.Workloads = append(x.Workloads, w)
			default:
				var fs ExpFaults
				fs, err = parseFaults(n, f)
				x.Faults = append(x.Faults, fs)
				if fs.Kind == FaultsAt {
					faults = &x.Faults[len(x.Faults)-1]
				}
			}
			if err != nil {
				return nil, errf(n, "lesson.error.faults-bad", kw, f[0], err)
			}
		case "at":
			if faults == nil {
				return nil, errf(n, "lesson.error.at-belongs-under-faults")
			}
			fa, err := parseFaultAt(n, f)
			if err != nil {
				return nil, errf(n, "lesson.error.at", err)
			}
			if k := len(faults.At); k > 0 && fa.At < faults.At[k-1].At {
				return nil, errf(n, "lesson.error.at-comes-before-fault", fa.At, faults.At[k-1].At)
			}
			faults.At = append(faults.At, fa)
		case "measure":
			for _, m := range f {
				if !slices.Contains(Measures, m) {
					return nil, errf(n, "lesson.error.measure-want-one", m, strings.Join(Measures, ", "))
				}
				x.Measures = append(x.Measures, m)
			}
		case "plot":
			p, err := parsePlot(n, f)
			if err != nil {
				return nil, errf(n, "lesson.error.plot", err)
			}
			x.Plots = append(x.Plots, p)
		case "check":
			c, err := parseExpCond(n, rest)
			if err != nil {
				return nil, errf(n, "lesson.error.check", err)
			}
			x.Checks = append(x.Checks, c)
		default:
			return nil, errf(n, "lesson.error.unknown-keyword-experiment", kw)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, errf(n, "lesson.error.wrapped", err)
	}
	if err := x.finish(n, names); err != nil {
		return nil, err
	}
	return x, nil
}

// finish fills defaults and checks the whole file.
func (x *Experiment) finish(n int, names map[string]map[string]bool) error {
	errf := func(line int, key string, a ...any) error {
		return parseErr(x.File, line, key, a...)
	}
	switch {
	case x.ID == "":
		return errf(n, "lesson.error.no-experiment-line")
	case x.Duration == 0:
		return errf(n, "lesson.error.no-duration-line-lab")
	case x.Tick > x.Duration:
		return errf(n, "lesson.error.tick-longer-than-duration", x.Tick, x.Duration)
	}
	if len(x.Seeds) == 0 {
		x.Seeds = []uint64{1}
	}
	if len(x.Topics) == 0 {
		x.Topics = []ExpTopic{{Name: "default", Configs: map[string]string{}}}
	}
	for i := range x.Topics {
		t := &x.Topics[i]
		if t.Brokers == 0 {
			t.Brokers = x.Brokers
		}
		if t.Partitions == 0 {
			t.Partitions = 3
		}
		if t.ReplicationFactor == 0 {
			t.ReplicationFactor = min(t.Brokers, 3)
		}
		if t.ReplicationFactor > t.Brokers {
			return errf(t.Line, "lesson.error.replication-factor-above-brokers", t.ReplicationFactor, t.Name, t.Brokers)
		}
		if x.Shared && t.Brokers != x.Topics[0].Brokers {
			return errf(t.Line, "lesson.error.shared-cluster-brokers", t.Name, t.Brokers, x.Topics[0].Name, x.Topics[0].Brokers)
		}
	}
	if len(x.Workloads) == 0 {
		x.Workloads = []ExpWorkload{defaultWorkload("default")}
	}
	if len(x.Faults) == 0 {
		x.Faults = []ExpFaults{{Name: "none", Kind: FaultsNone}}
	}
	if len(x.Measures) == 0 {
		x.Measures = slices.Clone(Measures)
	}
	smallest := slices.MinFunc(x.Topics, func(a, b ExpTopic) int { return a.Brokers - b.Brokers })
	for _, f := range x.Faults {
		if f.Kind == FaultsAt && len(f.At) == 0 {
			return errf(f.Line, "lesson.error.faults-has-no-at", f.Name, "at TIME do …", "faults "+f.Name+" none")
		}
		for _, a := range f.At {
			if a.At >= x.Duration {
				return errf(a.Line, "lesson.error.at-not-within-duration", a.At, x.Duration)
			}
			for _, w := range a.Action.Args {
				if b, err := strconv.Atoi(w); err == nil && b > smallest.Brokers {
					return errf(a.Line, "lesson.error.at-broker-beyond-cluster", b, smallest.Name, smallest.Brokers)
				}
			}
		}
	}
	if r := x.Runs(); r > MaxExperimentRuns {
		return errf(n, "lesson.error.runs-topics-faults-workloads", r, MaxExperimentRuns)
	}
	names["topic"] = keySet(x.Topics, func(t ExpTopic) string { return t.Name })
	names["workload"] = keySet(x.Workloads, func(w ExpWorkload) string { return w.Name })
	names["faults"] = keySet(x.Faults, func(f ExpFaults) string { return f.Name })
	names["seed"] = map[string]bool{}
	for _, s := range x.Seeds {
		names["seed"][strconv.FormatUint(s, 10)] = true
	}
	checkQ := func(line int, q Query) error {
		for _, a := range q.Args {
			k, v, _ := strings.Cut(a, "=")
			if !names[k][v] {
				return errf(line, "lesson.error.check-no-named-known", q, k, v, strings.Join(slices.Sorted(maps.Keys(names[k])), ", "))
			}
		}
		return nil
	}
	for _, c := range x.Checks {
		for _, t := range c.Terms {
			if err := checkQ(c.Line, t.Q); err != nil {
				return err
			}
			if t.WantQ != nil {
				if err := checkQ(c.Line, *t.WantQ); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Runs is how many runs the matrix has.
func (x *Experiment) Runs() int {
	return len(x.Topics) * len(x.Faults) * len(x.Workloads) * len(x.Seeds)
}

func keySet[T any](xs []T, name func(T) string) map[string]bool {
	m := map[string]bool{}
	for _, v := range xs {
		m[name(v)] = true
	}
	return m
}

func parseSeeds(f []string) ([]uint64, error) {
	if len(f) == 0 {
		return nil, errk("lesson.error.want-seeds-such-as")
	}
	var out []uint64
	for _, w := range f {
		lo, hi, isRange := strings.Cut(w, "-")
		a, err := strconv.ParseUint(lo, 10, 53)
		if err != nil {
			return nil, errk("lesson.error.not-seed-whole-number", w)
		}
		b := a
		if isRange {
			if b, err = strconv.ParseUint(hi, 10, 53); err != nil || b < a || b-a >= MaxExperimentRuns {
				return nil, errk("lesson.error.not-range-at-most", w, MaxExperimentRuns)
			}
		}
		for s := a; s <= b; s++ {
			if slices.Contains(out, s) {
				return nil, errk("lesson.error.seed-twice", s)
			}
			out = append(out, s)
		}
	}
	return out, nil
}

// keyValues reads KEY=VALUE words.
func keyValues(f []string) (map[string]string, []string, error) {
	m := map[string]string{}
	var order []string
	for _, w := range f {
		k, v, ok := strings.Cut(w, "=")
		if !ok || k == "" || v == "" {
			return nil, nil, errk("lesson.error.want-key-value", w)
		}
		if _, dup := m[k]; dup {
			return nil, nil, errk("lesson.error.key-twice", k)
		}
		m[k] = v
		order = append(order, k)
	}
	return m, order, nil
}

// parseExpTopic reads a topic line: its configs, and brokers=,
// partitions= and replication.factor=, which size its cluster and topic.
func parseExpTopic(n int, f []string) (ExpTopic, error) {
	m, _, err := keyValues(f[1:])
	t := ExpTopic{Line: n, Name: f[0], Configs: m}
	if err != nil {
		return t, err
	}
	for _, k := range []struct {
		key    string
		to     *int
		lo, hi int
	}{{"brokers", &t.Brokers, 1, MaxExpBrokers}, {"partitions", &t.Partitions, 1, MaxExpPartitions}, {"replication.factor", &t.ReplicationFactor, 1, MaxExpBrokers}} {
		v, ok := m[k.key]
		if !ok {
			continue
		}
		i, err := strconv.Atoi(v)
		if err != nil || i < k.lo || i > k.hi {
			return t, errk("lesson.error.key-range", k.key, v, k.lo, k.hi)
		}
		*k.to = i
		delete(m, k.key)
	}
	return t, nil
}

func defaultWorkload(name string) ExpWorkload {
	return ExpWorkload{Name: name, Rate: 50, Size: 100, Acks: "all", Producers: 2}
}

func parseWorkload(n int, f []string) (ExpWorkload, error) {
	w := defaultWorkload(f[0])
	w.Line = n
	m, order, err := keyValues(f[1:])
	if err != nil {
		return w, err
	}
	num := func(k, v string, lo, hi int) (int, error) {
		i, err := strconv.Atoi(v)
		if err != nil || i < lo || i > hi {
			return 0, errk("lesson.error.key-range", k, v, lo, hi)
		}
		return i, nil
	}
	for _, k := range order {
		v := m[k]
		switch k {
		case "rate":
			w.Rate, err = num(k, v, 1, MaxRate)
		case "size":
			w.Size, err = num(k, v, 1, 64<<10)
		case "producers":
			w.Producers, err = num(k, v, 1, MaxProducers)
		case "acks":
			if v == "-1" {
				v = "all"
			}
			if !slices.Contains([]string{"0", "1", "all"}, v) {
				err = errk("lesson.error.acks-want-0-1", v)
			}
			w.Acks = v
		case "retries":
			if v != "yes" && v != "no" {
				err = errk("lesson.error.retries-want-yes-no", v)
			}
			w.Retries = v == "yes"
		case "idempotence":
			if v != "yes" && v != "no" && v != "mixed" {
				err = errk("lesson.error.idempotence-want-yes-no", v)
			}
			w.Idempotent, w.Mixed = v == "yes", v == "mixed"
		default:
			err = errk("lesson.error.unknown-key-rate-size", k)
		}
		if err != nil {
			return w, err
		}
	}
	if w.Idempotent && w.Acks != "all" {
		return w, errk("lesson.error.idempotence-yes-needs-acks")
	}
	return w, nil
}

func parseFaults(n int, f []string) (ExpFaults, error) {
	fs := ExpFaults{Line: n, Name: f[0], Kind: FaultsAt}
	if len(f) == 1 {
		return fs, nil
	}
	fs.Kind = f[1]
	m, _, err := keyValues(slices.DeleteFunc(slices.Clone(f[2:]), func(w string) bool { return !strings.Contains(w, "=") }))
	if err != nil {
		return fs, err
	}
	plain := slices.DeleteFunc(slices.Clone(f[2:]), func(w string) bool { return strings.Contains(w, "=") })
	switch fs.Kind {
	case FaultsNone:
		if len(f) > 2 {
			return fs, errk("lesson.error.none-takes-nothing-after")
		}
	case FaultsRandom:
		if len(plain) != 1 {
			return fs, errk("lesson.error.want-syntax", "faults NAME random N [down=3s]")
		}
		if fs.Count, err = strconv.Atoi(plain[0]); err != nil || fs.Count < 1 || fs.Count > 20 {
			return fs, errk("lesson.error.random-want-1-20", plain[0])
		}
		fs.Down = 3 * time.Second
		for k, v := range m {
			if k != "down" {
				return fs, errk("lesson.error.unknown-key-down", k)
			}
			if fs.Down, err = time.ParseDuration(v); err != nil || fs.Down <= 0 {
				return fs, errk("lesson.error.down-want-duration", v)
			}
		}
	case FaultsChaos:
		fs.Actions = 100
		for k, v := range m {
			if k != "actions" {
				return fs, errk("lesson.error.unknown-key-actions", k)
			}
			if fs.Actions, err = strconv.Atoi(v); err != nil || fs.Actions < 1 || fs.Actions > 400 {
				return fs, errk("lesson.error.actions-want-1-400", v)
			}
		}
		if len(plain) > 0 {
			return fs, errk("lesson.error.want-syntax", "faults NAME chaos [actions=N]")
		}
	default:
		return fs, errk("lesson.error.want-nothing-then-at", fs.Kind)
	}
	return fs, nil
}

func parseFaultAt(n int, f []string) (FaultAt, error) {
	if len(f) < 3 || f[1] != "do" {
		return FaultAt{}, errk("lesson.error.want-syntax", "at TIME do ACTION ARGS")
	}
	d, err := time.ParseDuration(f[0])
	if err != nil || d < 0 {
		return FaultAt{}, errk("lesson.error.not-time-such-as", f[0])
	}
	a := Action{Line: n, Name: f[2], Args: f[3:]}
	spec, ok := faultActions[a.Name]
	if !ok {
		return FaultAt{}, errk("lesson.error.unknown-fault-known", a.Name, strings.Join(slices.Sorted(maps.Keys(faultActions)), ", "))
	}
	broker := func(w string) bool { b, err := strconv.Atoi(w); return err == nil && b >= 1 && b <= MaxExpBrokers }
	bad := errk("lesson.error.fault-usage", a.Name, spec)
	switch spec {
	case "broker-or-leader":
		if len(a.Args) != 1 || (a.Args[0] != "leader" && !broker(a.Args[0])) {
			return FaultAt{}, errk("lesson.error.want-broker-1-3", a.Name)
		}
	case "brokers-or-all":
		if len(a.Args) == 0 || (len(a.Args) == 1 && a.Args[0] == "all") {
			a.Args = []string{"all"}
			break
		}
		for _, w := range a.Args {
			if !broker(w) {
				return FaultAt{}, errk("lesson.error.restart-want-brokers-1")
			}
		}
	case "node node one-way?":
		node := func(w string) bool { b, err := strconv.Atoi(w); return err == nil && b >= 0 && b <= MaxExpBrokers }
		if len(a.Args) < 2 || len(a.Args) > 3 || !node(a.Args[0]) || !node(a.Args[1]) || a.Args[0] == a.Args[1] ||
			(len(a.Args) == 3 && a.Args[2] != "one-way") {
			return FaultAt{}, errk("lesson.error.cut-want-two-nodes")
		}
	case "":
		if len(a.Args) > 0 {
			return FaultAt{}, bad
		}
	}
	return FaultAt{Line: n, At: d, Action: a}, nil
}

func parsePlot(n int, f []string) (ExpPlot, error) {
	p := ExpPlot{Line: n}
	switch {
	case len(f) == 3 && f[1] == "by":
		p.Measure, p.By = f[0], f[2]
	case len(f) == 5 && f[1] == "by" && f[3] == "per":
		p.Measure, p.By, p.Per = f[0], f[2], f[4]
	default:
		return p, errk("lesson.error.want-syntax", "plot MEASURE by DIMENSION [per DIMENSION]")
	}
	if !slices.Contains(Measures, p.Measure) {
		return p, errk("lesson.error.measure-want-one", p.Measure, strings.Join(Measures, ", "))
	}
	for _, d := range []string{p.By, p.Per} {
		if d != "" && !slices.Contains(Dimensions, d) {
			return p, errk("lesson.error.dimension-want-one", d, strings.Join(Dimensions, ", "))
		}
	}
	if p.By == p.Per {
		return p, errk("lesson.error.by-per-name-same")
	}
	return p, nil
}

// parseExpCond reads a check's condition: the scenario language's terms,
// each query a measure and DIMENSION=VALUE selectors, the value a number
// or another query in braces.
func parseExpCond(n int, s string) (Cond, error) {
	c := Cond{Line: n}
	query := func(f []string) (Query, error) {
		if len(f) == 0 {
			return Query{}, errk("lesson.error.empty-query")
		}
		q := Query{Name: f[0], Args: f[1:]}
		if !slices.Contains(Measures, q.Name) {
			return q, errk("lesson.error.measure-want-one", q.Name, strings.Join(Measures, ", "))
		}
		for _, a := range q.Args {
			k, v, ok := strings.Cut(a, "=")
			if !ok || v == "" || !slices.Contains(Dimensions, k) {
				return q, errk("lesson.error.want-dimension-value-dimension", a, strings.Join(Dimensions, ", "))
			}
		}
		return q, nil
	}
	for _, part := range splitAnd(s) {
		f := strings.Fields(part)
		i := slices.IndexFunc(f, func(w string) bool { return slices.Contains(ops[:6], w) })
		if i < 1 || i == len(f)-1 {
			return c, errk("lesson.error.want-measure-dim-value", strings.TrimSpace(part), strings.Join(ops[:6], " "))
		}
		q, err := query(f[:i])
		if err != nil {
			return c, err
		}
		t := Term{Q: q, Op: f[i], Want: strings.Join(f[i+1:], " ")}
		if strings.HasPrefix(t.Want, "{") && strings.HasSuffix(t.Want, "}") {
			wq, err := query(strings.Fields(t.Want[1 : len(t.Want)-1]))
			if err != nil {
				return c, err
			}
			t.WantQ = &wq
		} else if v, err := strconv.ParseFloat(t.Want, 64); err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return c, errk("lesson.error.not-number-measure", t.Want)
		}
		c.Terms = append(c.Terms, t)
	}
	return c, nil
}

// CompareFloat applies a check's operator to two numbers.
func CompareFloat(got float64, op string, want float64) bool {
	switch op {
	case "==":
		return got == want
	case "!=":
		return got != want
	case "<":
		return got < want
	case "<=":
		return got <= want
	case ">":
		return got > want
	case ">=":
		return got >= want
	}
	return false
}
