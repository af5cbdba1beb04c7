package panel

import (
	"strings"
	"testing"

	"tidemark/events"
)

func snapshot(seq uint64) *events.Snapshot {
	return &events.Snapshot{
		Seq:        seq,
		Controller: 1,
		Brokers: []events.Broker{
			{ID: 1, State: events.BrokerUp, Listener: "127.0.0.1:9092"},
			{ID: 2, State: events.BrokerCrashed, Listener: "127.0.0.1:9093"},
		},
		Topics: []events.Topic{{Name: "demo", Partitions: []events.Partition{{
			Leader: 1, Replicas: []int32{1, 2}, ISR: []int32{1},
			ReplicaLogs: []events.Replica{{Broker: 1}, {Broker: 2}},
		}}}},
	}
}

func TestHandle(t *testing.T) {
	var s State
	if s.Status() != "connecting" {
		t.Fatalf("initial status %q", s.Status())
	}
	if !s.Handle(events.Message{Type: events.MessageSnapshot, Snapshot: snapshot(5)}) || s.Status() != "live" {
		t.Fatal("snapshot did not make the panel live")
	}
	changed := s.Handle(events.Message{Type: events.MessageEvents, Events: []events.Event{
		{Seq: 4, Kind: events.KindHW, Broker: 1, Topic: "demo", Offsets: &events.Offsets{HW: 99}}, // in the snapshot already
		{Seq: 6, Kind: events.KindHW, Broker: 1, Topic: "demo", Offsets: &events.Offsets{HW: 3}},
	}})
	if !changed || len(s.Recent) != 1 || s.Snap.Seq != 6 || s.Snap.Topics[0].Partitions[0].ReplicaLogs[0].HW != 3 {
		t.Fatalf("after events: changed %v recent %d seq %d", changed, len(s.Recent), s.Snap.Seq)
	}
	if s.Handle(events.Message{Type: events.MessageEvents, Events: []events.Event{{Seq: 6}}}) {
		t.Fatal("duplicate event reported a change")
	}
	if s.Handle(events.Message{Type: "bogus"}) || s.Handle(events.Message{Type: events.MessageSnapshot}) {
		t.Fatal("bad message reported a change")
	}
	for i := range MaxRecent + 5 {
		s.Handle(events.Message{Type: events.MessageEvents, Events: []events.Event{{Seq: uint64(7 + i), Kind: events.KindClock}}})
	}
	if len(s.Recent) != MaxRecent || s.Recent[len(s.Recent)-1].Seq != uint64(6+MaxRecent+5) {
		t.Fatalf("recent = %d, last %d", len(s.Recent), s.Recent[len(s.Recent)-1].Seq)
	}
	s.Disconnected()
	if s.Status() != "connecting" {
		t.Fatal("still live after disconnect")
	}
	s.Handle(events.Message{Type: events.MessageSnapshot, Snapshot: snapshot(100)})
	if s.Snapshots != 2 || s.Snap.Seq != 100 {
		t.Fatalf("fresh snapshot: %d snapshots, seq %d", s.Snapshots, s.Snap.Seq)
	}
}

func TestRenderEscapesAndMarksNew(t *testing.T) {
	var s State
	snap := snapshot(0)
	snap.Brokers[0].Listener = `<script>alert(1)</script>`
	s.Handle(events.Message{Type: events.MessageSnapshot, Snapshot: snap})
	s.Handle(events.Message{Type: events.MessageEvents, Events: []events.Event{
		{Seq: 1, Kind: events.KindConfig, Topic: "demo", Config: &events.ConfigChange{Key: "min.insync.replicas", Value: "2"}},
		{Seq: 2, Kind: events.KindProduceError, Topic: "demo", Error: "NOT_ENOUGH_REPLICAS", Acks: events.AcksAll, Message: `<b>x</b>`},
	}})
	brokers := s.RenderBrokers()
	if strings.Contains(brokers, "<script>") || !strings.Contains(brokers, "&lt;script&gt;") {
		t.Fatalf("listener not escaped: %s", brokers)
	}
	for _, want := range []string{"broker 1", "controller", "leader of 1", "state-crashed", "✕"} {
		if !strings.Contains(brokers, want) {
			t.Errorf("brokers lack %q: %s", want, brokers)
		}
	}
	list := s.RenderEvents(1)
	first, second := strings.Index(list, `data-seq="2"`), strings.Index(list, `data-seq="1"`)
	if first < 0 || second < 0 || first > second {
		t.Fatalf("events not newest first: %s", list)
	}
	if !strings.Contains(list, `class="k-produce-error new"`) || strings.Contains(list, `class="k-config new"`) {
		t.Errorf("new marking wrong: %s", list)
	}
	if strings.Contains(list, "<b>") || !strings.Contains(list, "NOT_ENOUGH_REPLICAS (acks=all)") {
		t.Errorf("event list: %s", list)
	}
	if lanes := s.RenderLanes(); !strings.Contains(lanes, "demo-0") || !strings.Contains(lanes, "ISR [1]") ||
		!strings.Contains(lanes, "broker 1 ★ · LEO 0") || !strings.Contains(lanes, `class="replica osr"`) {
		t.Errorf("lanes: %s", lanes)
	}
}

func TestDescribeEveryKind(t *testing.T) {
	evs := []events.Event{
		{Kind: events.KindAppend, Broker: 1, Topic: "t", Offsets: &events.Offsets{Base: 0, Last: 1, LEO: 2}},
		{Kind: events.KindFetch, Broker: 2, Topic: "t", Offsets: &events.Offsets{Base: 2, HW: 2}},
		{Kind: events.KindHW, Broker: 1, Topic: "t", Offsets: &events.Offsets{HW: 2}},
		{Kind: events.KindLEO, Broker: 1, Topic: "t", Offsets: &events.Offsets{LEO: 2}},
		{Kind: events.KindISR, Topic: "t", ISR: []int32{1, 2}},
		{Kind: events.KindElection, Topic: "t", Leader: &events.Leadership{Leader: events.NoBroker, Unclean: true}},
		{Kind: events.KindEpoch, Broker: 1, Topic: "t", Leader: &events.Leadership{LeaderEpoch: 3, StartOffset: 7}},
		{Kind: events.KindAck, Topic: "t", Acks: events.AcksLeader, Offsets: &events.Offsets{}},
		{Kind: events.KindProduceError, Topic: "t", Error: "NOT_LEADER_OR_FOLLOWER"},
		{Kind: events.KindTruncation, Broker: 3, Topic: "t", Offsets: &events.Offsets{LEO: 1}, Truncated: make([]events.TruncatedRecord, 2)},
		{Kind: events.KindFault, Broker: 1, Fault: &events.Fault{Kind: events.FaultPowerLoss}},
		{Kind: events.KindFault, Fault: &events.Fault{Kind: events.FaultCut, From: 1, To: 2, OneWay: true}},
		{Kind: events.KindFault, Fault: &events.Fault{Kind: events.FaultHeal}},
		{Kind: events.KindConfig, Config: &events.ConfigChange{Key: "truncation.rule"}},
		{Kind: events.KindClock, Clock: &events.ClockChange{Action: events.ClockStep, StepMs: 100}},
		{Kind: events.KindBroker, Broker: 2, BrokerState: events.BrokerFenced},
		{Kind: events.KindTopic, Topic: "t"},
		{Kind: "future-kind"},
		// Missing payloads must not panic.
		{Kind: events.KindAppend}, {Kind: events.KindElection}, {Kind: events.KindFault}, {Kind: events.KindConfig}, {Kind: events.KindClock},
	}
	want := []string{
		"broker 1 appended to t-0 offsets 0–1 (LEO 2)",
		"broker 2 fetched t-0 from offset 2 (leader HW 2)",
		"broker 1: t-0 HW → 2",
		"broker 1: t-0 LEO → 2",
		"t-0 ISR → [1,2]",
		"t-0 leader → no broker, epoch 0 (unclean)",
		"broker 1: t-0 epoch 3 starts at offset 7",
		"produce to t-0 acked (acks=1) offsets 0–0",
		"produce to t-0 failed: NOT_LEADER_OR_FOLLOWER (acks=)",
		"broker 3 truncated t-0 to offset 1, removed 2 record(s)",
		"power-loss broker 1",
		"cut link 1 → 2",
		"healed all links",
		"lab: truncation.rule unset",
		"clock stepped 100 ms",
		"broker 2 is fenced",
		"topic t deleted",
		"future-kind",
	}
	for i, e := range evs {
		got := Describe(e)
		if i < len(want) && got != want[i] {
			t.Errorf("Describe(%s) = %q, want %q", e.Kind, got, want[i])
		}
	}
}
