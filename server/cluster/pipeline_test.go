package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

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

// produceRetry produces value with acks=all as a producer that retries
// does: a write refused while its pipeline was rebuilt (its records cut by
// the recovery) is sent again, at most 5 times, each on the settled
// pipeline. It returns the last error.
func produceRetry(t *testing.T, c *Cluster, topic, value string) error {
	t.Helper()
	var err error
	for range 5 {
		if err = produceOne(t, c, topic, value); err == nil {
			return nil
		}
		pipelineSettled(t, c, topic)
	}
	return err
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

// TestPipelineTopicFailures runs a replication.protocol=pipeline partition
// on the real brokers: with f members crashed (the tail, then a middle
// one) the pipeline is rebuilt from the survivors under a new stamp each
// time and acks=all writes are accepted while it has min.insync.replicas
// members; one more down and acks=all is refused with NOT_ENOUGH_REPLICAS;
// once everyone is back and has rejoined, every acknowledged write is on
// every member. RF 3 with f=1 (min.insync.replicas=2) and RF 5 with f=2
// (min.insync.replicas=3).
func TestPipelineTopicFailures(t *testing.T) {
	for _, rf := range []int{3, 5} {
		t.Run(fmt.Sprintf("rf%d", rf), func(t *testing.T) {
			f := (rf - 1) / 2
			c := openPausedN(t, rf)
			if _, err := c.CreateTopic("p", 1, int16(rf), map[string]string{"replication.protocol": "pipeline",
				"min.insync.replicas": fmt.Sprint(rf - f)}); err != nil {
				t.Fatal(err)
			}
			members, stamp := pipelineSettled(t, c, "p")
			acked := []string{"all-up"}
			if err := produceOne(t, c, "p", "all-up"); err != nil {
				t.Fatalf("all up: %v", err)
			}
			var down []int32
			for i := range f {
				victim := members[len(members)-1]
				if i > 0 {
					victim = members[1]
				}
				down = append(down, victim)
				if err := c.Crash(victim); err != nil {
					t.Fatal(err)
				}
				v := fmt.Sprintf("down-%d", i+1)
				if err := produceRetry(t, c, "p", v); err != nil {
					t.Fatalf("%d down: %v", i+1, err)
				}
				acked = append(acked, v)
				var next int32
				members, next = pipelineSettled(t, c, "p")
				if next <= stamp || slices.Contains(members, victim) {
					t.Fatalf("after %d crashed: pipeline %v stamp %d (was %d)", victim, members, next, stamp)
				}
				stamp = next
			}
			down = append(down, members[len(members)-1])
			if err := c.Crash(down[len(down)-1]); err != nil {
				t.Fatal(err)
			}
			err := produceRetry(t, c, "p", "too-few")
			if !errors.Is(err, kerr.NotEnoughReplicas) && !errors.Is(err, kerr.NotEnoughReplicasAfterAppend) {
				t.Fatalf("%d of %d down: %v, want NOT_ENOUGH_REPLICAS", f+1, rf, err)
			}
			for _, id := range down {
				if err := c.Restart(id); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.Step(time.Second); err != nil {
				t.Fatal(err)
			}
			if members, _ = pipelineSettled(t, c, "p"); len(members) != rf {
				t.Fatalf("everyone back: pipeline %v", members)
			}
			if err := produceRetry(t, c, "p", "back"); err != nil {
				t.Fatalf("everyone back: %v", err)
			}
			acked = append(acked, "back")
			checkPipelineLogs(t, c, "p", acked)
		})
	}
}

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

// TestPipelineTopicLinkDelay: with a 200 ms delay each way on the link
// between the head and the second member, a write crosses it down and its
// ack crosses it back, each waiting in the lab's delay line: the acks=all
// produce is not answered before 2×200 ms of lab time and is right after.
// A steady stream over the link then keeps writes in flight all the time:
// the members' timeouts count silence, not a HW below the LEO, so nobody
// is blamed.
func TestPipelineTopicLinkDelay(t *testing.T) {
	const delay = 200 * time.Millisecond
	c := openPausedN(t, 3)
	if _, err := c.CreateTopic("p", 1, 3, map[string]string{"replication.protocol": "pipeline", "min.insync.replicas": "2"}); err != nil {
		t.Fatal(err)
	}
	members, _ := pipelineSettled(t, c, "p")
	if err := produceOne(t, c, "p", "a"); err != nil {
		t.Fatal(err)
	}
	c.network.SetDelay(members[0], members[1], delay)
	c.network.SetDelay(members[1], members[0], delay)
	done := make(chan error, 1)
	go func() {
		_, err := c.Produce(context.Background(), "p", 0, -1, []Record{{Value: []byte("slow")}}, 5*time.Second)
		done <- err
	}()
	head := c.Broker(members[0]).Replica("p", 0)
	for head.Status().WaitingProduces == 0 { // bounded by done: a produce that ends fails the test
		select {
		case err := <-done:
			t.Fatalf("produce ended before its write crossed the delayed link: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
	if err := c.Step(2*delay - 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Fatalf("produce answered %v into a round trip of 2×%v: %v", 2*delay-50*time.Millisecond, delay, err)
	default:
	}
	if vs, _ := values(t, c, members[2], "p"); !slices.Equal(vs, []string{"a", "slow"}) {
		t.Fatalf("the tail holds %v after the write's delay; want a, slow", vs)
	}
	if err := c.Step(50 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("produce not answered after 2×%v of lab time", delay)
	}
	// A steady stream through the delayed link keeps the HW below the LEO
	// all along, but acks keep coming: for 2× replica.lag.time.max.ms
	// (3 s) nobody is blamed and the stamp stays.
	_, stamp := pipelineSettled(t, c, "p")
	acked := []string{"a", "slow"}
	for i := range 60 {
		v := fmt.Sprint("s", i)
		if _, err := c.Produce(context.Background(), "p", 0, 1, []Record{{Value: []byte(v)}}, time.Second); err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		acked = append(acked, v)
		if err := c.Step(100 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	if tp, _ := c.controller.Topic("p"); tp.Partitions[0].LeaderEpoch != stamp {
		t.Fatalf("a steady stream over a delayed link moved the stamp from %d to %d: pipeline %v", stamp, tp.Partitions[0].LeaderEpoch, pipelineOf(tp.Partitions[0]))
	}
	stepBy(t, c, time.Second)
	checkPipelineLogs(t, c, "p", acked)
}

// TestPipelineTopicLongCut: the link between the second and third members
// stays cut for 30 s of lab time. The third is taken out; re-replication
// adds it back at the tail, its recovery fails on the cut link and it is
// taken out again, two stamps a cycle. The controller backs off its
// re-adds (doubling from PipelineRepairInterval), so the cut costs a
// bounded number of stamps; once healed it rejoins, and every
// acknowledged write is on every member.
func TestPipelineTopicLongCut(t *testing.T) {
	c := openPausedN(t, 3)
	if _, err := c.CreateTopic("p", 1, 3, map[string]string{"replication.protocol": "pipeline", "min.insync.replicas": "2"}); err != nil {
		t.Fatal(err)
	}
	members, start := pipelineSettled(t, c, "p")
	if err := c.Cut(members[1], members[2], false); err != nil {
		t.Fatal(err)
	}
	acked := []string{}
	for i := range 3 { // writes every 10 s, each on the pipeline of the moment
		v := fmt.Sprintf("w%d", i)
		if err := produceRetry(t, c, "p", v); err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		acked = append(acked, v)
		stepBy(t, c, 10*time.Second)
	}
	tp, _ := c.controller.Topic("p")
	stamps := tp.Partitions[0].LeaderEpoch - start
	t.Logf("a 30 s cut of %d-%d: %d stamps, pipeline %v", members[1], members[2], stamps, pipelineOf(tp.Partitions[0]))
	if stamps > 8 {
		t.Errorf("a 30 s cut made %d stamps; want at most 8", stamps)
	}
	c.Heal()
	stepBy(t, c, 40*time.Second) // past the longest back-off
	if members, _ := pipelineSettled(t, c, "p"); len(members) != 3 {
		t.Fatalf("healed: pipeline %v", members)
	}
	checkPipelineLogs(t, c, "p", acked)
}

func pipelineOf(p controller.Partition) []int32 { return slices.Concat(p.ISR, p.Joining) }

// stepBy moves the paused clock by d one broker tick at a time, so every
// heartbeat, controller tick and broker tick in between runs (one Step
// runs them once, at its end).
func stepBy(t *testing.T, c *Cluster, d time.Duration) {
	t.Helper()
	for moved := time.Duration(0); moved < d; moved += stepToEventGrain {
		if err := c.Step(stepToEventGrain); err != nil {
			t.Fatal(err)
		}
	}
}
