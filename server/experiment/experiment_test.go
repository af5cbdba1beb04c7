package experiment

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tidemark/lessons"
	"tidemark/server/chaos"
	"tidemark/server/cluster"
)

const small = `experiment small
title Small
duration 2s
seeds 3 4
topic isr min.insync.replicas=2
workload acks-1 rate=30 acks=1 producers=2
faults crash
  at 500ms do crash leader
  at 1500ms do restart all
faults random random 1 down=500ms
plot throughput by faults per seed
check lost faults=crash >= 0
`

func parse(t *testing.T, src string) *lessons.Experiment {
	t.Helper()
	x, err := lessons.ParseExperiment("small.experiment", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// TestSchedule: a tick is the workload's produces (rate × tick, producers
// in turn), the faults due, a fetch round of every broker and a step;
// "restart all" restarts every broker; the same seed gives the same
// schedule and random faults depend on the seed alone.
func TestSchedule(t *testing.T) {
	x := parse(t, small)
	acts, ms, err := Schedule(x, x.Faults[0], x.Workloads[0], 3)
	if err != nil || ms != 2000 {
		t.Fatal(err, ms)
	}
	var produces, steps, restarts int
	crash := -1
	for i, a := range acts {
		switch a.Kind {
		case chaos.ActProduce:
			produces++
		case chaos.ActStep:
			steps++
		case chaos.ActRestart:
			restarts++
		case chaos.ActCrash:
			crash = i
			if !a.Leader || acts[i+1].Kind != chaos.ActFetch || acts[i-1].Kind != chaos.ActProduce {
				t.Fatalf("the crash %+v at %d is not the leader's after the tick's produces", a, i)
			}
		}
	}
	if produces < 55 || produces > 65 || steps != 20 || restarts != 3 || crash < 0 {
		t.Fatalf("%d produces, %d steps, %d restarts, crash at %d", produces, steps, restarts, crash)
	}
	again, _, _ := Schedule(x, x.Faults[0], x.Workloads[0], 3)
	if fmt.Sprint(again) != fmt.Sprint(acts) {
		t.Fatal("the same seed gave another schedule")
	}
	r3, _ := faultTimes(x, 3, x.Faults[1], 3)
	r4, _ := faultTimes(x, 3, x.Faults[1], 4)
	r3b, _ := faultTimes(x, 3, x.Faults[1], 3)
	if len(r3) != 2 || fmt.Sprint(r3) != fmt.Sprint(r3b) || fmt.Sprint(r3) == fmt.Sprint(r4) {
		t.Fatalf("random faults: %v %v %v", r3, r3b, r4)
	}
}

// TestExecuteReproducible: the same experiment twice gives the same
// measurements run for run, and writes every file.
func TestExecuteReproducible(t *testing.T) {
	x := parse(t, small)
	var got [2]string
	var res *Results
	for i := range got {
		var err error
		if res, err = Execute(context.Background(), x, Options{}); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, rr := range res.Runs {
			if rr.Error != "" {
				t.Fatalf("%s: %s", rr.Label(), rr.Error)
			}
			fmt.Fprintf(&b, "%s %v\n", rr.Label(), rr.Values)
		}
		got[i] = b.String()
	}
	if got[0] != got[1] {
		t.Fatalf("two plays differ:\n%s\n%s", got[0], got[1])
	}
	if len(res.Runs) != 4 || len(res.Summary) != 2 || !res.Passed() || len(res.Findings) != 2 {
		t.Fatalf("%+v", res)
	}
	dir := t.TempDir()
	if err := res.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"results.csv", "summary.csv", "report.md", "plot-1-throughput-by-faults-per-seed.svg"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	t.Log(got[0])
}

// TestChaosRunIsAnExperiment: a chaos run is an experiment — its
// configuration's topic configs, the checker's mixed producers and its
// schedule ("faults NAME chaos") — and both find the same: the same
// writes acknowledged and lost, the same elections, whether the engine
// reads each replica's log whole after every action (a chaos run) or only
// what it appended (an experiment's run).
func TestChaosRunIsAnExperiment(t *testing.T) {
	for _, tc := range []struct {
		cfg  chaos.Config
		seed uint64
	}{{chaos.Acks1, 7}, {chaos.Unclean, 12}, {chaos.StrictOn("quorum"), 3}} {
		var topic strings.Builder
		for _, k := range []string{"min.insync.replicas", "unclean.leader.election.enable", "truncation.rule", "replication.protocol"} {
			if v, ok := tc.cfg.TopicConfigs()[k]; ok {
				fmt.Fprintf(&topic, " %s=%s", k, v)
			}
		}
		src := fmt.Sprintf("experiment as-chaos\nduration 1s\nseeds %d\ntopic %s%s\nworkload checker acks=%s idempotence=mixed\nfaults schedule chaos actions=60\n",
			tc.seed, tc.cfg, topic.String(), tc.cfg.Acks())
		res, err := Execute(context.Background(), parse(t, src), Options{})
		if err != nil || res.Runs[0].Error != "" {
			t.Fatal(err, res.Runs[0].Error)
		}
		cr, err := chaos.Run(context.Background(), tc.seed, tc.cfg, chaos.Generate(tc.seed, 60), chaos.Options{})
		if err != nil {
			t.Fatal(err)
		}
		want := Measure(cr, 1000, 100*time.Millisecond)
		got := res.Runs[0].Values
		for _, m := range []string{"attempted", "acked", "lost", "duplicates", "elections", "isr-shrinks", "latency-p50", "latency-p99"} {
			if got[m] != want[m] {
				t.Errorf("%s seed %d: %s %v as an experiment, %v as a chaos run", tc.cfg, tc.seed, m, got[m], want[m])
			}
		}
		t.Logf("%s seed %d: %v", tc.cfg, tc.seed, got)
	}
}

// TestRunChaosReplays: a chaos run played through the experiment engine
// exports as a chaos run of its configuration, and replaying the export
// with chaos.Replay (the engine reading every log whole) finds the same.
func TestRunChaosReplays(t *testing.T) {
	const seed = 5
	res, err := RunChaos(context.Background(), seed, chaos.Strict, chaos.Generate(seed, 60), chaos.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := res.Export()
	if err != nil {
		t.Fatal(err)
	}
	again, err := chaos.Replay(context.Background(), b, chaos.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Config != chaos.Strict || fmt.Sprint(res.Counts) != fmt.Sprint(again.Counts) || fmt.Sprint(res.Outcomes) != fmt.Sprint(again.Outcomes) {
		t.Fatalf("through the experiment engine %s %+v, replayed %+v", res.Config, res.Counts, again.Counts)
	}
}

// TestRetriesDuplicate: under leader crashes and a power loss, plain
// producers that resend what failed (retries=yes) write some records twice;
// idempotent producers, resending the same batch with its sequence, none.
func TestRetriesDuplicate(t *testing.T) {
	x := parse(t, `experiment dup
duration 8s
seeds 1
topic isr min.insync.replicas=2
workload plain-retries rate=60 acks=all retries=yes producers=2
workload idempotent rate=60 acks=all idempotence=yes producers=2
faults crashes
  at 2s do crash leader
  at 4s do restart all
  at 5s do power-loss leader
  at 7s do restart all
check duplicates workload=plain-retries > 0
check duplicates workload=idempotent == 0
`)
	res, err := Execute(context.Background(), x, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Checks {
		if !c.Holds {
			t.Errorf("%s: %v %s", c.Check, c.Got, c.Error)
		}
	}
}

// TestCompareIsAnExperiment: a comparison played as an experiment on a
// shared cluster (RunCompare) finds what chaos.Compare finds, protocol
// for protocol, and reports each topic's live counts for the charts.
func TestCompareIsAnExperiment(t *testing.T) {
	const seed = 3
	actions := chaos.Generate(seed, 40)
	samples := 0
	got, err := RunCompare(context.Background(), seed, actions, nil, chaos.Options{Progress: func(p chaos.Progress) {
		if p.Phase == chaos.PhaseSchedule && len(p.Protocols) == len(chaos.Protocols) {
			samples++
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	want, err := chaos.Compare(context.Background(), seed, actions, nil, chaos.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Protocols) != len(want.Protocols) || fmt.Sprint(got.Outcomes) != fmt.Sprint(want.Outcomes) || samples != len(actions) {
		t.Fatalf("%d protocols, %d samples; outcomes\n%v\n%v", len(got.Protocols), samples, got.Outcomes, want.Outcomes)
	}
	for i, g := range got.Protocols {
		w := want.Protocols[i]
		if g.Protocol != w.Protocol || g.Attempted != w.Attempted || g.Accepted != w.Accepted || g.Lost != w.Lost || g.Committed != w.Committed || len(g.Series) != len(w.Series) {
			t.Errorf("%s: as an experiment %d/%d lost %d committed %d (%d samples); compared %d/%d lost %d committed %d (%d samples)", g.Protocol,
				g.Accepted, g.Attempted, g.Lost, g.Committed, len(g.Series), w.Accepted, w.Attempted, w.Lost, w.Committed, len(w.Series))
		}
	}
}

// TestSharedCluster: "cluster shared" plays a run's topic configurations
// on one cluster, a topic each: one cluster per fault schedule × workload
// × seed, and a measured run per topic.
func TestSharedCluster(t *testing.T) {
	x := parse(t, `experiment shared
cluster shared
duration 2s
seeds 1 2
topic strict min.insync.replicas=2
topic loose min.insync.replicas=1
workload acks-all rate=30 acks=all producers=2
faults two-down
  at 500ms do crash 2
  at 500ms do crash 3
  at 1500ms do restart 2 3
check availability topic=loose > {availability topic=strict}
`)
	plan := Plan(x)
	if len(plan) != 4 || plan[0].Topic != "strict" || plan[1].Topic != "loose" || plan[1].Seed != 1 || plan[2].Seed != 2 || plan[3].Index != 3 {
		t.Fatalf("plan %+v", plan)
	}
	clusters := 0
	res, err := Execute(context.Background(), x, Options{Chaos: chaos.Options{Open: func(o cluster.Options) (*cluster.Cluster, func() error, error) {
		clusters++
		dir := t.TempDir()
		o.DataDir = dir
		c, err := cluster.Open(o)
		if err != nil {
			return nil, nil, err
		}
		return c, c.Close, nil
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if clusters != 2 || len(res.Runs) != 4 || !res.Passed() {
		t.Fatalf("%d clusters, %d runs, checks %+v", clusters, len(res.Runs), res.Checks)
	}
	for _, rr := range res.Runs {
		if rr.Error != "" || rr.Values["attempted"] == 0 {
			t.Errorf("%s: %v %s", rr.Label(), rr.Values, rr.Error)
		}
	}
}
