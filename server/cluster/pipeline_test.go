package cluster

import (
	"slices"
	"testing"
	"time"

	"tidemark/events"
	"tidemark/replication"
	"tidemark/replication/pipeline"
	"tidemark/server/controller"
)

// pipelineSettled steps the paused clock one broker tick at a time
// (bounded) until the controller's pipeline of topic-0 is what every
// running member applied and its head has recovered (it takes produce
// requests), and returns the pipeline and its stamp.
func pipelineSettled(t *testing.T, c *Cluster, topic string) ([]int32, int32) {
	t.Helper()
	for range 200 { // 10 s of lab time
		tp, _ := c.controller.Topic(topic)
		p := tp.Partitions[0]
		ok := p.Leader >= 0
		for _, id := range p.ISR {
			b := c.Broker(id)
			if b == nil {
				ok = false
				break
			}
			st := b.Replica(topic, 0).Status()
			ok = ok && st.LeaderEpoch == p.LeaderEpoch && (id != p.Leader || st.Role == replication.RoleLeader)
		}
		if ok {
			return p.ISR, p.LeaderEpoch
		}
		if err := c.Step(50 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	tp, _ := c.controller.Topic(topic)
	t.Fatalf("%s: the pipeline %+v did not settle in 10 s of lab time", topic, tp.Partitions[0])
	return nil, 0
}

// checkPipelineLogs fails unless every member of topic-0's pipeline holds
// the same log, containing every acknowledged value once, with the same HW.
func checkPipelineLogs(t *testing.T, c *Cluster, topic string, acked []string) {
	t.Helper()
	members, _ := pipelineSettled(t, c, topic)
	ref, _ := values(t, c, members[0], topic)
	hw := c.Broker(members[0]).Replica(topic, 0).Status().HighWatermark
	for _, id := range members {
		vs, _ := values(t, c, id, topic)
		if !slices.Equal(vs, ref) {
			t.Fatalf("broker %d has %v, the head %d %v", id, vs, members[0], ref)
		}
		if got := c.Broker(id).Replica(topic, 0).Status().HighWatermark; got != hw || hw != int64(len(vs)) {
			t.Errorf("broker %d: HW %d, the head's %d, its LEO %d", id, got, hw, len(vs))
		}
	}
	for _, a := range acked {
		if n := len(slices.DeleteFunc(slices.Clone(ref), func(v string) bool { return v != a })); n != 1 {
			t.Fatalf("acknowledged %s is there %d times: %v", a, n, ref)
		}
	}
}

// TestPipelineTopicFailures is the scenario
// lessons/scenarios/pipeline-failures-rf5 (RF 5) and
// lessons/scenarios/pipeline-rebuild.scenario.

// TestPipelineTopicCrashedMiddle is the scenario
// lessons/scenarios/pipeline-crashed-middle.scenario.

// TestPipelineTopicPowerLoss is the scenario
// lessons/scenarios/pipeline-power-loss-tail.scenario.

// TestPipelineTopicKgo: franz-go produces (idempotent, acks=all) to a
// pipeline topic and reads every record back, on a running lab; every
// record cost one write and one ack per hop (RF 3: four messages).
func TestPipelineTopicKgo(t *testing.T) {
	c := openRunning(t, 3)
	if _, err := c.CreateTopic("p", 1, 3, map[string]string{"replication.protocol": "pipeline"}); err != nil {
		t.Fatal(err)
	}
	kgoRoundTrip(t, c, "p", 100)
	sent := c.ReplicationMessages()[controller.ProtocolPipeline]
	writes, acks := sent[pipeline.KindWrite.String()], sent[pipeline.KindAck.String()]
	t.Logf("pipeline messages: %d writes, %d acks for 100 records", writes, acks)
	if writes < 200 || acks < 200 {
		t.Errorf("%d writes and %d acks for 100 records, want at least 200 each", writes, acks)
	}
}

// TestPipelineTopicAckCut is the scenario
// lessons/scenarios/pipeline-ack-cut.scenario.

// TestPipelineTopicCrashedHead is the scenario
// lessons/scenarios/pipeline-crashed-head.scenario.

// TestPipelineTopicLabRestart: the whole lab stops cleanly and starts
// again on its data: the pipeline and its stamp come back from the
// controller's store, the head's recovery finds every member with the
// same stamp (nothing discarded), and writes continue.
func TestPipelineTopicLabRestart(t *testing.T) {
	opts := Options{DataDir: t.TempDir(), Brokers: 3, Paused: true, Logger: quietLogger()}
	c, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic("p", 1, 3, map[string]string{"replication.protocol": "pipeline"}); err != nil {
		t.Fatal(err)
	}
	pipelineSettled(t, c, "p")
	for _, v := range []string{"a", "b"} {
		if err := produceOne(t, c, "p", v); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if c, err = Open(opts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	seq := c.Bus().LastSeq()
	if members, stamp := pipelineSettled(t, c, "p"); !slices.Equal(members, []int32{1, 2, 3}) || stamp != 0 {
		t.Fatalf("after the restart: pipeline %v stamp %d, want [1 2 3] stamp 0", members, stamp)
	}
	if err := produceOne(t, c, "p", "c"); err != nil {
		t.Fatal(err)
	}
	checkPipelineLogs(t, c, "p", []string{"a", "b", "c"})
	evs, _ := c.Bus().Since(seq, 100000)
	for _, e := range evs {
		if e.Kind == events.KindTruncation {
			t.Errorf("a replica was cut after a clean restart: %s", e.Message)
		}
	}
}

// TestPipelineTopicLinkDelay is the scenario
// lessons/scenarios/pipeline-link-delay.scenario.

// TestPipelineTopicLongCut is the scenario
// lessons/scenarios/pipeline-long-cut.scenario.
