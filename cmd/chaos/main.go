// Command chaos runs many seeded chaos schedules per configuration on
// private lab clusters (loopback only) and prints, per configuration, what
// the durability checker found: go tool task chaos -- -runs 200 -configs strict.
// With -compare it plays each seed's schedule once as a comparison (one
// topic per replication protocol on one cluster) and prints, per protocol,
// the comparison's figures over every run.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"tidemark/server/chaos"
	"tidemark/server/controller"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
}

// tally is one configuration's row.
type tally struct {
	runs    int
	counts  chaos.Counts
	failing []uint64 // seeds with a violation (anything but unsynced power loss)
	broken  []uint64 // seeds the engine could not finish
	// unsettled are the seeds that left a partition without a leader or
	// with a short ISR once healed and settled.
	unsettled []uint64
	// delays is what link delays caused (chaos.DelayEffects).
	delays chaos.DelayEffects
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	runs := fs.Int("runs", 1000, "schedules per configuration (seeds first..first+runs-1)")
	first := fs.Uint64("seed", 1, "first seed")
	actions := fs.Int("actions", chaos.DefaultActions, fmt.Sprintf("actions per schedule (1..%d)", chaos.MaxActions))
	var all []string
	for _, c := range chaos.Configs() {
		all = append(all, string(c))
	}
	configs := fs.String("configs", strings.Join(all, ","), "comma-separated configurations (strict-<protocol>: strict on that replication.protocol)")
	parallel := fs.Int("parallel", runtime.GOMAXPROCS(0), "runs at once")
	export := fs.String("export", "", "write each run with violations or unsettled partitions, or that could not finish, as JSON to this directory (<config>-<seed>.json)")
	compare := fs.Bool("compare", false, "play each schedule once on one topic per protocol and print the comparison")
	var names []string
	for _, p := range chaos.Protocols {
		names = append(names, string(p))
	}
	protocols := fs.String("protocols", strings.Join(names, ","), "with -compare: comma-separated replication protocols")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *runs < 1 || *actions < 1 || *actions > chaos.MaxActions || *parallel < 1 {
		return fmt.Errorf("-runs, -parallel ≥ 1 and -actions in 1..%d", chaos.MaxActions)
	}
	if *compare {
		ps, err := chaos.ParseProtocols(strings.Split(*protocols, ","))
		if err != nil {
			return err
		}
		return runCompare(ps, *first, *runs, *actions, *parallel, out)
	}
	var cfgs []chaos.Config
	for _, s := range strings.Split(*configs, ",") {
		c, err := chaos.ParseConfig(strings.TrimSpace(s))
		if err != nil {
			return err
		}
		cfgs = append(cfgs, c)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	start := time.Now()
	tallies := map[chaos.Config]*tally{}
	var mu sync.Mutex
	type job struct {
		cfg  chaos.Config
		seed uint64
	}
	jobs := make(chan job)
	var wg sync.WaitGroup
	for range *parallel {
		wg.Go(func() {
			for j := range jobs {
				res, err := chaos.Run(ctx, j.seed, j.cfg, chaos.Generate(j.seed, *actions), chaos.Options{})
				if *export != "" && res != nil && (err != nil || res.Counts.Violations() > 0 || res.Counts.Unsettled > 0) {
					if werr := writeRun(*export, res); werr != nil {
						fmt.Fprintf(os.Stderr, "chaos: %v\n", werr)
					}
				}
				mu.Lock()
				t := tallies[j.cfg]
				t.runs++
				switch {
				case err != nil:
					if ctx.Err() == nil {
						fmt.Fprintf(os.Stderr, "chaos: %s seed %d: %v\n", j.cfg, j.seed, err)
					}
					t.broken = append(t.broken, j.seed)
				default:
					t.counts.Add(res.Counts)
					t.delays.Add(res.DelayEffects)
					if res.Counts.Violations() > 0 {
						t.failing = append(t.failing, j.seed)
					}
					if res.Counts.Unsettled > 0 {
						t.unsettled = append(t.unsettled, j.seed)
					}
				}
				mu.Unlock()
			}
		})
	}
	for _, c := range cfgs {
		tallies[c] = &tally{}
	}
feed:
	for _, c := range cfgs {
		for s := *first; s < *first+uint64(*runs); s++ {
			select {
			case jobs <- job{c, s}:
			case <-ctx.Done():
				break feed
			}
		}
	}
	close(jobs)
	wg.Wait()

	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "config\truns\tacked writes\tlost\tlost to unsynced power loss\tduplicated\twrong offset\treplicas differing\tHW backwards\t(unsynced)\tleader outside ISR\tevents out of order\tunreadable\tunsettled partitions\t")
	for _, c := range cfgs {
		t := tallies[c]
		n := t.counts
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", c, t.runs, n.Acked, n.Lost, n.UnsyncedLost,
			n.Duplicated, n.WrongOffset, n.ReplicasDiffer, n.HWBackwards, n.UnsyncedHWBackwards, n.LeaderOutsideISR, n.EventsOutOfOrder, n.Unreadable, n.Unsettled)
	}
	tw.Flush()
	fmt.Fprintln(out)
	for _, c := range cfgs {
		t := tallies[c]
		slices.Sort(t.failing)
		slices.Sort(t.broken)
		slices.Sort(t.unsettled)
		fmt.Fprintf(out, "%s: %d of %d runs with violations; seeds %s\n", c, len(t.failing), t.runs, seedList(t.failing))
		fmt.Fprintf(out, "%s: link delays caused %d ISR shrinks and %d fencings\n", c, t.delays.ISRShrinks, t.delays.Fencings)
		if len(t.unsettled) > 0 {
			fmt.Fprintf(out, "%s: %d runs left partitions unsettled; seeds %s\n", c, len(t.unsettled), seedList(t.unsettled))
		}
		if len(t.broken) > 0 {
			fmt.Fprintf(out, "%s: %d runs could not finish; seeds %s\n", c, len(t.broken), seedList(t.broken))
		}
	}
	fmt.Fprintf(out, "\n%d actions per schedule, %v\n", *actions, time.Since(start).Round(time.Second))
	return ctx.Err()
}

// writeRun writes res's export to dir/<config>-<seed>.json.
func writeRun(dir string, res *chaos.Result) error {
	data, err := res.Export()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%d.json", res.Config, res.Seed)), data, 0o644)
}

// seedList prints seeds, the first 50 of them.
func seedList(seeds []uint64) string {
	if len(seeds) == 0 {
		return "none"
	}
	var b strings.Builder
	for i, s := range seeds {
		if i == 50 {
			fmt.Fprintf(&b, " … (%d more)", len(seeds)-50)
			break
		}
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprint(&b, s)
	}
	return b.String()
}

// column is one protocol's figures over every comparison.
type column struct {
	runs, skipped          int
	attempted, accepted    int
	lost, unsynced         int
	writes                 []chaos.Write
	messages               int64
	committed              int
	formula                string
	replicasF1, replicasF2 int
	skippedBy              string
}

// runCompare plays seeds first..first+runs-1 as comparisons and prints a
// column per protocol.
func runCompare(ps []controller.ReplicationProtocol, first uint64, runs, actions, parallel int, out io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	start := time.Now()
	cols := map[controller.ReplicationProtocol]*column{}
	for _, p := range ps {
		c := &column{}
		c.replicasF1, c.formula = chaos.ReplicasNeeded(p, 1)
		c.replicasF2, _ = chaos.ReplicasNeeded(p, 2)
		cols[p] = c
	}
	var mu sync.Mutex
	var broken []uint64
	seeds := make(chan uint64)
	var wg sync.WaitGroup
	for range parallel {
		wg.Go(func() {
			for seed := range seeds {
				cmp, err := chaos.Compare(ctx, seed, chaos.Generate(seed, actions), ps, chaos.Options{})
				mu.Lock()
				if err != nil {
					if ctx.Err() == nil {
						fmt.Fprintf(os.Stderr, "chaos: compare seed %d: %v\n", seed, err)
					}
					broken = append(broken, seed)
				} else {
					for _, pr := range cmp.Protocols {
						c := cols[pr.Protocol]
						c.runs++
						if pr.Skipped != "" {
							c.skipped++
							c.skippedBy = pr.Skipped
							continue
						}
						c.attempted += pr.Attempted
						c.accepted += pr.Accepted
						c.lost += pr.Lost
						c.unsynced += pr.Counts.UnsyncedLost
						c.writes = append(c.writes, pr.Writes...)
						c.messages += pr.MessagesTotal
						c.committed += pr.Committed
					}
				}
				mu.Unlock()
			}
		})
	}
feed:
	for s := first; s < first+uint64(runs); s++ {
		select {
		case seeds <- s:
		case <-ctx.Done():
			break feed
		}
	}
	close(seeds)
	wg.Wait()

	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "protocol\truns\tacks=all writes\taccepted\tavailability\tlost\tlost to unsynced power loss\tlatency p50/p99 (lab ms)\tp50/p99 (actions)\treplicas for f=1, f=2\tmessages\tcommitted\tmessages per record\t")
	for _, p := range ps {
		c := cols[p]
		if c.skipped == c.runs && c.runs > 0 {
			fmt.Fprintf(tw, "%s\t%d\tskipped: %s\t\t\t\t\t\t\t\t\t\t\t\n", p, c.runs, c.skippedBy)
			continue
		}
		ms, acts := chaos.Latencies(c.writes)
		avail, per := 0.0, 0.0
		if c.attempted > 0 {
			avail = 100 * float64(c.accepted) / float64(c.attempted)
		}
		if c.committed > 0 {
			per = float64(c.messages) / float64(c.committed)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.1f %%\t%d\t%d\t%.0f / %.0f\t%.0f / %.0f\t%s: %d, %d\t%d\t%d\t%.1f\t\n", p, c.runs, c.attempted, c.accepted, avail,
			c.lost, c.unsynced, ms.P50, ms.P99, acts.P50, acts.P99, c.formula, c.replicasF1, c.replicasF2, c.messages, c.committed, per)
	}
	tw.Flush()
	if len(broken) > 0 {
		slices.Sort(broken)
		fmt.Fprintf(out, "\n%d comparisons could not finish; seeds %s\n", len(broken), seedList(broken))
	}
	fmt.Fprintf(out, "\n%d comparisons of %d actions, %v\n", runs, actions, time.Since(start).Round(time.Second))
	return ctx.Err()
}
