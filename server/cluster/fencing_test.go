package cluster

// The replication core under the faults the lab offers: the two power-loss
// patterns under each fencing rule (issue 9), and the two liveness bugs
// that used to wedge a partition, each played on the real cluster with the
// clock paused.

import (
	"context"
	"errors"
	"fmt"
	"strings"
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

// lastEvent returns the message of the newest event whose message holds s.
func (l *lab) lastEvent(s string) string {
	evs, _ := l.c.Bus().Since(l.start, 0)
	for i := len(evs) - 1; i >= 0; i-- {
		if strings.Contains(evs[i].Message, s) {
			return evs[i].Message
		}
	}
	return ""
}

// TestPowerLossRestartedFollowerElected is the first pattern: b2 loses
// power (its unsynced records are gone), is cut off from the leader,
// restarts within its session, and the leader then crashes. Under the
// ZooKeeper-era rule b2 kept its ISR place and is elected with an empty log,
// and b3, which had everything, truncates to match: acknowledged writes are
// lost. Under kraft (KIP-903) b2's new incarnation left the ISR, so b3 is
// elected; kraft-elr also.
func TestPowerLossRestartedFollowerElected(t *testing.T) {
	for _, rule := range controller.FencingRules() {
		t.Run(rule.String(), func(t *testing.T) {
			l := ruleLab(t, rule, strictConfigs)
			l.commitAll("m1", "m2")
			l.wantLeader(1, 0, 1, 2, 3)
			l.powerLoss(2)
			if err := l.c.Cut(1, 2, false); err != nil {
				t.Fatal(err)
			}
			l.restart(2)
			l.want(2, 0, 0)
			l.crash(1)
			l.step(failover)
			switch rule {
			case controller.FencingZooKeeper:
				l.wantLeader(2, 1, 2, 3) // clean, by the old rule, with LEO 0
				l.settle()
				l.want(3, 0, 0) // b3 truncated what it had
				l.c.Heal()
				l.restart(1)
				l.finish("acked-lost:m1", "acked-lost:m2", "hw-back", "seen-gone@0", "seen-gone@1")
			default:
				l.wantLeader(3, 1, 3)
				l.c.Heal()
				l.restart(1)
				l.settle()
				l.step(failover) // b1 and b2 catch up and rejoin the ISR
				l.settle()
				l.finish()
				l.want(3, 2, 2, "m1", "m2")
			}
		})
	}
}

// TestPowerLossLastISRMember is the second pattern: the ISR shrinks to the
// leader alone, which then loses power and comes back with LEO 0. Under
// zookeeper and kraft it leads again (kraft keeps an ISR's last member),
// and the other replicas truncate to its empty log when they return: the
// gap KIP-966 closes. Under kraft-elr the unclean shutdown takes it out of
// the ISR and ELR, the partition stays offline and says why, and once every
// replica is back the one with the longest log is elected: nothing is lost.
func TestPowerLossLastISRMember(t *testing.T) {
	for _, rule := range controller.FencingRules() {
		t.Run(rule.String(), func(t *testing.T) {
			l := ruleLab(t, rule, strictConfigs)
			l.commitAll("m1", "m2")
			l.crash(2, 3)
			l.step(failover)
			if rule == controller.FencingKRaftELR {
				l.wantLeader(1, 0, 1)
				if tp, _ := l.c.Controller().Topic(scenarioTopic); fmt.Sprint(tp.Partitions[0].ELR) != "[3]" {
					l.fatalf("ELR %v, want [3]", tp.Partitions[0].ELR)
				}
			} else {
				l.wantLeader(1, 0, 1)
			}
			l.powerLoss(1)
			l.restart(1)
			l.step(failover)
			switch rule {
			case controller.FencingKRaftELR:
				l.wantMeta(-1, 1) // offline: ISR empty, waiting for the ELR
				if msg := l.lastEvent("broker 1 restarted after an unclean shutdown"); !strings.Contains(msg, "no ELR member [3] is running") {
					l.fatalf("offline partition does not say why: %q", msg)
				}
				// b3 crashed: an unclean shutdown too, so it leaves the ELR.
				l.restart(3)
				l.wantMeta(-1, 1)
				if msg := l.lastEvent("broker 3 restarted after an unclean shutdown"); !strings.Contains(msg, "longest log") {
					l.fatalf("offline partition does not say why: %q", msg)
				}
				l.restart(2)
				l.step(failover)
				l.settle()
				leader, _, _ := l.meta()
				if leader != 2 && leader != 3 {
					l.fatalf("recovered leader %d, want 2 or 3 (the longest logs)", leader)
				}
				l.step(failover)
				l.settle()
				l.finish()
				l.want(1, 2, 2, "m1", "m2")
			default:
				leader, _, _ := l.meta()
				if leader != 1 {
					l.fatalf("leader %d, want 1 (the ISR's last member, back with LEO 0)", leader)
				}
				l.restart(2)
				l.restart(3)
				l.step(failover)
				l.settle()
				l.finish("acked-lost:m1", "acked-lost:m2", "hw-back", "seen-gone@0", "seen-gone@1")
			}
		})
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
