package controller

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/replication"
)

// TestReRegistrationByRule: a broker that restarts within its session keeps
// its ISR places under zookeeper-pre-2.2; under zookeeper (KIP-380) the
// controller sees the bounce and it leaves them, unfenced (ZooKeeper knew
// no fencing); under the kraft rules it is fenced and leaves them, and
// comes back unfenced (not in the ISR) at its heartbeat.
func TestReRegistrationByRule(t *testing.T) {
	for _, rule := range FencingRules() {
		t.Run(rule.String(), func(t *testing.T) {
			l := newRuleLab(t, rule)
			l.start(1, 2, 3)
			l.create("t", 1, 3, map[string]string{"min.insync.replicas": "2"})
			ep, err := l.c.Register(Registration{ID: 2, Listener: "x", CleanShutdown: true})
			if err != nil {
				t.Fatal(err)
			}
			l.epochs[2] = ep
			p := l.part("t", 0)
			switch {
			case rule == FencingZooKeeperPre22:
				if !slices.Equal(p.ISR, []int32{1, 2, 3}) {
					t.Fatalf("zookeeper-pre-2.2: ISR %v, want [1 2 3]", p.ISR)
				}
			case rule == FencingZooKeeper:
				if !slices.Equal(p.ISR, []int32{1, 3}) || l.meta().Broker(2).Fenced {
					t.Fatalf("zookeeper: ISR %v fenced %v; want [1 3], not fenced (KIP-380)", p.ISR, l.meta().Broker(2).Fenced)
				}
			case !slices.Equal(p.ISR, []int32{1, 3}) || !l.meta().Broker(2).Fenced:
				t.Fatalf("%s: ISR %v fenced %v; want [1 3], fenced", rule, p.ISR, l.meta().Broker(2).Fenced)
			}
			l.beat(2)
			if l.meta().Broker(2).Fenced {
				t.Fatal("still fenced after its heartbeat")
			}
		})
	}
}

// TestELRAndUncleanShutdown: under kraft-elr-recovery (lab-only) a replica
// that leaves an ISR below min.insync.replicas joins the ELR and is elected
// from it; a broker back from an unclean shutdown leaves ISR and ELR; a
// partition with neither waits for every replica's log report and elects
// the longest (KIP-966's unclean recovery, in no release).
func TestELRAndUncleanShutdown(t *testing.T) {
	l := newRuleLab(t, FencingKRaftELRRecovery)
	l.start(1, 2, 3)
	l.create("t", 1, 3, map[string]string{"min.insync.replicas": "2"})
	l.c.FenceBroker(3)
	l.want("t", 0, 1, []int32{1, 2}, 0, 1) // at min.insync.replicas: no ELR
	l.c.FenceBroker(2)
	if p := l.part("t", 0); !slices.Equal(p.ISR, []int32{1}) || !slices.Equal(p.ELR, []int32{2}) {
		t.Fatalf("ISR %v ELR %v; want [1] and [2]", p.ISR, p.ELR)
	}
	l.c.FenceBroker(1) // the last ISR member leaves too: ISR empty, offline
	if p := l.part("t", 0); p.Leader != -1 || len(p.ISR) != 0 || !slices.Equal(p.ELR, []int32{2, 1}) {
		t.Fatalf("leader %d ISR %v ELR %v; want offline, [], [2 1]", p.Leader, p.ISR, p.ELR)
	}
	l.beat(2) // an ELR member is back: elected cleanly
	if p := l.part("t", 0); p.Leader != 2 || !slices.Equal(p.ISR, []int32{2}) || !slices.Equal(p.ELR, []int32{1}) {
		t.Fatalf("leader %d ISR %v ELR %v; want 2, [2], [1]", p.Leader, p.ISR, p.ELR)
	}
	// Broker 2 restarts after a power loss: it leaves ISR and ELR; broker 1
	// (still in the ELR) is not running, so the partition waits.
	ep, err := l.c.Register(Registration{ID: 2, Listener: "x", CleanShutdown: false})
	if err != nil {
		t.Fatal(err)
	}
	l.epochs[2] = ep
	l.beat(2)
	if p := l.part("t", 0); p.Leader != -1 || len(p.ISR) != 0 || !slices.Equal(p.ELR, []int32{1}) {
		t.Fatalf("leader %d ISR %v ELR %v; want offline, [], [1]", p.Leader, p.ISR, p.ELR)
	}
	// Broker 1 comes back uncleanly too: nothing eligible is left.
	ep, _ = l.c.Register(Registration{ID: 1, Listener: "x", CleanShutdown: false})
	l.epochs[1] = ep
	l.beat(1)
	ep, _ = l.c.Register(Registration{ID: 3, Listener: "x", CleanShutdown: false})
	l.epochs[3] = ep
	l.beat(3)
	p := l.part("t", 0)
	if !p.NeedsRecovery() {
		t.Fatalf("leader %d ISR %v ELR %v; want no leader, ISR or ELR", p.Leader, p.ISR, p.ELR)
	}
	// Recovery waits for a report from every replica in this partition epoch.
	report := func(id int32, lastEpoch int32, leo int64) {
		if err := l.c.ReportLogs(id, l.epochs[id], []LogInfo{{Topic: "t", Partition: 0, PartitionEpoch: p.PartitionEpoch, LastEpoch: lastEpoch, LogEndOffset: leo}}); err != nil {
			t.Fatal(err)
		}
	}
	report(1, 0, 3)
	report(2, 1, 2)
	if l.part("t", 0).Leader != -1 {
		t.Fatal("recovered before every replica reported")
	}
	report(3, 0, 5)
	if got := l.part("t", 0); got.Leader != 2 || !slices.Equal(got.ISR, []int32{2}) {
		t.Fatalf("recovered leader %d ISR %v; want 2 (the highest last epoch)", got.Leader, got.ISR)
	}
	wantErr(t, l.c.ReportLogs(1, l.epochs[1]-1, nil), kerr.StaleBrokerEpoch)
}

// TestAlterPartitionBrokerEpochs: KIP-903. Under kraft rules an ISR
// proposal naming a member with the broker epoch of an earlier incarnation
// is INELIGIBLE_REPLICA; the ZooKeeper-era rule knew no broker epochs.
func TestAlterPartitionBrokerEpochs(t *testing.T) {
	for _, rule := range FencingRules() {
		t.Run(rule.String(), func(t *testing.T) {
			l := newRuleLab(t, rule)
			l.start(1, 2, 3)
			l.create("t", 1, 3, nil)
			l.alterISR("t", 0, 1, 2)
			cur := l.part("t", 0)
			stale := l.epochs[3] - 1
			r := l.c.AlterPartition("t", 0, 1, l.epochs[1], replication.AlterPartitionRequest{BrokerID: 1, LeaderEpoch: cur.LeaderEpoch,
				PartitionEpoch: cur.PartitionEpoch, NewISR: []int32{1, 2, 3}, NewISRBrokerEpochs: []int64{-1, l.epochs[2], stale}})
			if rule.ZooKeeper() {
				if r.Err != nil {
					t.Fatalf("zookeeper: %v", r.Err)
				}
				return
			}
			wantErr(t, r.Err, kerr.IneligibleReplica)
			r = l.c.AlterPartition("t", 0, 1, l.epochs[1], replication.AlterPartitionRequest{BrokerID: 1, LeaderEpoch: cur.LeaderEpoch,
				PartitionEpoch: cur.PartitionEpoch, NewISR: []int32{1, 2, 3}, NewISRBrokerEpochs: []int64{-1, l.epochs[2], l.epochs[3]}})
			if r.Err != nil || !slices.Equal(r.ISR, []int32{1, 2, 3}) {
				t.Fatalf("current epochs: %v %v", r.Err, r.ISR)
			}
		})
	}
}

// TestELRLastKnownLeader: Kafka 4.1 (kraft-elr). The same story as
// TestELRAndUncleanShutdown up to the empty ISR and ELR: broker 2 led last
// when the ISR became empty, so it is the last known leader
// (PartitionChangeBuilder.maybeUpdateLastKnownLeader); once broker 1, the
// last ELR member, comes back from an unclean shutdown and leaves the ELR,
// the running last known leader is elected at once with itself as the ISR
// (canElectLastKnownLeader), unclean.leader.election.enable off and no
// log reports asked for. A fenced last known leader is not elected
// (KAFKA-19522). Before, the partition waited for every replica's report.
func TestELRLastKnownLeader(t *testing.T) {
	l := newRuleLab(t, FencingKRaftELR)
	l.start(1, 2, 3)
	l.create("t", 1, 3, map[string]string{"min.insync.replicas": "2"})
	l.c.FenceBroker(3)
	l.c.FenceBroker(2)
	l.c.FenceBroker(1)
	l.beat(2) // from the ELR
	if p := l.part("t", 0); p.Leader != 2 || !slices.Equal(p.ISR, []int32{2}) || !slices.Equal(p.ELR, []int32{1}) || len(p.LastKnownELR) != 0 {
		t.Fatalf("leader %d ISR %v ELR %v last known %v; want 2, [2], [1], []", p.Leader, p.ISR, p.ELR, p.LastKnownELR)
	}
	ep, err := l.c.Register(Registration{ID: 2, Listener: "x", CleanShutdown: false})
	if err != nil {
		t.Fatal(err)
	}
	l.epochs[2] = ep
	if p := l.part("t", 0); p.Leader != -1 || len(p.ISR) != 0 || !slices.Equal(p.ELR, []int32{1}) || !slices.Equal(p.LastKnownELR, []int32{2}) {
		t.Fatalf("leader %d ISR %v ELR %v last known %v; want offline, [], [1], [2]", p.Leader, p.ISR, p.ELR, p.LastKnownELR)
	}
	ep, _ = l.c.Register(Registration{ID: 1, Listener: "x", CleanShutdown: false})
	l.epochs[1] = ep
	l.beat(1) // broker 1 leaves the ELR; broker 2, the last known leader, is still fenced
	if p := l.part("t", 0); p.Leader != -1 || len(p.ISR) != 0 || len(p.ELR) != 0 || !slices.Equal(p.LastKnownELR, []int32{2}) {
		t.Fatalf("leader %d ISR %v ELR %v last known %v; want offline, [], [], [2] (a fenced last known leader is not elected)", p.Leader, p.ISR, p.ELR, p.LastKnownELR)
	}
	l.beat(2)
	p := l.part("t", 0)
	if p.Leader != 2 || !slices.Equal(p.ISR, []int32{2}) || len(p.ELR) != 0 || len(p.LastKnownELR) != 0 {
		t.Fatalf("leader %d ISR %v ELR %v last known %v; want the last known leader 2, ISR [2]", p.Leader, p.ISR, p.ELR, p.LastKnownELR)
	}
	var how string
	for _, e := range l.events() {
		if e.Leader != nil && e.Leader.Leader == 2 && e.Leader.Unclean {
			how = e.Message
		}
	}
	if how == "" {
		t.Fatal("no election of broker 2 marked unclean (Kafka's ElectionResult for the last known leader is unclean)")
	}
}

// TestZooKeeperBounceKIP380: under zookeeper (Kafka 2.2+) a broker that
// restarts within its session leaves every ISR but where it is the last
// member, where it leads again under a new leader epoch; under
// zookeeper-pre-2.2 it keeps every ISR place.
func TestZooKeeperBounceKIP380(t *testing.T) {
	for _, rule := range []FencingRule{FencingZooKeeper, FencingZooKeeperPre22} {
		t.Run(rule.String(), func(t *testing.T) {
			l := newRuleLab(t, rule)
			l.start(1, 2, 3)
			l.create("a", 1, 3, nil)
			l.create("b", 1, 3, nil)
			l.alterISR("b", 0, 1) // broker 1, the leader, is b's last ISR member
			before := l.part("b", 0).LeaderEpoch
			ep, err := l.c.Register(Registration{ID: 1, Listener: "x", CleanShutdown: true})
			if err != nil {
				t.Fatal(err)
			}
			l.epochs[1] = ep
			a, b := l.part("a", 0), l.part("b", 0)
			if rule == FencingZooKeeperPre22 {
				if !slices.Equal(a.ISR, []int32{1, 2, 3}) || a.Leader != 2 {
					t.Fatalf("a: leader %d ISR %v; want 2, [1 2 3]", a.Leader, a.ISR)
				}
				return
			}
			if !slices.Equal(a.ISR, []int32{2, 3}) || a.Leader != 2 {
				t.Fatalf("a: leader %d ISR %v; want 2, [2 3] (KIP-380: the bounce removes it)", a.Leader, a.ISR)
			}
			if !slices.Equal(b.ISR, []int32{1}) || b.Leader != 1 || b.LeaderEpoch <= before {
				t.Fatalf("b: leader %d ISR %v epoch %d; want 1, [1], a new epoch after %d", b.Leader, b.ISR, b.LeaderEpoch, before)
			}
		})
	}
}
