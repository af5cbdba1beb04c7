// Package experiment runs experiment files (lessons.ParseExperiment): every
// run of the matrix — a topic configuration × a fault schedule × a
// workload × a seed — on a fresh paused lab cluster of the chaos engine,
// whose clock moves only with the schedule, so a seed is a result. It
// measures each run (throughput, produce latency, acknowledged writes
// lost, duplicates, unavailable time, ISR shrinks, leader elections),
// sums them up per configuration, checks the file's claims and writes
// results.csv, summary.csv, SVG plots and report.md.
package experiment

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"tidemark/lessons"
	"tidemark/server/chaos"
	"tidemark/server/controller"
)

// Run is one run of the matrix.
type Run struct {
	Index    int    `json:"index"`
	Topic    string `json:"topic"`
	Faults   string `json:"faults"`
	Workload string `json:"workload"`
	Seed     uint64 `json:"seed"`
}

// Label names the run for a person: "isr / leader-crash / acks-1 / seed 2".
func (r Run) Label() string {
	return fmt.Sprintf("%s / %s / %s / seed %d", r.Topic, r.Faults, r.Workload, r.Seed)
}

// dim is the run's value of a dimension.
func (r Run) dim(d string) string {
	switch d {
	case "topic":
		return r.Topic
	case "faults":
		return r.Faults
	case "workload":
		return r.Workload
	case "seed":
		return strconv.FormatUint(r.Seed, 10)
	}
	return ""
}

// Plan lists the matrix's runs in order: topics, then fault schedules,
// then workloads, then seeds vary slowest to fastest; on a shared cluster
// ("cluster shared") topics vary fastest, the runs one cluster plays
// together next to each other.
func Plan(x *lessons.Experiment) []Run {
	var out []Run
	for _, t := range x.Topics {
		for _, f := range x.Faults {
			for _, w := range x.Workloads {
				for _, s := range x.Seeds {
					out = append(out, Run{Topic: t.Name, Faults: f.Name, Workload: w.Name, Seed: s})
				}
			}
		}
	}
	if x.Shared {
		// Topics fastest: what one cluster plays together, next to each other.
		n := len(out) / len(x.Topics)
		shared := make([]Run, 0, len(out))
		for i := range n {
			for t := range x.Topics {
				shared = append(shared, out[t*n+i])
			}
		}
		out = shared
	}
	for i := range out {
		out[i].Index = i
	}
	return out
}

// groups splits a plan into what each cluster plays: a run each, or on a
// shared cluster every topic of a faults × workload × seed.
func groups(x *lessons.Experiment, plan []Run) [][]Run {
	n := 1
	if x.Shared {
		n = len(x.Topics)
	}
	var out [][]Run
	for len(plan) > 0 {
		k := min(n, len(plan))
		out = append(out, plan[:k])
		plan = plan[k:]
	}
	return out
}

// RunResult is one finished run: its measurements by name
// (lessons.Measures), or why it could not run.
type RunResult struct {
	Run
	Values map[string]float64 `json:"values"`
	Error  string             `json:"error,omitempty"`
	// WallMs is how long the run took on this machine.
	WallMs int64 `json:"wall_ms"`
	// Actions is the length of its schedule.
	Actions int `json:"actions"`
	// Recording is the run's events for the stage.
	Recording *chaos.Recording `json:"-"`
}

// Progress is where an experiment is: runs done of Total, and within the
// current run, actions played of Actions.
type Progress struct {
	Done    int    `json:"done"`
	Total   int    `json:"total"`
	Current string `json:"current,omitempty"`
	Action  int    `json:"action"`
	Actions int    `json:"actions"`
}

// Options tune an experiment's runs; the zero value is usable.
type Options struct {
	// Progress is called as runs advance (from the experiment's goroutine).
	Progress func(Progress)
	// Finished is called with each run as it ends.
	Finished func(RunResult)
	// Seeds, when > 0, keeps only the file's first Seeds seeds: the
	// reduced size the tests run.
	Seeds int
	// Chaos are the engine's options (Open, Logger); its Progress is set
	// by Execute.
	Chaos chaos.Options
}

// Execute runs every run of x in order and returns the results, summed up
// and checked. A run that fails is kept with its error; ctx's end stops
// the experiment with what finished so far.
func Execute(ctx context.Context, x *lessons.Experiment, o Options) (*Results, error) {
	if o.Seeds > 0 && o.Seeds < len(x.Seeds) {
		y := *x
		y.Seeds = x.Seeds[:o.Seeds]
		x = &y
	}
	plan := Plan(x)
	res := &Results{Experiment: x, Runs: make([]RunResult, 0, len(plan))}
	start := time.Now()
	report := func(p Progress) {
		if o.Progress != nil {
			o.Progress(p)
		}
	}
	for _, g := range groups(x, plan) {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		done, label := len(res.Runs), groupLabel(g)
		report(Progress{Done: done, Total: len(plan), Current: label})
		rrs, _, _ := executeGroup(ctx, x, g, nil, o.Chaos, func(p chaos.Progress) {
			report(Progress{Done: done, Total: len(plan), Current: label, Action: p.Action, Actions: p.Total})
		})
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		for _, rr := range rrs {
			res.Runs = append(res.Runs, rr)
			if o.Finished != nil {
				o.Finished(rr)
			}
		}
	}
	report(Progress{Done: len(plan), Total: len(plan)})
	res.Elapsed = time.Since(start)
	res.sumUp()
	return res, nil
}

// groupLabel names what one cluster plays: a run's label, its topics
// joined with "+" on a shared cluster.
func groupLabel(g []Run) string {
	r := g[0]
	if len(g) > 1 {
		var ts []string
		for _, rr := range g {
			ts = append(ts, rr.Topic)
		}
		r.Topic = strings.Join(ts, "+")
	}
	return r.Label()
}

// executeGroup plays runs (one fault schedule, workload and seed; a topic
// each) on one cluster under the engine's options co, its progress
// reported to progress, and measures each run. actions, if not nil, is
// the schedule to play (else Schedule's). The engine's whole answer is
// returned too; when the cluster run failed, its error (also each run's).
func executeGroup(ctx context.Context, x *lessons.Experiment, runs []Run, actions []chaos.Action, co chaos.Options, progress func(chaos.Progress)) ([]RunResult, *chaos.Topics, error) {
	began := time.Now()
	out := make([]RunResult, len(runs))
	fail := func(err error) ([]RunResult, *chaos.Topics, error) {
		for i := range out {
			out[i].Error = err.Error()
		}
		return out, nil, err
	}
	var topics []chaos.TopicSpec
	var sh shape
	for i, run := range runs {
		out[i] = RunResult{Run: run, Values: map[string]float64{}}
		t := find(x.Topics, run.Topic, func(t lessons.ExpTopic) string { return t.Name })
		topics = append(topics, chaos.TopicSpec{Name: t.Name, Configs: t.Configs, Partitions: int32(t.Partitions), ReplicationFactor: int16(t.ReplicationFactor)})
		sh = shape{brokers: int32(t.Brokers), partitions: max(sh.partitions, int32(t.Partitions))}
	}
	run := runs[0]
	f, w := find(x.Faults, run.Faults, func(f lessons.ExpFaults) string { return f.Name }),
		find(x.Workloads, run.Workload, func(w lessons.ExpWorkload) string { return w.Name })
	labMs := int64(0)
	if actions == nil {
		var err error
		if actions, labMs, err = schedule(x, sh, f, w, run.Seed); err != nil {
			return fail(err)
		}
	}
	co.Brokers = int(sh.brokers)
	if !x.Shared {
		topics[0].Name = chaos.Topic // a run of its own writes to the chaos engine's topic
	}
	co.Progress = progress
	ts, err := chaos.RunTopics(ctx, run.Seed, specOf(w), topics, actions, co)
	if err != nil {
		return fail(err)
	}
	wall := time.Since(began).Milliseconds()
	for i, t := range ts.Topics {
		rr := &out[i]
		rr.WallMs, rr.Actions = wall, len(actions)
		if t.Refused != nil {
			rr.Error = fmt.Sprintf("creating the topic: %v", t.Refused)
			continue
		}
		rr.Values = Measure(t.Result, labMs, x.Tick)
		rr.Recording = t.Result.Recording
	}
	return out, ts, nil
}

// specOf is what the engine's producers do under a workload.
func specOf(w lessons.ExpWorkload) chaos.Spec {
	return chaos.Spec{Acks: w.Acks, Idempotent: w.Idempotent, Mixed: w.Mixed, Retries: w.Retries, RecordBytes: w.Size}
}

// RunChaos plays a chaos run as a one-run experiment: cfg's topic configs,
// the checker's mixed producers asking for cfg's acks, and the run's own
// schedule (a "faults NAME chaos" schedule). It is chaos.Run's equal
// (TestChaosRunIsAnExperiment) and the lab's chaos service plays its runs
// with it (chaos.ServiceOptions.Run), so /chaos and /api/v1/chaos are a
// view of the experiment engine with a fixed matrix.
func RunChaos(ctx context.Context, seed uint64, cfg chaos.Config, actions []chaos.Action, o chaos.Options) (*chaos.Result, error) {
	if _, err := chaos.ParseConfig(string(cfg)); err != nil {
		return nil, err
	}
	spec := specOf(checker(cfg.Acks()))
	spec.TopicConfigs = cfg.TopicConfigs()
	res, err := chaos.RunSpec(ctx, seed, spec, actions, o)
	if res != nil {
		res.Config = cfg // what a replay plays it under
	}
	return res, err
}

// checker is the chaos checker's workload: producers 1 and 2 plain
// (acks), 3 and 4 idempotent.
func checker(acks string) lessons.ExpWorkload {
	return lessons.ExpWorkload{Name: "checker", Acks: acks, Mixed: true, Producers: chaos.Producers}
}

// RunCompare plays a comparison as an experiment of one run on a shared
// cluster: a topic per protocol (chaos.CompareTopics, each under
// chaos.StrictOn), the checker's producers asking for acks=all, and the
// comparison's schedule (a "faults NAME chaos" schedule). The lab's chaos
// service plays its comparisons with it (chaos.ServiceOptions.Compare),
// so /compare and /api/v1/compare are a view of the experiment engine.
func RunCompare(ctx context.Context, seed uint64, actions []chaos.Action, protocols []controller.ReplicationProtocol, o chaos.Options) (*chaos.Comparison, error) {
	x := &lessons.Experiment{ID: "compare", Shared: true, Tick: 100 * time.Millisecond, Seeds: []uint64{seed},
		Workloads: []lessons.ExpWorkload{checker("all")}, Faults: []lessons.ExpFaults{{Name: "schedule", Kind: lessons.FaultsChaos, Actions: len(actions)}}}
	for _, t := range chaos.CompareTopics(protocols) {
		x.Topics = append(x.Topics, lessons.ExpTopic{Name: t.Name, Configs: t.Configs})
	}
	_, ts, err := executeGroup(ctx, x, Plan(x), actions, o, o.Progress)
	if err != nil {
		return nil, err
	}
	return chaos.ComparisonOf(seed, actions, ts), nil
}

func find[T any](xs []T, name string, nameOf func(T) string) T {
	for _, v := range xs {
		if nameOf(v) == name {
			return v
		}
	}
	var zero T
	return zero
}

// Measure takes a finished run's measurements: labMs is the lab time its
// workload lasted, tick its step.
//
//   - throughput: acknowledged writes per second of lab time;
//   - latency-p50, latency-p99: lab ms from a write's first send to its
//     acknowledgement (nearest rank);
//   - attempted, acked, availability (acked / attempted);
//   - lost: acknowledged writes a consumer cannot read at the end
//     (power loss before any fsync included);
//   - duplicates: values a consumer reads more than once;
//   - unavailable-ms: lab time during which a producer waited longer than
//     a tick for an acknowledgement, or was refused (unavailableMs);
//   - isr-shrinks, elections: ISR changes that left a replica out, leader
//     elections.
func Measure(res *chaos.Result, labMs int64, tick time.Duration) map[string]float64 {
	n := res.Counts
	v := map[string]float64{}
	if labMs > 0 {
		v["throughput"] = float64(n.Acked) * 1000 / float64(labMs)
	}
	ms, _ := chaos.Latencies(res.Writes)
	v["latency-p50"], v["latency-p99"] = ms.P50, ms.P99
	v["attempted"], v["acked"] = float64(n.Writes), float64(n.Acked)
	if n.Writes > 0 {
		v["availability"] = float64(n.Acked) / float64(n.Writes)
	}
	v["lost"] = float64(n.Lost + n.UnsyncedLost)
	v["duplicates"] = float64(n.Duplicated)
	v["unavailable-ms"] = float64(unavailableMs(res.Writes, tick.Milliseconds()))
	v["isr-shrinks"] = float64(res.ISRShrinks)
	v["elections"] = float64(len(res.Elections))
	return v
}

// unavailableMs is the lab time, in whole ticks, during which some write
// was stalled: acknowledged more than a tick after it was first sent (from
// then on until its acknowledgement: its partition had no leader, or the
// leader waited for replicas it did not have) or never acknowledged (the
// tick it was refused in; a plain producer does not resend). A producer
// has one request in flight per partition, so a partition that cannot take
// writes shows as one write waiting, not as many refused.
func unavailableMs(writes []chaos.Write, tickMs int64) int64 {
	tickMs = max(tickMs, 1)
	stalled := map[int64]bool{}
	for _, w := range writes {
		from, to := w.SentMs, w.SentMs+tickMs
		if w.Acked {
			from, to = w.SentMs+tickMs, w.AckedMs
		}
		for t := from / tickMs; t*tickMs < to; t++ {
			stalled[t] = true
		}
	}
	return int64(len(stalled)) * tickMs
}

// Schedule is a run's schedule for the chaos engine and the lab time its
// workload lasts (ms). Each tick: the workload's produces (rate × tick on
// average, the fraction drawn from the seed; producers in turn, each
// partition drawn), the faults due within the tick (after the produces,
// so that a crash finds writes its followers have not fetched), a fetch
// round of every broker, and the tick's step of the clock. A "chaos"
// fault schedule is the chaos checker's own schedule of the seed.
func Schedule(x *lessons.Experiment, f lessons.ExpFaults, w lessons.ExpWorkload, seed uint64) ([]chaos.Action, int64, error) {
	return schedule(x, shape{brokers: int32(x.Brokers), partitions: chaos.Partitions}, f, w, seed)
}

// shape is the cluster a schedule plays on: its brokers, and its topics'
// partitions (the most of any).
type shape struct{ brokers, partitions int32 }

// schedule is Schedule on a cluster of shape sh.
func schedule(x *lessons.Experiment, sh shape, f lessons.ExpFaults, w lessons.ExpWorkload, seed uint64) ([]chaos.Action, int64, error) {
	if f.Kind == lessons.FaultsChaos {
		acts := chaos.Generate(seed, f.Actions)
		var ms int64
		for _, a := range acts {
			ms += a.StepMs
		}
		return acts, ms, nil
	}
	faults, err := faultTimes(x, sh.brokers, f, seed)
	if err != nil {
		return nil, 0, err
	}
	rng := rand.New(rand.NewPCG(seed, 0x776f_726b_6c6f_6164)) // "workload"
	ticks := int(x.Duration / x.Tick)
	perTick := float64(w.Rate) * x.Tick.Seconds()
	var out []chaos.Action
	next := 0
	for i := range ticks {
		k := int(perTick)
		if rng.Float64() < perTick-float64(k) {
			k++
		}
		for j := range k {
			_ = j
			out = append(out, chaos.Action{Kind: chaos.ActProduce, Producer: 1 + next%w.Producers, Partition: rng.Int32N(sh.partitions)})
			next++
		}
		end := time.Duration(i+1) * x.Tick
		for len(faults) > 0 && faults[0].at < end {
			out = append(out, faults[0].a)
			faults = faults[1:]
		}
		for b := int32(1); b <= sh.brokers; b++ {
			out = append(out, chaos.Action{Kind: chaos.ActFetch, Broker: b})
		}
		out = append(out, chaos.Action{Kind: chaos.ActStep, StepMs: x.Tick.Milliseconds()})
		if len(out) > chaos.MaxSpecActions {
			return nil, 0, fmt.Errorf("the workload %s over %s makes more than %d actions: lower its rate or the duration", w.Name, x.Duration, chaos.MaxSpecActions)
		}
	}
	return out, int64(ticks) * x.Tick.Milliseconds(), nil
}

// timedAction is a fault at a time.
type timedAction struct {
	at time.Duration
	a  chaos.Action
}

// faultTimes lists a fault schedule's actions in time order on a cluster
// of brokers: its "at" lines, or random crashes drawn from the seed (the
// same under every topic and workload of that size).
func faultTimes(x *lessons.Experiment, brokers int32, f lessons.ExpFaults, seed uint64) ([]timedAction, error) {
	var out []timedAction
	switch f.Kind {
	case lessons.FaultsNone:
		return nil, nil
	case lessons.FaultsRandom:
		rng := rand.New(rand.NewPCG(seed, 0x6661_756c_7473)) // "faults"
		span := x.Duration - f.Down
		if span <= 0 {
			return nil, errors.New("random faults: down is not shorter than the duration")
		}
		for range f.Count {
			at := time.Duration(rng.Int64N(int64(span)))
			b := 1 + rng.Int32N(brokers)
			out = append(out, timedAction{at, chaos.Action{Kind: chaos.ActCrash, Broker: b}},
				timedAction{at + f.Down, chaos.Action{Kind: chaos.ActRestart, Broker: b}})
		}
		slices.SortStableFunc(out, func(a, b timedAction) int { return int(a.at - b.at) })
		return out, nil
	}
	for _, fa := range f.At {
		acts, err := faultActions(fa.Action, brokers)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", fa.Line, err)
		}
		for _, a := range acts {
			out = append(out, timedAction{fa.At, a})
		}
	}
	return out, nil
}

// faultActions turns an "at" line's action into the engine's.
func faultActions(a lessons.Action, brokers int32) ([]chaos.Action, error) {
	num := func(s string) int32 { n, _ := strconv.Atoi(s); return int32(n) }
	switch a.Name {
	case "crash", "power-loss":
		k := chaos.ActCrash
		if a.Name == "power-loss" {
			k = chaos.ActPowerLoss
		}
		if a.Args[0] == "leader" {
			return []chaos.Action{{Kind: k, Leader: true, Partition: 0}}, nil
		}
		return []chaos.Action{{Kind: k, Broker: num(a.Args[0])}}, nil
	case "restart":
		ids := a.Args
		if len(ids) == 1 && ids[0] == "all" {
			ids = nil
			for b := range brokers {
				ids = append(ids, strconv.Itoa(int(b+1)))
			}
		}
		var out []chaos.Action
		for _, id := range ids {
			out = append(out, chaos.Action{Kind: chaos.ActRestart, Broker: num(id)})
		}
		return out, nil
	case "cut":
		return []chaos.Action{{Kind: chaos.ActCut, From: num(a.Args[0]), To: num(a.Args[1]), OneWay: len(a.Args) == 3}}, nil
	case "heal":
		return []chaos.Action{{Kind: chaos.ActHeal}}, nil
	}
	return nil, fmt.Errorf("unknown fault %q", a.Name)
}

// joinArgs writes a query back as the file has it.
func joinArgs(q lessons.Query) string {
	return strings.TrimSpace(q.Name + " " + strings.Join(q.Args, " "))
}
