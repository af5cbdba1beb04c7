package controller

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/events"
)

// wantPipeline fails unless topic-0 is headed by leader with the ISR isr,
// the joining members joining and the generation stamp stamp.
func (l *lab) wantPipeline(topic string, leader int32, isr, joining []int32, stamp int32) {
	l.t.Helper()
	p := l.part(topic, 0)
	if p.Leader != leader || !slices.Equal(p.ISR, isr) || !slices.Equal(p.Joining, joining) || p.LeaderEpoch != stamp {
		l.t.Fatalf("%s-0: head %d ISR %v joining %v stamp %d; want head %d ISR %v joining %v stamp %d",
			topic, p.Leader, p.ISR, p.Joining, p.LeaderEpoch, leader, isr, joining, stamp)
	}
}

// TestPipelineState: a pipeline partition's ISR is its pipeline in order
// and its leader epoch the generation stamp. A head's failure report
// rebuilds it from the survivors under a new stamp; fencing the head makes
// the next survivor head; a broker back (unfenced, or heartbeating after
// a cut) joins at the tail, and the ISR once the head reports it caught
// up; the last ISR member stays, offline, and leads again when it is back.
func TestPipelineState(t *testing.T) {
	l := newLab(t)
	l.start(1, 2, 3)
	l.create("p", 1, 3, map[string]string{"replication.protocol": "pipeline"})
	l.wantPipeline("p", 1, []int32{1, 2, 3}, nil, 0)

	if err := l.c.PipelineFailed("p", 0, 1, l.epochs[1], 0, 2); err != nil {
		t.Fatal(err)
	}
	l.wantPipeline("p", 1, []int32{1, 3}, nil, 1)
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

	// Fencing the head makes the next survivor head. Broker 1 joins at
	// the tail once it is unfenced; broker 2, running all along, at its
	// next heartbeat past PipelineRepairInterval (HDFS's re-replication).
	l.c.FenceBroker(1)
	l.wantPipeline("p", 3, []int32{3}, nil, 2)
	l.beat(1)
	l.wantPipeline("p", 3, []int32{3}, []int32{1}, 3)
	l.beat(2) // too soon after its last repair
	l.wantPipeline("p", 3, []int32{3}, []int32{1}, 3)
	l.clk.Step(PipelineRepairInterval)
	l.beat(2)
	l.wantPipeline("p", 3, []int32{3}, []int32{1, 2}, 4)
	wantErr(t, l.c.PipelineCaughtUp("p", 0, 3, l.epochs[3], 3), kerr.FencedLeaderEpoch)
	if err := l.c.PipelineCaughtUp("p", 0, 3, l.epochs[3], 4); err != nil {
		t.Fatal(err)
	}
	l.wantPipeline("p", 3, []int32{3, 1, 2}, nil, 4)

	l.c.FenceBroker(2)
	l.c.FenceBroker(1)
	l.c.FenceBroker(3) // the last member stays: offline
	l.wantPipeline("p", -1, []int32{3}, nil, 7)
	l.beat(1) // not the last member: nothing to lead
	l.wantPipeline("p", -1, []int32{3}, nil, 7)
	l.beat(3)
	l.wantPipeline("p", 3, []int32{3}, nil, 8)
	l.clk.Step(PipelineRepairInterval)
	l.beat(1)
	l.wantPipeline("p", 3, []int32{3}, []int32{1}, 9)
}

// TestPipelineJoiningCannotHead: a member that joined at the tail and has
// not caught up holds no acknowledged record for sure. When the ISR's last
// member fails the partition goes offline with it rather than be headed by
// the joining member (chaos seed 1 lost acknowledged writes that way).
func TestPipelineJoiningCannotHead(t *testing.T) {
	l := newLab(t)
	l.start(1, 2, 3)
	l.create("p", 1, 3, map[string]string{"replication.protocol": "pipeline"})
	l.c.FenceBroker(1)
	l.c.FenceBroker(3)
	l.wantPipeline("p", 2, []int32{2}, nil, 2)
	l.beat(1)
	l.wantPipeline("p", 2, []int32{2}, []int32{1}, 3)
	l.c.FenceBroker(2)
	l.wantPipeline("p", -1, []int32{2}, nil, 4)
	if err := l.c.PipelineFailed("p", 0, 2, l.epochs[2], 4, 1); err == nil {
		t.Fatal("a report from the head of an offline pipeline was accepted")
	}
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
			l.wantPipeline("p", 1, []int32{1, 3}, []int32{2}, 2)
		})
	}
}

// TestPipelineRejoinBackoff: a member re-added by the heartbeats' repair
// that fails before it catches up (its link still cut) is re-added next
// only after twice PipelineRepairInterval, then four times, up to 10×
// replica.lag.time.max.ms; one that catches up ends the back-off, and a
// broker that comes back (unfenced) rejoins at once.
func TestPipelineRejoinBackoff(t *testing.T) {
	l := newLab(t)
	l.start(1, 2, 3)
	l.create("p", 1, 3, map[string]string{"replication.protocol": "pipeline", "replica.lag.time.max.ms": "1000"})
	if err := l.c.PipelineFailed("p", 0, 1, l.epochs[1], 0, 3); err != nil {
		t.Fatal(err)
	}
	l.wantPipeline("p", 1, []int32{1, 2}, nil, 1)
	stamp := int32(1)
	// Each failed re-add, and the wait before the next one (12 s capped).
	for _, wait := range []time.Duration{2 * PipelineRepairInterval, 10 * time.Second, 10 * time.Second} {
		l.clk.Step(PipelineRepairInterval)
		l.beat(3)
		stamp++
		l.wantPipeline("p", 1, []int32{1, 2}, []int32{3}, stamp)
		stamp++
		if err := l.c.PipelineFailed("p", 0, 1, l.epochs[1], stamp-1, 3); err != nil {
			t.Fatal(err)
		}
		l.wantPipeline("p", 1, []int32{1, 2}, nil, stamp)
		l.clk.Step(wait - time.Millisecond)
		l.beat(3)
		l.wantPipeline("p", 1, []int32{1, 2}, nil, stamp)
	}
	l.clk.Step(PipelineRepairInterval)
	l.beat(3)
	stamp++
	l.wantPipeline("p", 1, []int32{1, 2}, []int32{3}, stamp)
	if err := l.c.PipelineCaughtUp("p", 0, 1, l.epochs[1], stamp); err != nil {
		t.Fatal(err)
	}
	l.wantPipeline("p", 1, []int32{1, 2, 3}, nil, stamp)
	// Caught up: a later failure starts from the first interval again.
	stamp++
	if err := l.c.PipelineFailed("p", 0, 1, l.epochs[1], stamp-1, 3); err != nil {
		t.Fatal(err)
	}
	l.clk.Step(PipelineRepairInterval)
	l.beat(3)
	stamp++
	l.wantPipeline("p", 1, []int32{1, 2}, []int32{3}, stamp)
	stamp++
	if err := l.c.PipelineFailed("p", 0, 1, l.epochs[1], stamp-1, 3); err != nil {
		t.Fatal(err)
	}
	// Backing off, but fenced and back: it rejoins at once.
	l.c.FenceBroker(3)
	l.beat(3)
	l.wantPipeline("p", 1, []int32{1, 2}, []int32{3}, stamp+1)
}
