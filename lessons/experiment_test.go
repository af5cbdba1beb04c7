package lessons

import (
	"strings"
	"testing"
	"time"
)

// TestStudiesParse: every built-in study parses, names four dimensions'
// worth of runs, and checks at least one claim.
func TestStudiesParse(t *testing.T) {
	if got := strings.Join(Studies(), " "); got != "acks-leader-crash min-isr-brokers-down replication-protocols unclean-election" {
		t.Fatalf("studies %s", got)
	}
	for _, name := range Studies() {
		x, err := ParseStudy(name)
		if err != nil {
			t.Fatal(err)
		}
		if x.ID != name || x.Title.Hans == x.Title.En || len(x.Checks) == 0 || len(x.Plots) == 0 || x.Runs() < 2 {
			t.Fatalf("%s: %+v", name, x)
		}
	}
	if _, err := ParseStudy("nope"); err == nil {
		t.Fatal("an unknown study parsed")
	}
}

// TestParseExperiment: the matrix, fault schedules, workloads, measures,
// plots and checks as the file says them, defaults filled in.
func TestParseExperiment(t *testing.T) {
	src := `# a comment
experiment demo
title Demo
zh-Hans: 演示
duration 5s
tick 50ms
seeds 1-3 7
topic a min.insync.replicas=2
topic q replication.protocol=quorum
workload w rate=100 size=200 acks=1 producers=3
workload i acks=all idempotence=yes
faults f
  at 1s do crash leader
  at 2s do restart all
  at 3s do cut 0 2 one-way
  at 4s do heal
faults r random 2 down=1s
faults c chaos actions=50
faults n none
measure throughput lost
plot lost by topic per workload
check lost topic=a == 0 and throughput workload=w >= {throughput workload=i}
`
	x, err := ParseExperiment("demo.experiment", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if x.Duration != 5*time.Second || x.Tick != 50*time.Millisecond || len(x.Seeds) != 4 || x.Seeds[3] != 7 || x.Title.Hans != "演示" {
		t.Fatalf("%+v", x)
	}
	if x.Runs() != 2*4*2*4 {
		t.Fatalf("%d runs", x.Runs())
	}
	w := x.Workloads[0]
	if w.Rate != 100 || w.Size != 200 || w.Acks != "1" || w.Producers != 3 || w.Idempotent || !x.Workloads[1].Idempotent {
		t.Fatalf("workloads %+v", x.Workloads)
	}
	f := x.Faults[0]
	if len(f.At) != 4 || f.At[1].Action.Args[0] != "all" || x.Faults[1].Count != 2 || x.Faults[1].Down != time.Second || x.Faults[2].Actions != 50 || x.Faults[3].Kind != FaultsNone {
		t.Fatalf("faults %+v", x.Faults)
	}
	if len(x.Checks) != 1 || len(x.Checks[0].Terms) != 2 || x.Checks[0].Terms[1].WantQ == nil || x.Plots[0].Per != "workload" {
		t.Fatalf("checks %+v plots %+v", x.Checks, x.Plots)
	}
}

// TestParseExperimentRefuses: a bad file is refused at its line, saying why.
func TestParseExperimentRefuses(t *testing.T) {
	head := "experiment e\nduration 5s\n"
	for _, tc := range []struct{ src, want string }{
		{"duration 5s\n", ":1: the file must start with"},
		{"experiment e\n", "no duration line"},
		{head + "brokers 6\n", ":3: brokers=6: want 1 to 5"},
		{head + "cluster big\n", ":3: cluster \"big\""},
		{head + "topic t partitions=9\n", "partitions=9: want 1 to 8"},
		{head + "topic t brokers=2 replication.factor=3\n", ":3: replication.factor 3 of topic t is more than its 2 brokers"},
		{head + "cluster shared\ntopic a brokers=3\ntopic b brokers=5\n", ":5: cluster shared: topic b has 5 brokers"},
		{head + "topic t brokers=2\nfaults f\n  at 1s do crash 3\n", ":5: broker 3: the cluster of topic t has 2 brokers"},
		{head + "workload w acks=2\n", ":3: workload w: acks=2"},
		{head + "workload w idempotence=yes acks=1\n", "needs acks=all"},
		{head + "workload w rate=0\n", "rate=0"},
		{head + "at 1s do crash 1\n", ":3: at belongs under"},
		{head + "faults f\n  at 1s do explode 1\n", ":4: at: unknown fault"},
		{head + "faults f\n  at 1s do crash 9\n", "want a broker"},
		{head + "faults f\n  at 6s do crash 1\n", ":4: at 6s is not within"},
		{head + "faults f\n  at 2s do crash 1\n  at 1s do heal\n", "time order"},
		{head + "faults f\n", "has no \"at TIME do"},
		{head + "measure speed\n", "measure \"speed\""},
		{head + "plot lost by colour\n", "dimension \"colour\""},
		{head + "check lost topic=x == 0\n", "no topic named \"x\""},
		{head + "check lost == many\n", "not a number"},
		{head + "check lost\n", "want MEASURE"},
		{head + "seeds 1-1000\n", "not a range"},
		{head + "topic t\ntopic t\n", "topic \"t\" twice"},
		{head + "seeds 1-100\ntopic a\ntopic b\ntopic c\nworkload x\nworkload y\n", "600 runs"},
	} {
		_, err := ParseExperiment("e.experiment", []byte(tc.src))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.src, err, tc.want)
		}
	}
}

// TestExperimentSizes: a topic line sizes its cluster and topic
// (brokers=, partitions=, replication.factor=, kept out of its configs);
// the file's brokers line is the default, RF at most 3.
func TestExperimentSizes(t *testing.T) {
	x, err := ParseExperiment("e.experiment", []byte("experiment e\nduration 5s\nbrokers 5\ncluster shared\n"+
		"topic a replication.factor=2 partitions=1 min.insync.replicas=1\ntopic b\nfaults f\n  at 1s do crash 5\n  at 2s do restart all\n"))
	if err != nil {
		t.Fatal(err)
	}
	a, b := x.Topics[0], x.Topics[1]
	if !x.Shared || a.Brokers != 5 || a.Partitions != 1 || a.ReplicationFactor != 2 || len(a.Configs) != 1 || b.ReplicationFactor != 3 || b.Partitions != 3 {
		t.Fatalf("%+v", x.Topics)
	}
}
