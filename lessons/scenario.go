package lessons

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"tidemark/server/broker"
	"tidemark/server/cluster"
	"tidemark/server/controller"
)

// ScenarioRun names one play of a scenario: a back-end and a fencing rule.
type ScenarioRun struct {
	Backend string
	Fencing string
}

func (r ScenarioRun) String() string { return r.Backend + "/" + r.Fencing }

// Runs lists the plays a script asks for: each back-end it runs on under
// each of its fencing rules. The rules' controller is the ZooKeeper-era
// one before KIP-380 (a restarted broker keeps its ISR places), so the
// rules back-end plays only under fencing zookeeper-pre-2.2.
func (s *Script) Runs() []ScenarioRun {
	fencings := s.Fencings
	if len(fencings) == 0 {
		fencings = []string{controller.FencingKRaftELR.String()}
	}
	var out []ScenarioRun
	for _, b := range []string{BackendRules, BackendCluster} {
		if !s.RunsOn(b) {
			continue
		}
		for _, f := range fencings {
			if be := backends[b]; be != nil && be.Fencing != "" && f != be.Fencing {
				continue
			}
			out = append(out, ScenarioRun{b, f})
		}
	}
	return out
}

// ScenarioError is a scenario that failed: where, why, and the lanes as
// text (each replica's log, LEO and HW, and the controller's view).
type ScenarioError struct {
	File  string
	Line  int
	Run   ScenarioRun
	Msg   string
	Lanes string
}

func (e *ScenarioError) Error() string {
	return fmt.Sprintf("%s:%d (%s): %s\n--- lanes:\n%s", e.File, e.Line, e.Run, e.Msg, e.Lanes)
}

// RunScenario plays a script once: its setup and every step's actions in
// order on the back-end, each check required to hold (a lesson's
// predictions are not asked). dir holds the lab cluster's data (the
// cluster back-end only). The first failure is a *ScenarioError.
func RunScenario(ctx context.Context, s *Script, run ScenarioRun, dir string) error {
	return playScenario(ctx, s, run, dir, nil)
}

// TranscribeScenario plays a script as RunScenario does but keeps what
// each show line printed instead of comparing it with the file, for
// RewriteShows.
func TranscribeScenario(ctx context.Context, s *Script, run ScenarioRun, dir string) (Shown, error) {
	shown := Shown{}
	err := playScenario(ctx, s, run, dir, shown)
	return shown, err
}

// playScenario is RunScenario; a non-nil shown records the show lines.
func playScenario(ctx context.Context, s *Script, run ScenarioRun, dir string, shown Shown) error {
	var items []Item
	for _, a := range s.Setup {
		items = append(items, Item{Line: a.Line, Action: &a})
	}
	for _, st := range s.Steps {
		items = append(items, st.Items...)
	}
	fail := func(line int, lanes string, format string, a ...any) error {
		return &ScenarioError{File: s.File, Line: line, Run: run, Msg: fmt.Sprintf(format, a...), Lanes: lanes}
	}
	// show prints the topic; the file's block must say the same, unless
	// the play is transcribed.
	show := func(it Item, d Durable) error {
		got := d.Transcript()
		if shown != nil {
			shown[it.Line] = got
			return nil
		}
		want, ok := it.Show.want(run)
		if !ok {
			return fmt.Errorf("show %s has no block for %s\n%s", it.Show.Topic, run, showMismatch("", got))
		}
		if want != got {
			return fmt.Errorf("%s", showMismatch(want, got))
		}
		return nil
	}
	last := 0
	if len(items) > 0 {
		last = items[len(items)-1].Line
	}
	switch run.Backend {
	default:
		be, err := backend(run.Backend)
		if err != nil {
			return err
		}
		r := be.Start(s.Brokers)
		v := newVerdicts(items, r.Topics, r.Violations, r.Durable)
		for _, it := range items {
			switch {
			case it.Expect != nil:
				if err := v.expect(*it.Expect); err != nil {
					return fail(it.Line, r.Lanes(), "%v", err)
				}
			case it.Action != nil:
				r.Mark()
				args, opt := splitArgs(*it.Action)
				if err := r.Act(it.Action.Name, args, opt); err != nil {
					return fail(it.Line, r.Lanes(), "do %s: %v", it.Action.Name, err)
				}
				if err := r.Check(); err != nil {
					return fail(it.Line, r.Lanes(), "%v", err)
				}
				v.seen(it.Line)
			case it.Show != nil:
				if err := show(it, r.Durable(it.Show.Topic)); err != nil {
					return fail(it.Line, r.Lanes(), "%v", err)
				}
			case it.Check != nil:
				ok, got, err := evalWith(*it.Check, func(q Query) (Value, error) { return r.Query(q.Name, q.Args) })
				if err != nil || !ok {
					return fail(it.Line, r.Lanes(), "check %s: got %s %v", it.Name.En, got.En, errOrEmpty(err))
				}
			}
		}
		if err := v.end(); err != nil {
			return fail(last, r.Lanes(), "%v", err)
		}
		return nil
	case BackendCluster:
		rule, err := controller.ParseFencingRule(run.Fencing)
		if err != nil {
			return err
		}
		// The HW checkpoint is written only when the script says so, so
		// that the KIP-101 timings are exact (as in a lesson run).
		interval := time.Hour
		if s.CheckpointInterval > 0 {
			interval = s.CheckpointInterval
		}
		opts := cluster.Options{DataDir: dir, Brokers: s.Brokers, Paused: true, FencingRule: &rule,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Broker: broker.Config{HighWatermarkCheckpointInterval: interval}}
		c, err := cluster.Open(opts)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithCancel(ctx)
		e := newEnv(ctx, c, func() time.Duration { return 0 })
		e.watch = newWatcher()
		e.reopen = func() (*cluster.Cluster, error) { return cluster.Open(opts) }
		v := newVerdicts(items, func() []string { return e.topics }, e.watch.violations, e.durableOf)
		// Produces still waiting end with the run: cancel, close, wait.
		defer e.wg.Wait()
		defer func() { e.c.Close() }() // the cluster of the moment (restart-lab)
		defer cancel()
		for _, it := range items {
			if x := it.Expect; x != nil {
				if err := v.expect(*x); err != nil {
					return fail(it.Line, clusterLanes(e, s), "%v", err)
				}
				continue
			}
			if it.Show != nil {
				if err := show(it, e.durableOf(it.Show.Topic)); err != nil {
					return fail(it.Line, clusterLanes(e, s), "%v", err)
				}
				continue
			}
			if err := e.item(it); err != nil {
				return fail(it.Line, clusterLanes(e, s), "%v", err)
			}
			if it.Action != nil {
				if err := e.watch.check(e); err != nil {
					return fail(it.Line, clusterLanes(e, s), "%v", err)
				}
				v.seen(it.Line)
			}
			if n := len(e.out.Checks); it.Check != nil && n > 0 && !e.out.Checks[n-1].Pass {
				return fail(it.Line, clusterLanes(e, s), "check %s: got %s", it.Name.En, e.out.Checks[n-1].Got.En)
			}
		}
		if err := v.end(); err != nil {
			return fail(last, clusterLanes(e, s), "%v", err)
		}
		return nil
	}
}

func errOrEmpty(err error) string {
	if err == nil {
		return ""
	}
	return "(" + err.Error() + ")"
}

// splitArgs separates an action's key=value options from its arguments,
// as Env.do does.
func splitArgs(a Action) ([]string, map[string]string) {
	var args []string
	opt := map[string]string{}
	keys := actions[a.Name].keys
	for _, x := range a.Args {
		if k, v, ok := strings.Cut(x, "="); ok && len(keys) > 0 {
			opt[k] = v
			continue
		}
		args = append(args, x)
	}
	return args, opt
}

// clusterLanes is the lab cluster's lanes of every topic the script
// creates, in English.
func clusterLanes(e *Env, s *Script) string {
	saved := e.out
	e.out = Outcome{}
	var b strings.Builder
	for _, a := range s.Setup {
		if a.Name == "create-topic" {
			e.sayLanes(a.Args[0])
		}
	}
	for _, t := range e.out.Says {
		fmt.Fprintln(&b, t.En)
	}
	e.out = saved
	return b.String()
}

// verdicts are a run's named violations (see Expect): what the back-end's
// watcher saw after every action, what the chaos checker finds at each
// expect line and at the end (see Durable), and what the file expects.
type verdicts struct {
	expected map[string]bool // "topic: lost m2"
	since    map[string]int  // the line after which each was first seen
	topics   func() []string
	watched  func(topic string) []string
	state    func(topic string) Durable
	judged   map[string][]string // the checker's findings, as of its last look
}

func newVerdicts(items []Item, topics func() []string, watched func(string) []string, state func(string) Durable) *verdicts {
	v := &verdicts{expected: map[string]bool{}, since: map[string]int{}, topics: topics, watched: watched, state: state, judged: map[string][]string{}}
	for _, it := range items {
		if x := it.Expect; x != nil {
			v.expected[x.Topic+": "+x.Key()] = true
		}
	}
	return v
}

// found is topic's violations: the watcher's and the checker's.
func (v *verdicts) found(topic string) []string {
	all := append(slices.Clone(v.watched(topic)), v.judged[topic]...)
	slices.Sort(all)
	return slices.Compact(all)
}

// judge asks the checker about every topic now.
func (v *verdicts) judge() {
	for _, t := range v.topics() {
		v.judged[t] = v.state(t).findings()
	}
}

// seen notes, after the action at line, the violations first seen there.
func (v *verdicts) seen(line int) {
	for _, t := range v.topics() {
		for _, x := range v.found(t) {
			if _, ok := v.since[t+": "+x]; !ok {
				v.since[t+": "+x] = line
			}
		}
	}
}

// expect checks an expect line: its violation happened by now.
func (v *verdicts) expect(x Expect) error {
	v.judge()
	if found := v.found(x.Topic); !slices.Contains(found, x.Key()) {
		return fmt.Errorf("expect %s %s: not (yet) seen; violations of %s so far: %v", x.Kind, strings.TrimSpace(x.Topic+" "+x.Arg), x.Topic, found)
	}
	return nil
}

// end checks that every violation that happened is expected.
func (v *verdicts) end() error {
	v.judge()
	var miss []string
	for _, t := range v.topics() {
		for _, x := range v.found(t) {
			if k := t + ": " + x; !v.expected[k] {
				if line, ok := v.since[k]; ok {
					k += fmt.Sprintf(" (after line %d)", line)
				} else {
					k += " (at the end)"
				}
				miss = append(miss, k)
			}
		}
	}
	if len(miss) > 0 {
		return fmt.Errorf("violations no expect line names: %s", strings.Join(miss, ", "))
	}
	return nil
}
