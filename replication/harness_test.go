package replication_test

// The scenario harness: the scripts in testdata/*.txt (the data-driven
// style of etcd raft's testdata) drive rulestest.Cluster, a small cluster
// of Partition state machines with in-memory logs and a tiny controller.
//
// A script is a list of blocks:
//
//	# comments and blank lines between blocks are kept
//	command arg=value ...
//	----
//	expected output (no blank lines)
//
// Commands:
//
//	cluster brokers=N [min-isr=] [rule=] [unclean=] [lag=]   start over: broker 1 leads epoch 0
//	config [min-isr=] [rule=] [unclean=] [lag=]              change topic configs at run time
//	produce value=V [acks=all|1|0] [timeout=MS] [to=N]      a client produce (to the leader by default)
//	fetch N [times=K]                                        follower N sends K fetches to the leader it knows
//	sync                                                     every live follower fetches until nothing changes
//	tick MS                                                  the cluster clock moves MS and every broker ticks
//	flush N|all                                              fsync broker N's log and HW checkpoint
//	crash N... | power-loss N...                             brokers die at once; the controller notices
//	restart N                                                crash and start before the controller notices
//	start N                                                  a dead broker recovers from disk and registers
//	cut N | heal N                                           broker N loses/regains every link (controller too)
//	elect N                                                  the controller moves leadership to N
//	state                                                    print the lanes
//	compare                                                  say whether the live logs are identical
//	consume                                                  what a consumer of the leader can read
//
// After every command the harness checks the invariants. Structural ones
// (ISR never empty, leader ∈ ISR, log start ≤ HW ≤ LEO, offsets increase,
// epochs never decrease) fail the test outright. The ones that the settings
// may legitimately break (replicas agree below the smaller HW, records a
// consumer saw stay, acknowledged records stay) are printed as "!!" lines, so
// each script's expected output says exactly which loss the settings allow.

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"tidemark/replication"
	"tidemark/replication/rulestest"
)

var update = flag.Bool("update", false, "rewrite the expected output of testdata/*.txt")

type block struct {
	cmd       string
	wantStart int // line index of the first expected-output line
	wantEnd   int
	want      string
}

func parseScript(t *testing.T, lines []string) []block {
	var blocks []block
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if i+1 >= len(lines) || lines[i+1] != "----" {
			t.Fatalf("line %d: command %q not followed by ----", i+1, l)
		}
		b := block{cmd: l, wantStart: i + 2}
		j := i + 2
		for j < len(lines) && lines[j] != "" {
			j++
		}
		b.wantEnd = j
		b.want = strings.Join(lines[b.wantStart:j], "\n")
		blocks = append(blocks, b)
		i = j
	}
	return blocks
}

func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
			blocks := parseScript(t, lines)
			var c *rulestest.Cluster
			outs := make([]string, len(blocks))
			for i, b := range blocks {
				fields := strings.Fields(b.cmd)
				pos, kv := rulestest.ParseArgs(fields[1:])
				out := &strings.Builder{}
				if fields[0] == "cluster" {
					n, _ := strconv.Atoi(kv["brokers"])
					if n < 1 || n > 7 {
						t.Fatalf("%s: cluster needs brokers=1..7", b.cmd)
					}
					c = rulestest.New(n, replication.DefaultConfig(), false)
					c.SetOutput(out)
					if err := c.SetConfig(kv); err != nil {
						t.Fatalf("%s: %v", b.cmd, err)
					}
				} else {
					if c == nil {
						t.Fatalf("%s: no cluster yet", b.cmd)
					}
					c.SetOutput(out)
					if err := c.Run(fields[0], pos, kv); err != nil {
						t.Fatalf("%s:%d: %s: %v", file, b.wantStart-1, b.cmd, err)
					}
				}
				c.Check()
				if len(c.Errs()) > 0 {
					t.Fatalf("%s:%d: %s: invariant broken: %s\n%s", file, b.wantStart-1, b.cmd, strings.Join(c.Errs(), "; "), c.Lanes())
				}
				outs[i] = strings.TrimRight(out.String(), "\n")
				if !*update && outs[i] != b.want {
					t.Errorf("%s:%d: %s\n--- got:\n%s\n--- want:\n%s\n--- lanes:\n%s", file, b.wantStart-1, b.cmd, outs[i], b.want, c.Lanes())
				}
			}
			if *update {
				rewrite(t, file, lines, blocks, outs)
			}
		})
	}
}

func rewrite(t *testing.T, file string, lines []string, blocks []block, outs []string) {
	var sb strings.Builder
	w := bufio.NewWriter(&sb)
	next := 0
	for i, b := range blocks {
		for _, l := range lines[next:b.wantStart] {
			fmt.Fprintln(w, l)
		}
		if outs[i] != "" {
			fmt.Fprintln(w, outs[i])
		}
		next = b.wantEnd
	}
	for _, l := range lines[next:] {
		fmt.Fprintln(w, l)
	}
	w.Flush()
	if err := os.WriteFile(file, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
