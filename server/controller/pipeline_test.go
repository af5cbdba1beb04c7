package controller

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/events"
)

// TestPipelineState: a pipeline partition's ISR is its pipeline in order
// and its leader epoch the generation stamp. A head's failure report
// rebuilds it from the survivors under a new stamp; fencing the head makes
// the next survivor head; a broker back (registered and unfenced) rejoins
// at the tail under yet another stamp; the last member stays, offline, and
// leads again when it is back.
func TestPipelineState(t *testing.T) {
	l := newLab(t)
	l.start(1, 2, 3)
	l.create("p", 1, 3, map[string]string{"replication.protocol": "pipeline"})
	l.want("p", 0, 1, []int32{1, 2, 3}, 0, 0)

	if err := l.c.PipelineFailed("p", 0, 1, l.epochs[1], 0, 2); err != nil {
		t.Fatal(err)
	}
	l.want("p", 0, 1, []int32{1, 3}, 1, 1)
	if last := l.events()[len(l.events())-1]; last.Kind != events.KindISR || last.MessageKey != "event.pipeline.rebuilt" {
		t.Fatalf("rebuild event %+v", last)
	}
	for _, c := range []struct {
		broker, stamp, failed int32
		epoch                 int64
		want                  *kerr.Error
	}{
		{1, 0, 3, l.epochs[1], kerr.FencedLeaderEpoch},
		{3, 1, 1, l.epochs[3], kerr.NotLeaderForPartition},
		{1, 1, 2, l.epochs[1], kerr.InvalidRequest}, // not a member any more
		{1, 1, 3, l.epochs[1] - 1, kerr.StaleBrokerEpoch},
	} {
		wantErr(t, l.c.PipelineFailed("p", 0, c.broker, c.epoch, c.stamp, c.failed), c.want)
	}

	// Fencing the head makes the next survivor head. Broker 1 rejoins at
	// the tail once it is unfenced; broker 2, running all along, at its
	// next heartbeat past controller.PipelineRepairInterval (HDFS's
	// re-replication), one stamp each.
	l.c.FenceBroker(1)
	l.want("p", 0, 3, []int32{3}, 2, 2)
	l.beat(1)
	l.want("p", 0, 3, []int32{3, 1}, 3, 3)
	l.beat(2) // too soon after its last repair
	l.want("p", 0, 3, []int32{3, 1}, 3, 3)
	l.clk.Step(PipelineRepairInterval)
	l.beat(2)
	l.want("p", 0, 3, []int32{3, 1, 2}, 4, 4)

	l.c.FenceBroker(2)
	l.c.FenceBroker(1)
	l.c.FenceBroker(3) // the last member stays: offline
	got := l.part("p", 0)
	if got.Leader != -1 || len(got.ISR) != 1 || got.ISR[0] != 3 {
		t.Fatalf("after every member was fenced: %+v, want offline with [3]", got)
	}
	l.beat(1) // not the last member: nothing to lead
	if got := l.part("p", 0); got.Leader != -1 {
		t.Fatalf("broker 1 leads a pipeline whose last member 3 is down: %+v", got)
	}
	l.beat(3)
	l.want("p", 0, 3, []int32{3}, 8, 8)
	l.clk.Step(PipelineRepairInterval)
	l.beat(1)
	l.want("p", 0, 3, []int32{3, 1}, 9, 9)
}

// TestPipelineRestartLeaves: a broker that registers again leaves its
// pipelines under every fencing rule (its replica may lack what they wrote
// meanwhile) and rejoins at the tail once unfenced.
func TestPipelineRestartLeaves(t *testing.T) {
	for _, rule := range FencingRules() {
		t.Run(rule.String(), func(t *testing.T) {
			l := newRuleLab(t, rule)
			l.start(1, 2, 3)
			l.create("p", 1, 3, map[string]string{"replication.protocol": "pipeline"})
			ep, err := l.c.Register(Registration{ID: 2, Listener: "127.0.0.1:0"})
			if err != nil {
				t.Fatal(err)
			}
			l.epochs[2] = ep
			l.beat(2)
			got := l.part("p", 0)
			if len(got.ISR) != 3 || got.ISR[2] != 2 || got.Leader != 1 || got.LeaderEpoch != 2 {
				t.Fatalf("after broker 2 restarted: %+v, want [1 3 2] under stamp 2", got)
			}
		})
	}
}
