package controller

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/events"
	"tidemark/replication"
)

func TestRegisterAndHeartbeat(t *testing.T) {
	l := newLab(t)
	e1, err := l.c.RegisterBroker(1, "127.0.0.1:9092")
	if err != nil {
		t.Fatal(err)
	}
	m := l.c.Metadata()
	if b := m.Broker(1); b == nil || !b.Fenced || b.Epoch != e1 || b.Listener != "127.0.0.1:9092" || !b.LastHeartbeat.Equal(l.clk.Now()) {
		t.Fatalf("after registration: %+v", b)
	}
	// Fenced brokers get no replicas.
	_, err = l.c.CreateTopic("t", 1, 1, nil)
	wantErr(t, err, kerr.InvalidReplicationFactor)

	_, err = l.c.Heartbeat(1, e1+1)
	wantErr(t, err, kerr.StaleBrokerEpoch)
	_, err = l.c.Heartbeat(7, 1)
	wantErr(t, err, kerr.StaleBrokerEpoch)
	v, err := l.c.Heartbeat(1, e1)
	if err != nil || v != l.c.MetadataVersion() {
		t.Fatalf("Heartbeat: %d %v (version %d)", v, err, l.c.MetadataVersion())
	}
	if b := l.meta().Broker(1); b.Fenced {
		t.Fatal("still fenced after heartbeat")
	}
	// A second registration within the session is a new incarnation: a new,
	// larger epoch; the old one is stale; it stays unfenced.
	e2, err := l.c.RegisterBroker(1, "127.0.0.1:9999")
	if err != nil || e2 <= e1 {
		t.Fatalf("re-registration epoch %d (was %d): %v", e2, e1, err)
	}
	_, err = l.c.Heartbeat(1, e1)
	wantErr(t, err, kerr.StaleBrokerEpoch)
	if b := l.meta().Broker(1); b.Fenced || b.Listener != "127.0.0.1:9999" {
		t.Fatalf("after re-registration: %+v", b)
	}
	// Once fenced, a registration stays fenced until its first heartbeat.
	l.c.FenceBroker(1)
	e3, err := l.c.RegisterBroker(1, "127.0.0.1:9999")
	if err != nil || e3 <= e2 {
		t.Fatalf("registration after fencing: epoch %d: %v", e3, err)
	}
	if b := l.meta().Broker(1); !b.Fenced {
		t.Fatalf("registration after fencing: %+v", b)
	}
	_, err = l.c.RegisterBroker(-1, "x")
	wantErr(t, err, kerr.InvalidRequest)
}

func TestSessionTimeoutFencesWithSteppedClock(t *testing.T) {
	l := newLab(t)
	l.start(1, 2, 3)
	l.create("t", 3, 3, nil) // AR [1 2 3], [2 3 1], [3 1 2]
	v := l.c.MetadataVersion()

	start := l.clk.Now()
	l.clk.Step(1500 * time.Millisecond)
	l.beat(1, 2)
	if at, ok := l.c.NextSessionExpiry(); !ok || !at.Equal(start.Add(DefaultSessionTimeout+time.Nanosecond)) {
		t.Fatalf("NextSessionExpiry = %v, %v; want broker 3's, just past t0+%v", at.Sub(start), ok, DefaultSessionTimeout)
	}
	l.clk.Step(500 * time.Millisecond) // broker 3 silent for exactly the session timeout: not yet
	l.c.Tick()
	if l.c.MetadataVersion() != v {
		t.Fatal("Tick changed something at exactly the session timeout")
	}
	l.clk.Step(time.Millisecond)
	l.c.Tick()
	if b := l.meta().Broker(3); !b.Fenced {
		t.Fatal("broker 3 not fenced after its session timeout")
	}
	if l.c.MetadataVersion() != v+1 {
		t.Fatalf("version %d; want one change (%d)", l.c.MetadataVersion(), v+1)
	}
	l.want("t", 0, 1, []int32{1, 2}, 0, 1) // 3 left the ISR only
	l.want("t", 1, 2, []int32{2, 1}, 0, 1)
	l.want("t", 2, 1, []int32{1, 2}, 1, 1) // 3 led: the next ISR member in AR order, 1, leads

	// Paused clock: nothing more happens, however often Tick runs.
	for range 5 {
		l.c.Tick()
	}
	if l.c.MetadataVersion() != v+1 {
		t.Fatal("Tick without time passing changed the metadata")
	}
	// Brokers 1 and 2 time out together: both are fenced before leadership
	// moves, so nothing is handed to a broker that is fenced in the same tick.
	l.clk.Step(3 * time.Second)
	l.c.Tick()
	// Broker 1's turn comes first: it leaves ISRs that still hold 2, and its
	// partitions go offline; then 2 leaves what is left, as the last member.
	l.want("t", 0, -1, []int32{2}, 1, 2)
	l.want("t", 1, -1, []int32{2}, 1, 3)
	l.want("t", 2, -1, []int32{2}, 2, 2)
	if at, ok := l.c.NextSessionExpiry(); ok {
		t.Fatalf("every broker fenced, yet NextSessionExpiry = %v", at)
	}
}

// TestFencingEventRoundsTheSilence: the fencing event says how long the
// broker was silent to the millisecond, in its message and its translated
// args, in milliseconds; it used to print "no heartbeat for 2.001381455s".
func TestFencingEventRoundsTheSilence(t *testing.T) {
	l := newLab(t)
	l.start(1)
	l.clk.Step(DefaultSessionTimeout + 1381455*time.Nanosecond)
	l.c.Tick()
	evs, _ := l.bus.Since(0, 0)
	var fenced *events.Event
	for i := range evs {
		if evs[i].Kind == events.KindBroker && evs[i].BrokerState == events.BrokerFenced {
			fenced = &evs[i]
		}
	}
	if fenced == nil {
		t.Fatal("no fencing event")
	}
	if want := "no heartbeat for 2001 ms (session timeout 2000 ms)"; !strings.Contains(fenced.Message, want) {
		t.Errorf("message %q, want it to say %q", fenced.Message, want)
	}
	if !slices.Contains(fenced.MessageArgs, "2001") {
		t.Errorf("message args %q, want 2001 among them", fenced.MessageArgs)
	}
}

func TestCleanElectionFollowsAROrder(t *testing.T) {
	l := newLab(t)
	l.start(1, 2, 3)
	l.create("t", 1, 3, nil)
	l.alterISR("t", 0, 1, 3, 2) // ISR order differs from AR order [1 2 3]
	l.want("t", 0, 1, []int32{1, 3, 2}, 0, 1)
	seq := l.bus.LastSeq()
	l.c.FenceBroker(1)
	l.want("t", 0, 2, []int32{3, 2}, 1, 2)

	evs := l.eventsSince(seq)
	if len(evs) != 2 || evs[0].Kind != events.KindBroker || evs[0].Broker != 1 || evs[0].BrokerState != events.BrokerFenced {
		t.Fatalf("events %+v", evs)
	}
	e := evs[1]
	if e.Kind != events.KindElection || e.Broker != 2 || e.Topic != "t" || e.Partition != 0 ||
		*e.Leader != (events.Leadership{Leader: 2, PreviousLeader: 1, LeaderEpoch: 1}) || !slices.Equal(e.ISR, []int32{3, 2}) {
		t.Fatalf("election event %+v leader %+v", e, e.Leader)
	}
	// Fencing again, or an unknown broker, does nothing.
	v := l.c.MetadataVersion()
	l.c.FenceBroker(1)
	l.c.FenceBroker(42)
	if l.c.MetadataVersion() != v {
		t.Fatal("FenceBroker of a fenced or unknown broker changed the metadata")
	}
}

// isrOfOne makes a 2-replica topic whose ISR has shrunk to the leader 1.
func isrOfOne(l *lab, configs map[string]string) {
	l.start(1, 2)
	l.create("t", 1, 2, configs)
	l.alterISR("t", 0, 1)
	l.want("t", 0, 1, []int32{1}, 0, 1)
}

func TestOfflineWithoutUncleanElection(t *testing.T) {
	l := newLab(t)
	isrOfOne(l, nil)
	seq := l.bus.LastSeq()
	l.c.FenceBroker(1)
	l.want("t", 0, -1, []int32{1}, 1, 2) // ISR keeps its last member
	evs := l.eventsSince(seq)
	if e := evs[len(evs)-1]; e.Kind != events.KindElection || e.Broker != events.NoBroker || e.Leader.Leader != -1 || e.Leader.PreviousLeader != 1 ||
		e.Leader.Unclean || !strings.Contains(e.Message, "unclean.leader.election.enable=false") {
		t.Fatalf("offline event %+v", e)
	}
	// Broker 2 is alive but not in the ISR: the partition stays offline.
	l.clk.Step(10 * time.Second)
	l.beat(2)
	l.c.Tick()
	l.want("t", 0, -1, []int32{1}, 1, 2)
	// An AlterPartition from anyone is refused while offline.
	r := l.c.AlterPartition("t", 0, 2, l.epochs[2], replication.AlterPartitionRequest{BrokerID: 2, LeaderEpoch: 1, PartitionEpoch: 2, NewISR: []int32{2}})
	wantErr(t, r.Err, kerr.NotLeaderForPartition)
}

func TestUnfenceBringsOfflinePartitionBack(t *testing.T) {
	l := newLab(t)
	isrOfOne(l, nil)
	l.c.FenceBroker(1)
	l.want("t", 0, -1, []int32{1}, 1, 2)
	// Broker 1 restarts: registered (still fenced, still offline), then its
	// first heartbeat unfences it and it leads again, cleanly.
	l.start(1)
	l.want("t", 0, 1, []int32{1}, 2, 3)
	evs := l.events()
	e := evs[len(evs)-1]
	if e.Kind != events.KindElection || e.Leader.Leader != 1 || e.Leader.PreviousLeader != -1 || e.Leader.Unclean || e.Leader.LeaderEpoch != 2 {
		t.Fatalf("election event %+v %+v", e, e.Leader)
	}
}

func TestUncleanElectionWhenEnabled(t *testing.T) {
	l := newLab(t)
	isrOfOne(l, map[string]string{"unclean.leader.election.enable": "true"})
	l.c.FenceBroker(1)
	l.want("t", 0, 2, []int32{2}, 1, 2)
	evs := l.events()
	e := evs[len(evs)-1]
	if e.Kind != events.KindElection || !e.Leader.Unclean || e.Leader.Leader != 2 || e.Leader.PreviousLeader != 1 {
		t.Fatalf("election event %+v %+v", e, e.Leader)
	}
	// Broker 1 comes back: it is not in the ISR, so it does not take over.
	l.start(1)
	l.want("t", 0, 2, []int32{2}, 1, 2)
}

func TestUncleanElectionSwitchedOnLater(t *testing.T) {
	l := newLab(t)
	isrOfOne(l, nil)
	l.c.FenceBroker(1)
	l.want("t", 0, -1, []int32{1}, 1, 2)
	seq := l.bus.LastSeq()
	tp, err := l.c.AlterConfigs("t", map[string]*string{"unclean.leader.election.enable": ptr("true")})
	if err != nil {
		t.Fatal(err)
	}
	if p := tp.Partitions[0]; p.Leader != 2 || !slices.Equal(p.ISR, []int32{2}) || p.LeaderEpoch != 2 {
		t.Fatalf("returned topic %+v", p)
	}
	l.want("t", 0, 2, []int32{2}, 2, 3)
	evs := l.eventsSince(seq)
	if len(evs) != 2 || evs[0].Kind != events.KindConfig || evs[1].Kind != events.KindElection || !evs[1].Leader.Unclean {
		t.Fatalf("events %+v", evs)
	}
}

func TestUncleanElectionOnUnfence(t *testing.T) {
	l := newLab(t)
	isrOfOne(l, map[string]string{"unclean.leader.election.enable": "true"})
	// Both die; broker 2 dies first, so the partition goes offline with ISR [1].
	l.c.FenceBroker(2)
	l.c.FenceBroker(1)
	l.want("t", 0, -1, []int32{1}, 1, 2)
	// Broker 2 is in the AR but not the ISR: with unclean election on, its
	// return is enough.
	l.start(2)
	l.want("t", 0, 2, []int32{2}, 2, 3)
	if e := l.events()[len(l.events())-1]; !e.Leader.Unclean {
		t.Fatalf("not unclean: %+v", e.Leader)
	}
}

// TestRestartWithinSessionKeepsISR: under zookeeper-pre-2.2 a broker that
// re-registers before its session expired keeps its ISR places (ZooKeeper-era
// behaviour before KIP-380, which KIP-101's scenarios assume) and hands its
// leaderships to the next live ISR member; where it is the only ISR member
// it leads again in a new epoch. (Under zookeeper, KIP-380, see
// TestZooKeeperBounceKIP380.)
func TestRestartWithinSessionKeepsISR(t *testing.T) {
	l := newRuleLab(t, FencingZooKeeperPre22)
	l.start(1, 2)
	l.create("t", 1, 2, nil)
	l.create("solo", 1, 1, nil)
	old := l.epochs[1]
	ep, err := l.c.RegisterBroker(1, "127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	l.want("t", 0, 2, []int32{1, 2}, 1, 1) // leadership handed over, still in the ISR
	l.want("solo", 0, 1, []int32{1}, 1, 1) // the only replica leads again, in a new epoch
	r := l.c.AlterPartition("t", 0, 1, old, replication.AlterPartitionRequest{BrokerID: 1, LeaderEpoch: 0, PartitionEpoch: 0, NewISR: []int32{1}})
	wantErr(t, r.Err, kerr.StaleBrokerEpoch)
	l.epochs[1] = ep
	l.beat(1)
	l.want("t", 0, 2, []int32{1, 2}, 1, 1)
}

func TestAlterPartition(t *testing.T) {
	l := newLab(t)
	l.start(1, 2, 3)
	l.create("t", 1, 3, nil)

	// Accepted: shrink, then expand; each bumps the partition epoch only.
	r := l.alterISR("t", 0, 1, 2)
	if r.Err != nil || r.LeaderEpoch != 0 || r.PartitionEpoch != 1 || !slices.Equal(r.ISR, []int32{1, 2}) {
		t.Fatalf("response %+v", r)
	}
	evs := l.events()
	if e := evs[len(evs)-1]; e.Kind != events.KindISR || e.Broker != 1 || !slices.Equal(e.ISR, []int32{1, 2}) {
		t.Fatalf("ISR event %+v", e)
	}
	l.alterISR("t", 0, 1, 2, 3)
	l.want("t", 0, 1, []int32{1, 2, 3}, 0, 2)

	// Broker 1 is fenced; 2 leads in epoch 1. Broker 1 comes back unaware (a
	// zombie) and proposes with its old leader epoch.
	l.c.FenceBroker(1)
	l.want("t", 0, 2, []int32{2, 3}, 1, 3)
	l.start(1)
	v := l.c.MetadataVersion()
	req := func(broker, leaderEpoch, partitionEpoch int32, isr ...int32) replication.AlterPartitionRequest {
		return replication.AlterPartitionRequest{BrokerID: broker, LeaderEpoch: leaderEpoch, PartitionEpoch: partitionEpoch, NewISR: isr}
	}
	cases := []struct {
		name        string
		topic       string
		partition   int32
		broker      int32
		brokerEpoch int64
		req         replication.AlterPartitionRequest
		want        *kerr.Error
	}{
		{"zombie leader, stale leader epoch", "t", 0, 1, l.epochs[1], req(1, 0, 2, 1), kerr.FencedLeaderEpoch},
		{"follower in the current epoch", "t", 0, 3, l.epochs[3], req(3, 1, 3, 3), kerr.NotLeaderForPartition},
		{"leader epoch from the future", "t", 0, 2, l.epochs[2], req(2, 2, 3, 2), kerr.NotLeaderForPartition},
		{"stale partition epoch", "t", 0, 2, l.epochs[2], req(2, 1, 2, 2), kerr.InvalidUpdateVersion},
		{"stale broker epoch", "t", 0, 2, l.epochs[2] - 1, req(2, 1, 3, 2), kerr.StaleBrokerEpoch},
		{"unknown broker", "t", 0, 9, 1, req(9, 1, 3, 9), kerr.StaleBrokerEpoch},
		{"ISR without the leader", "t", 0, 2, l.epochs[2], req(2, 1, 3, 3), kerr.InvalidRequest},
		{"ISR outside the AR", "t", 0, 2, l.epochs[2], req(2, 1, 3, 2, 4), kerr.InvalidRequest},
		{"ISR with a duplicate", "t", 0, 2, l.epochs[2], req(2, 1, 3, 2, 3, 2), kerr.InvalidRequest},
		{"empty ISR", "t", 0, 2, l.epochs[2], req(2, 1, 3), kerr.InvalidRequest},
		{"request names another broker", "t", 0, 2, l.epochs[2], req(3, 1, 3, 2), kerr.InvalidRequest},
		{"unknown topic", "nope", 0, 2, l.epochs[2], req(2, 1, 3, 2), kerr.UnknownTopicOrPartition},
		{"unknown partition", "t", 1, 2, l.epochs[2], req(2, 1, 3, 2), kerr.UnknownTopicOrPartition},
		{"negative partition", "t", -1, 2, l.epochs[2], req(2, 1, 3, 2), kerr.UnknownTopicOrPartition},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := l.c.AlterPartition(tc.topic, tc.partition, tc.broker, tc.brokerEpoch, tc.req)
			wantErr(t, r.Err, tc.want)
		})
	}
	// A rejection carries the current state when the partition exists.
	r = l.c.AlterPartition("t", 0, 1, l.epochs[1], req(1, 0, 2, 1))
	if r.LeaderEpoch != 1 || r.PartitionEpoch != 3 || !slices.Equal(r.ISR, []int32{2, 3}) {
		t.Fatalf("rejection %+v", r)
	}
	if l.c.MetadataVersion() != v {
		t.Fatal("a rejected AlterPartition changed the metadata")
	}

	// A fenced broker may not join the ISR, though it may be dropped from it.
	l.c.FenceBroker(1)
	r = l.c.AlterPartition("t", 0, 2, l.epochs[2], req(2, 1, 3, 2, 3, 1))
	wantErr(t, r.Err, kerr.IneligibleReplica)
	l.alterISR("t", 0, 2)
	l.want("t", 0, 2, []int32{2}, 1, 4)
	// The same ISR again is still accepted and still moves the partition
	// epoch, so the proposer can tell its answer from an older one.
	l.alterISR("t", 0, 2)
	l.want("t", 0, 2, []int32{2}, 1, 5)
}

// TestAlterPartitionDrivesReplicationRules checks the response is one the
// replication state machine takes: its proposal clears and the ISR applies.
func TestAlterPartitionDrivesReplicationRules(t *testing.T) {
	l := newLab(t)
	l.start(1, 2)
	l.create("t", 1, 2, nil)
	p, err := replication.New(1, replication.DefaultConfig(), replication.LogState{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.LeaderAndIsr(l.part("t", 0).State()); err != nil {
		t.Fatal(err)
	}
	epoch, err := p.CheckProduce(1)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceAppended(replication.ProduceRequest{ID: 1, Acks: 1, Batch: replication.Batch{Epoch: epoch}}); err != nil {
		t.Fatal(err)
	}
	p.Ready()
	p.Tick(10_000) // follower 2 never fetched the record: the leader proposes to drop it
	rd := p.Ready()
	if rd.AlterPartition == nil {
		t.Fatal("no ISR proposal")
	}
	resp := l.c.AlterPartition("t", 0, 1, l.epochs[1], *rd.AlterPartition)
	if resp.Err != nil {
		t.Fatal(resp.Err)
	}
	if err := p.AlterPartitionResponse(*rd.AlterPartition, resp); err != nil {
		t.Fatal(err)
	}
	if st := p.Status(); !slices.Equal(st.ISR, []int32{1}) || st.PartitionEpoch != 1 {
		t.Fatalf("replication status %+v", st)
	}
	l.want("t", 0, 1, []int32{1}, 0, 1)
}

func TestPersistenceAcrossReopen(t *testing.T) {
	l := newLab(t)
	l.start(1, 2, 3)
	l.create("orders", 3, 3, map[string]string{"min.insync.replicas": "2", "truncation.rule": "high-watermark"})
	l.create("logs", 1, 1, nil)
	l.alterISR("orders", 1, 2, 3)
	l.c.FenceBroker(3)
	before := l.c.Metadata()

	l.clk.Step(time.Hour)
	l.reopen()
	after := l.c.Metadata()
	if after.Version != before.Version {
		t.Fatalf("version %d after reopen; want %d", after.Version, before.Version)
	}
	for i := range before.Brokers {
		b, a := before.Brokers[i], after.Brokers[i]
		if !a.LastHeartbeat.Equal(l.clk.Now()) {
			t.Fatalf("broker %d: heartbeat %v; want a fresh session at %v", a.ID, a.LastHeartbeat, l.clk.Now())
		}
		a.LastHeartbeat = b.LastHeartbeat
		if a != b {
			t.Fatalf("broker %+v; want %+v", a, b)
		}
	}
	if fmt.Sprintf("%+v", after.Topics) != fmt.Sprintf("%+v", before.Topics) {
		t.Fatalf("topics after reopen:\n%+v\nwant\n%+v", after.Topics, before.Topics)
	}
	if cfg := after.Topic("orders").Config(); cfg.Replication().TruncationRule != replication.RuleHighWatermark {
		t.Fatal("configs lost")
	}

	// Broker epochs survive: the old ones still heartbeat, and a new
	// registration gets a larger one than any before.
	l.beat(1, 2)
	ep, err := l.c.RegisterBroker(3, "127.0.0.1:3")
	if err != nil || ep <= l.epochs[3] || ep <= l.epochs[2] {
		t.Fatalf("new epoch %d (old %v): %v", ep, l.epochs, err)
	}
	// The fresh session means no one is fenced at the first tick after reopen.
	l.c.Tick()
	if b := l.meta().Broker(1); b.Fenced {
		t.Fatal("broker fenced right after reopen")
	}
	// Deletion persists too.
	if err := l.c.DeleteTopic("logs"); err != nil {
		t.Fatal(err)
	}
	l.reopen()
	if _, ok := l.c.Topic("logs"); ok {
		t.Fatal("deleted topic back after reopen")
	}
	if _, ok := l.c.Topic("orders"); !ok {
		t.Fatal("orders lost")
	}
}

func TestOpenErrors(t *testing.T) {
	l := newLab(t)
	// badger locks its directory: a second controller on it must fail, not share it.
	if c, err := Open(l.dir, Options{}); err == nil {
		c.Close()
		t.Fatal("second Open of the same directory succeeded")
	}
	if err := l.c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	_, err := l.c.RegisterBroker(1, "x")
	wantErr(t, err, kerr.NotController)
	_, err = l.c.CreateTopic("t", 1, 1, nil)
	wantErr(t, err, kerr.NotController)
	r := l.c.AlterPartition("t", 0, 1, 1, replication.AlterPartitionRequest{})
	wantErr(t, r.Err, kerr.NotController)
	l.c.Tick()
	l.c.FenceBroker(1)
}

func TestMetadataVersionCountsChanges(t *testing.T) {
	l := newLab(t)
	if v := l.c.MetadataVersion(); v != 0 {
		t.Fatalf("empty store version %d", v)
	}
	steps := []struct {
		name    string
		do      func()
		changes uint64
	}{
		{"register", func() { l.epochs[1], _ = l.c.RegisterBroker(1, "a") }, 1},
		{"first heartbeat unfences", func() { l.beat(1) }, 1},
		{"later heartbeat", func() { l.beat(1) }, 0},
		{"create topic", func() { l.create("t", 2, 1, nil) }, 1},
		{"alter ISR", func() { l.alterISR("t", 0, 1) }, 1},
		{"alter configs", func() { l.c.AlterConfigs("t", map[string]*string{"retention.ms": ptr("5")}) }, 1},
		{"tick, nothing due", func() { l.c.Tick() }, 0},
		{"tick fences", func() { l.clk.Step(time.Minute); l.c.Tick() }, 1},
		{"delete topic", func() { l.c.DeleteTopic("t") }, 1},
		{"failed delete", func() { l.c.DeleteTopic("t") }, 0},
	}
	for _, s := range steps {
		v := l.c.MetadataVersion()
		s.do()
		if got := l.c.MetadataVersion() - v; got != s.changes {
			t.Fatalf("%s: version moved by %d; want %d", s.name, got, s.changes)
		}
	}
}

// TestEventsRebuildTheState replays the controller's events onto an empty
// Snapshot, as the UI does, and checks it ends where the metadata is.
func TestEventsRebuildTheState(t *testing.T) {
	l := newLab(t)
	l.start(1, 2, 3)
	l.create("a", 3, 3, nil)
	l.create("b", 2, 2, map[string]string{"unclean.leader.election.enable": "true"})
	l.alterISR("a", 0, 1, 2)
	l.clk.Step(1500 * time.Millisecond)
	l.beat(2, 3)
	l.clk.Step(time.Second)
	l.c.Tick() // fences 1
	l.c.AlterConfigs("a", map[string]*string{"min.insync.replicas": ptr("2")})
	l.c.FenceBroker(2)
	l.start(1)
	l.create("gone", 1, 1, nil)
	l.c.DeleteTopic("gone")

	var s events.Snapshot
	var kinds []events.Kind
	for _, e := range l.events() {
		if e.Time.IsZero() || e.Seq == 0 {
			t.Fatalf("event without time or seq: %+v", e)
		}
		if !slices.Contains(kinds, e.Kind) {
			kinds = append(kinds, e.Kind)
		}
		s.Apply(e)
	}
	for _, k := range []events.Kind{events.KindBroker, events.KindTopic, events.KindISR, events.KindElection, events.KindConfig} {
		if !slices.Contains(kinds, k) {
			t.Errorf("no %s event", k)
		}
	}
	m := l.c.Metadata()
	if len(s.Brokers) != len(m.Brokers) {
		t.Fatalf("snapshot brokers %+v", s.Brokers)
	}
	for _, b := range m.Brokers {
		want := events.BrokerUp
		if b.Fenced {
			want = events.BrokerFenced
		}
		if sb := s.Broker(b.ID); sb == nil || sb.State != want {
			t.Fatalf("snapshot broker %d: %+v; want %s", b.ID, sb, want)
		}
	}
	if len(s.Topics) != len(m.Topics) {
		t.Fatalf("snapshot topics %d; want %d", len(s.Topics), len(m.Topics))
	}
	for _, mt := range m.Topics {
		st := s.Topic(mt.Name)
		if st == nil || fmt.Sprint(st.Configs) != fmt.Sprint(mt.Configs) {
			t.Fatalf("snapshot topic %s: %+v; configs want %v", mt.Name, st, mt.Configs)
		}
		for _, mp := range mt.Partitions {
			sp := s.Partition(mt.Name, mp.Partition)
			if sp.Leader != mp.Leader || sp.LeaderEpoch != mp.LeaderEpoch || !slices.Equal(sp.ISR, mp.ISR) || !slices.Equal(sp.Replicas, mp.Replicas) {
				t.Fatalf("snapshot %s-%d %+v; metadata %+v", mt.Name, mp.Partition, sp, mp)
			}
			if len(sp.ReplicaLogs) != len(mp.Replicas) {
				t.Fatalf("snapshot %s-%d has replica logs %+v", mt.Name, mp.Partition, sp.ReplicaLogs)
			}
		}
	}
}

// TestConcurrentUse runs brokers' heartbeats and proposals, the lab's ticks
// and the UI's reads at once; run it with -race.
func TestConcurrentUse(t *testing.T) {
	l := newLab(t)
	l.start(1, 2, 3)
	l.create("t", 6, 3, nil)
	epochs := map[int32]int64{1: l.epochs[1], 2: l.epochs[2], 3: l.epochs[3]}
	var wg sync.WaitGroup
	for id := int32(1); id <= 3; id++ {
		wg.Go(func() {
			for range 30 {
				l.c.Heartbeat(id, epochs[id])
				m := l.c.Metadata()
				for _, p := range m.Topic("t").Partitions {
					if p.Leader == id {
						l.c.AlterPartition("t", p.Partition, id, epochs[id], replication.AlterPartitionRequest{
							BrokerID: id, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, NewISR: []int32{id}})
					}
				}
			}
		})
	}
	wg.Go(func() {
		for i := range 30 {
			l.clk.Step(100 * time.Millisecond)
			l.c.Tick()
			if i == 10 {
				l.c.FenceBroker(2)
			}
		}
	})
	wg.Go(func() {
		for range 30 {
			l.c.MetadataVersion()
			l.c.Topic("t")
		}
	})
	wg.Wait()
	for _, p := range l.meta().Topic("t").Partitions {
		if err := p.check(); err != nil {
			t.Fatalf("partition %d: %v", p.Partition, err)
		}
	}
}

// recorder keeps the levels of the log records it gets.
type recorder struct {
	mu     sync.Mutex
	levels []slog.Level
	msgs   []string
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	r.levels = append(r.levels, rec.Level)
	r.msgs = append(r.msgs, rec.Message)
	r.mu.Unlock()
	return nil
}
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorder) WithGroup(string) slog.Handler      { return r }

func TestOpenCreatesDirAndLogsQuietly(t *testing.T) {
	rec := &recorder{}
	dir := filepath.Join(t.TempDir(), "data", "meta")
	c, err := Open(dir, Options{Logger: slog.New(rec)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RegisterBroker(1, "a"); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.msgs) == 0 {
		t.Fatal("badger's log lines did not reach the slog logger")
	}
	for i, lv := range rec.levels {
		if lv > slog.LevelDebug {
			t.Errorf("log line at %v on a normal run: %s", lv, rec.msgs[i])
		}
		if !strings.HasPrefix(rec.msgs[i], "badger: ") {
			t.Errorf("unprefixed log line %q", rec.msgs[i])
		}
	}
}

func TestLargestTopic(t *testing.T) {
	l := newLab(t)
	l.start(1, 2, 3)
	tp := l.create("big", MaxPartitions, 3, nil)
	if len(tp.Partitions) != MaxPartitions {
		t.Fatalf("%d partitions", len(tp.Partitions))
	}
	l.c.FenceBroker(1) // one change touching every partition
	l.reopen()
	if tp, _ := l.c.Topic("big"); tp.Partitions[999].Leader != 2 || !slices.Equal(tp.Partitions[999].ISR, []int32{2, 3}) {
		t.Fatalf("partition 999 after fencing and reopen: %+v", tp.Partitions[999])
	}
	if err := l.c.DeleteTopic("big"); err != nil {
		t.Fatal(err)
	}
	l.reopen()
	if m := l.c.Metadata(); len(m.Topics) != 0 {
		t.Fatalf("topics left: %d", len(m.Topics))
	}
}

// TestLabRestartKeepsLeaders: after the whole lab restarts, each broker's
// first registration is a plain one (fenced until its heartbeat), so no
// leadership moves and no leader epoch changes on a fresh start.
func TestLabRestartKeepsLeaders(t *testing.T) {
	l := newLab(t)
	l.start(1, 2, 3)
	l.create("t", 3, 3, nil)
	l.reopen()
	l.start(1, 2, 3)
	for p := int32(0); p < 3; p++ {
		l.want("t", p, p+1, []int32{p + 1, (p+1)%3 + 1, (p+2)%3 + 1}, 0, 0)
	}
}
