package cluster

// The replication core under the faults the lab offers, each played on the
// real cluster with the clock paused. The two power-loss patterns under
// each fencing rule (issue 9) are scenario files now
// (lessons/scenarios/power-loss-*.scenario).

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/events"
	"tidemark/server/controller"
)

func ruleLab(t *testing.T, rule controller.FencingRule, configs map[string]string) *lab {
	t.Helper()
	return newLab(t, labOptions{brokers: 3, configs: configs, fencing: &rule})
}

var strictConfigs = map[string]string{"min.insync.replicas": "2", "unclean.leader.election.enable": "false", "truncation.rule": "leader-epoch"}

// commitAll produces values with acks=all while every replica fetches, so
// they are acknowledged and on every replica (in the page cache, unsynced).
func (l *lab) commitAll(values ...string) {
	l.t.Helper()
	for _, v := range values {
		p := l.produceAsync(v)
		l.settle()
		if _, err := p.result(); err != nil {
			l.fatalf("produce %s: %v", v, err)
		}
	}
}

// TestISRReexpandsAfterIneligibleReplica: the follower's link to the
// controller is cut one way long enough for it to be fenced; the leader
// proposes it back as soon as it fetches and the controller refuses
// (INELIGIBLE_REPLICA). Once the link heals and the follower is unfenced,
// the leader proposes again and the ISR is whole. (It used to stay shrunk
// until some later election: every AlterPartition error froze proposals.)
func TestISRReexpandsAfterIneligibleReplica(t *testing.T) {
	l := ruleLab(t, controller.FencingKRaftELR, strictConfigs)
	l.commitAll("m1")
	if err := l.c.Cut(3, ControllerNode, true); err != nil {
		t.Fatal(err)
	}
	l.step(failover)
	l.settle()
	l.wantLeader(1, 0, 1, 2) // b3 fenced: out of the ISR, refused back while fenced
	l.c.Heal()
	l.step(failover) // b3 heartbeats: unfenced
	l.settle()
	l.wantLeader(1, 0, 1, 2, 3)
	l.commitAll("m2")
	l.finish()
}

// TestDiskFailureHaltsBroker: the leader's disk fails. The produce that
// hits it is refused with KAFKA_STORAGE_ERROR (nothing half-written is
// acknowledged or kept visible), the broker halts as Kafka does when its
// last log dir fails, the controller elects another leader once the
// session expires, and the broker comes back on a working disk with what
// it had written before.
func TestDiskFailureHaltsBroker(t *testing.T) {
	l := ruleLab(t, controller.FencingKRaftELR, strictConfigs)
	l.commitAll("m1", "m2")
	if err := l.c.FailDisk(1); err != nil {
		t.Fatal(err)
	}
	if _, err := l.c.Produce(context.Background(), scenarioTopic, 0, -1, []Record{{Value: []byte("m3")}}, time.Second); !errors.Is(err, kerr.KafkaStorageError) {
		l.fatalf("produce on a failed disk: %v, want KAFKA_STORAGE_ERROR", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := l.c.AwaitStopped(ctx, 1); err != nil {
		l.fatalf("broker 1 did not halt: %v", err)
	}
	l.step(failover)
	l.wantLeader(2, 1, 2, 3)
	l.commitAll("m4")
	l.restart(1)
	l.step(failover)
	l.settle()
	l.finish()
	l.want(1, 3, 3, "m1", "m2", "m4")
}

// TestFlushMessagesOneSurvivesPowerLoss: with flush.messages=1 every
// acknowledged write is fsynced before it is acknowledged (on the append
// path, not at the next tick), so even when every broker loses power at
// once, nothing acknowledged is lost; the kraft-elr rule then recovers the
// partition from the longest log once all are back.
func TestFlushMessagesOneSurvivesPowerLoss(t *testing.T) {
	configs := map[string]string{"flush.messages": "1"}
	for k, v := range strictConfigs {
		configs[k] = v
	}
	l := ruleLab(t, controller.FencingKRaftELR, configs)
	l.commitAll("m1", "m2", "m3")
	l.powerLoss(1, 2, 3)
	l.restart(1)
	l.restart(2)
	l.restart(3)
	l.step(failover)
	l.settle()
	l.step(failover)
	l.settle()
	l.finish()
	for id := int32(1); id <= 3; id++ {
		l.want(id, 3, 3, "m1", "m2", "m3")
	}
}

// TestFollowerValuesDecodedLate: while the clock runs, a follower's append
// event comes without values and its records' values follow in a
// KindRecords event, decoded off the fetch path; the snapshot's lane for
// the follower ends up with them.
func TestFollowerValuesDecodedLate(t *testing.T) {
	c := openRunning(t, 3)
	if _, err := c.CreateTopic("late", 1, 3, map[string]string{"min.insync.replicas": "2"}); err != nil {
		t.Fatal(err)
	}
	res, err := c.Produce(context.Background(), "late", 0, -1, []Record{{Value: []byte("v1")}}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		snap := c.Snapshot()
		done := 0
		for _, r := range snap.Partition("late", 0).ReplicaLogs {
			for _, x := range r.Records {
				if x.Offset == res.BaseOffset && x.Value == "v1" {
					done++
				}
			}
		}
		if done == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lanes hold v1 on %d of 3 replicas", done)
		}
		time.Sleep(5 * time.Millisecond)
	}
	evs, _ := c.Bus().Since(0, 0)
	late := false
	for _, e := range evs {
		if e.Kind == events.KindRecords && e.Topic == "late" && e.Broker != res.Leader {
			late = true
		}
	}
	if !late {
		t.Fatal("no follower's values came in a records event")
	}
}
