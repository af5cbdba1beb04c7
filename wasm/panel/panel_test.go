package panel

import (
	"fmt"
	"strings"
	"testing"

	"tidemark/events"
	"tidemark/i18n"
)

var en = Catalog(i18n.Catalog(i18n.English))

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

func hwEvent(seq uint64, hw int64) events.Event {
	return events.Event{Seq: seq, Kind: events.KindHW, Broker: 1, Topic: "demo", Offsets: &events.Offsets{HW: hw}}
}

func TestHandle(t *testing.T) {
	s := NewState()
	if s.Status() != "connecting" {
		t.Fatalf("initial status %q", s.Status())
	}
	if !s.Handle(events.Message{Type: events.MessageSnapshot, Snapshot: snapshot(5)}) || s.Status() != "live" {
		t.Fatal("snapshot did not make the panel live")
	}
	changed := s.Handle(events.Message{Type: events.MessageEvents, Events: []events.Event{hwEvent(4, 99), hwEvent(6, 3)}})
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
	if s.Snapshots != 2 || s.Snap.Seq != 100 || len(s.Hist) != 0 {
		t.Fatalf("fresh snapshot: %d snapshots, seq %d, history %d", s.Snapshots, s.Snap.Seq, len(s.Hist))
	}
}

// TestTimeline steps back and forth through the history and sees each
// past state, while live events keep arriving, then returns to live.
func TestTimeline(t *testing.T) {
	s := NewState()
	s.Handle(events.Message{Type: events.MessageSnapshot, Snapshot: snapshot(5)})
	for i := uint64(6); i <= 10; i++ {
		s.Handle(events.Message{Type: events.MessageEvents, Events: []events.Event{hwEvent(i, int64(i))}})
	}
	hw := func() int64 { return s.View().Topics[0].Partitions[0].ReplicaLogs[0].HW }
	if s.ViewSeq() != 10 || hw() != 10 {
		t.Fatalf("live view seq %d hw %d", s.ViewSeq(), hw())
	}
	s.Back()
	if s.Following || s.ViewSeq() != 9 || hw() != 9 {
		t.Fatalf("one back: following %v seq %d hw %d", s.Following, s.ViewSeq(), hw())
	}
	s.Seek(0)
	if s.ViewSeq() != 5 || hw() != 0 {
		t.Fatalf("start: seq %d hw %d", s.ViewSeq(), hw())
	}
	s.Back() // stays at the start
	if pos, end := s.Position(); pos != 0 || end != 5 {
		t.Fatalf("position %d/%d", pos, end)
	}
	if !strings.Contains(s.TimelineText(en), "event #5, 5 event(s) before live") {
		t.Fatalf("timeline text %q", s.TimelineText(en))
	}
	// New events do not move what is shown, and the live state has them.
	s.Handle(events.Message{Type: events.MessageEvents, Events: []events.Event{hwEvent(11, 11)}})
	if s.ViewSeq() != 5 || s.Snap.Seq != 11 {
		t.Fatalf("past view moved: %d (live %d)", s.ViewSeq(), s.Snap.Seq)
	}
	s.Forward()
	if s.ViewSeq() != 6 || hw() != 6 {
		t.Fatalf("forward: seq %d hw %d", s.ViewSeq(), hw())
	}
	s.Seek(5)
	for range 2 {
		s.Forward()
	}
	if !s.Following || s.ViewSeq() != 11 {
		t.Fatalf("past the end: following %v seq %d", s.Following, s.ViewSeq())
	}
	// The past views never changed the live state.
	if s.Snap.Topics[0].Partitions[0].ReplicaLogs[0].HW != 11 {
		t.Fatal("live state changed by the timeline")
	}
}

// TestHistoryBounded: beyond MaxHistory events the oldest are dropped a
// checkpoint's stretch at a time, and a past position follows its event.
func TestHistoryBounded(t *testing.T) {
	s := NewState()
	s.Handle(events.Message{Type: events.MessageSnapshot, Snapshot: snapshot(0)})
	for i := uint64(1); i <= MaxHistory; i++ {
		s.Handle(events.Message{Type: events.MessageEvents, Events: []events.Event{hwEvent(i, int64(i))}})
	}
	s.Seek(2000) // the state after event 2000
	for i := uint64(MaxHistory + 1); i <= MaxHistory+MaxHistory/4+1; i++ {
		s.Handle(events.Message{Type: events.MessageEvents, Events: []events.Event{hwEvent(i, int64(i))}})
	}
	if n := len(s.Hist); n < MaxHistory || n > MaxHistory+CheckpointEvery || s.checks[0].snap.Seq != s.Hist[0].Seq-1 {
		t.Fatalf("history %d, first checkpoint seq %d, first event %d", n, s.checks[0].snap.Seq, s.Hist[0].Seq)
	}
	if s.ViewSeq() != 2000 || s.View().Topics[0].Partitions[0].ReplicaLogs[0].HW != 2000 {
		t.Fatalf("past view after dropping: seq %d", s.ViewSeq())
	}
}

// TestTimelineCheckpoints: every past position shows the state after its
// event, whichever way the timeline got there (seeking back across
// checkpoints, stepping forward from the state shown).
func TestTimelineCheckpoints(t *testing.T) {
	s := NewState()
	s.Handle(events.Message{Type: events.MessageSnapshot, Snapshot: snapshot(0)})
	const n = 3*CheckpointEvery + 7
	for i := uint64(1); i <= n; i++ {
		s.Handle(events.Message{Type: events.MessageEvents, Events: []events.Event{hwEvent(i, int64(i))}})
	}
	if len(s.checks) != 4 {
		t.Fatalf("%d checkpoints, want 4", len(s.checks))
	}
	hw := func() int64 { return s.View().Topics[0].Partitions[0].ReplicaLogs[0].HW }
	for _, pos := range []int{n - 1, 1200, 1499, 1500, 1501, 3, 0, 999, 1000, 1001, 1002} {
		s.Seek(pos)
		if s.ViewSeq() != uint64(pos) || hw() != int64(pos) {
			t.Fatalf("seek %d: seq %d hw %d", pos, s.ViewSeq(), hw())
		}
	}
	for range 5 {
		s.Forward()
	}
	if s.ViewSeq() != 1007 || hw() != 1007 {
		t.Fatalf("forward to 1007: seq %d hw %d", s.ViewSeq(), hw())
	}
	if s.Snap.Topics[0].Partitions[0].ReplicaLogs[0].HW != n || s.checks[0].snap.Topics[0].Partitions[0].ReplicaLogs[0].HW != 0 {
		t.Fatal("the timeline changed the live state or a checkpoint")
	}
}

func TestRenderEscapesAndMarksNew(t *testing.T) {
	s := NewState()
	snap := snapshot(0)
	snap.Brokers[0].Listener = `<script>alert(1)</script>`
	s.Handle(events.Message{Type: events.MessageSnapshot, Snapshot: snap})
	s.Handle(events.Message{Type: events.MessageEvents, Events: []events.Event{
		{Seq: 1, Kind: events.KindConfig, Topic: "demo", Config: &events.ConfigChange{Key: "min.insync.replicas", Value: "2"}},
		{Seq: 2, Kind: events.KindProduceError, Topic: "demo", Error: "NOT_ENOUGH_REPLICAS", Acks: events.AcksAll, Message: `<b>x</b>`},
	}})
	brokers := RenderBrokers(s.View(), en)
	if strings.Contains(brokers, "<script>") || !strings.Contains(brokers, "&lt;script&gt;") {
		t.Fatalf("listener not escaped: %s", brokers)
	}
	for _, want := range []string{"broker 1", "controller", "leader of 1", "state-crashed", "✕"} {
		if !strings.Contains(brokers, want) {
			t.Errorf("brokers lack %q: %s", want, brokers)
		}
	}
	list := s.RenderEvents(1, 1, en)
	if !strings.Contains(list, `class="k-produce-error new" data-seq="2"`) || !strings.Contains(list, `class="k-config cursor" data-seq="1"`) {
		t.Fatalf("marks: %s", list)
	}
	if strings.Contains(list, "<b>") || !strings.Contains(list, "NOT_ENOUGH_REPLICAS") || !strings.Contains(list, "demo: min.insync.replicas = 2") {
		t.Fatalf("list: %s", list)
	}
}

// TestRenderLanes: blocks at their offsets with their epochs, committed or
// not by the partition's HW, truncated records struck out where they were,
// markers, and animation classes only when Motion asks.
func TestShortValue(t *testing.T) {
	for in, want := range map[string]string{"": "", "abcde": "abcde", "abcdef": "abcd…", "中文中文中文": "中文中文…", "中文中文中": "中文中文中"} {
		if got := shortValue(in); got != want {
			t.Errorf("shortValue(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRenderLanes(t *testing.T) {
	snap := snapshot(0)
	p := &snap.Topics[0].Partitions[0]
	p.LeaderEpoch = 1
	p.ReplicaLogs[0] = events.Replica{Broker: 1, LEO: 3, HW: 2, Records: []events.Record{{Offset: 0}, {Offset: 1, Value: "hello world"}, {Offset: 2, LeaderEpoch: 1, Value: "<b>"}}}
	p.ReplicaLogs[1] = events.Replica{Broker: 2, LEO: 2, HW: 2, Records: []events.Record{{Offset: 0}, {Offset: 1}},
		Truncated: []events.TruncatedRecord{{Offset: 2, LeaderEpoch: 0, Digest: "00000000", Value: "lost",
			Reason: "truncate-to (rule high-watermark): follower restarted"}}}
	out := RenderLanes(snap, Motion{}, en, "", -1)
	for _, want := range []string{
		`<g class="replica lane leader" data-topic="demo" data-partition="0" data-broker="1" data-leo="3" data-hw="2"`,
		`<g class="replica lane osr down" data-topic="demo" data-partition="0" data-broker="2" data-leo="2" data-hw="2"`, "✕ crashed",
		// The accessible list: each record, its value shortened and
		// escaped, committed or not; truncated records and why.
		`<div class="lane-recs" role="group" data-topic="demo" data-partition="0" data-broker="1"`,
		`<span role="img" class="rec ep0 committed" data-offset="1" data-val="hell…" aria-label="`,
		`<span role="img" class="rec ep1 uncommitted" data-offset="2" data-val="&lt;b&gt;"`,
		`<span role="img" class="ghost" data-offset="2" data-val="lost"`, `class="marker hw" data-offset="2" aria-label="HW 2"`, `class="marker leo" data-offset="3" aria-label="LEO 3"`,
		"follower restarted", "✕ truncated (high-watermark rule)", `<canvas class="lane-canvas" aria-hidden="true">`,
		`class="marker hw"`, `class="marker leo"`, "broker 1 ★",
		// OSR is labelled folklore where a learner meets it (issue 30).
		`<text class="osr-badge" x="110" y="26"><title>OSR (folklore): a replica outside the ISR.`,
		`data-leader="1" data-epoch="1" data-hw="2"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("lanes lack %q", want)
		}
	}
	if other := RenderLanes(snap, Motion{}, en, "demo", 1); other != "" {
		t.Errorf("partition filter let through %s", other)
	}
	if strings.Contains(out, " new") || strings.Contains(out, "fetch-arrow") {
		t.Error("animated without motion")
	}
	m := MotionOf([]events.Event{
		{Kind: events.KindAppend, Topic: "demo", Broker: 1, Offsets: &events.Offsets{Base: 2, Last: 2, LEO: 3}},
		{Kind: events.KindFetch, Topic: "demo", Broker: 2, Offsets: &events.Offsets{Base: 2}},
		{Kind: events.KindTruncation, Topic: "demo", Broker: 2, Offsets: &events.Offsets{LEO: 2}},
		{Kind: events.KindHW, Topic: "demo", Broker: 1, Offsets: &events.Offsets{HW: 2}},
		{Kind: events.KindElection, Topic: "demo", Leader: &events.Leadership{Leader: 1, LeaderEpoch: 1}},
	})
	out = RenderLanes(snap, m, en, "demo", 0)
	for _, want := range []string{`class="fetch-arrow"`, `class="marker hw moved"`, `class="lane-fig elected"`} {
		if !strings.Contains(out, want) {
			t.Errorf("animated lanes lack %q", want)
		}
	}
}

// TestDescribeEveryKind: every kind reads as a sentence in every language,
// with no fmt complaint (a verb without its argument or an extra one).
func TestDescribeEveryKind(t *testing.T) {
	evs := []events.Event{
		{Kind: events.KindAppend, Offsets: &events.Offsets{}}, {Kind: events.KindFetch}, {Kind: events.KindHW}, {Kind: events.KindLEO},
		{Kind: events.KindISR, ISR: []int32{1}}, {Kind: events.KindElection, Leader: &events.Leadership{Leader: -1, Unclean: true}},
		{Kind: events.KindEpoch, Leader: &events.Leadership{}}, {Kind: events.KindAck, Acks: "all"}, {Kind: events.KindProduceError},
		{Kind: events.KindTruncation}, {Kind: events.KindFault, Fault: &events.Fault{Kind: events.FaultCrash}},
		{Kind: events.KindFault, Fault: &events.Fault{Kind: events.FaultPowerLoss}}, {Kind: events.KindFault, Fault: &events.Fault{Kind: events.FaultRestart}},
		{Kind: events.KindFault, Fault: &events.Fault{Kind: events.FaultCut, OneWay: true}}, {Kind: events.KindFault, Fault: &events.Fault{Kind: events.FaultCut}},
		{Kind: events.KindFault, Fault: &events.Fault{Kind: events.FaultHeal}}, {Kind: events.KindConfig, Config: &events.ConfigChange{Key: "k"}},
		{Kind: events.KindConfig, Config: &events.ConfigChange{Key: "k", Value: "v"}},
		{Kind: events.KindClock, Clock: &events.ClockChange{Action: events.ClockPause}}, {Kind: events.KindClock, Clock: &events.ClockChange{Action: events.ClockResume}},
		{Kind: events.KindClock, Clock: &events.ClockChange{Action: events.ClockStep, StepMs: 5}},
		{Kind: events.KindClock, Clock: &events.ClockChange{Action: events.ClockRate, Rate: 0.25}},
		{Kind: events.KindBroker, BrokerState: events.BrokerFenced}, {Kind: events.KindTopic, TopicCreated: &events.Topic{Name: "t"}}, {Kind: events.KindTopic},
	}
	for _, l := range i18n.Languages() {
		c := Catalog(i18n.Catalog(l))
		for _, e := range evs {
			d := Describe(e, c)
			if d == "" || strings.Contains(d, "%!") || strings.Contains(d, "panel.") {
				t.Errorf("%s: %s/%v reads %q", l, e.Kind, e.Fault, d)
			}
			if k := c.T("panel.kind." + string(e.Kind)); strings.HasPrefix(k, "panel.") {
				t.Errorf("%s: no word for kind %s", l, e.Kind)
			}
		}
	}
}

// TestDescribeTranslatesMessages: an event's message reads in the panel's
// language, its words and Kafka's error description too (the code kept);
// an event without a key (an older server's) shows its English Message.
func TestDescribeTranslatesMessages(t *testing.T) {
	hans := Catalog(i18n.Catalog(i18n.SimplifiedChinese))
	e := events.Event{Kind: events.KindProduceError, Topic: "demo", Error: "NOT_ENOUGH_REPLICAS", Acks: events.AcksAll,
		Message:    "NOT_ENOUGH_REPLICAS: Not appended: the ISR is smaller than min.insync.replicas.",
		MessageKey: "event.produce-error", MessageArgs: []string{"NOT_ENOUGH_REPLICAS", "errors.NOT_ENOUGH_REPLICAS"}}
	if d := Describe(e, hans); !strings.HasSuffix(d, " — NOT_ENOUGH_REPLICAS：未追加：ISR 小于 min.insync.replicas。") {
		t.Errorf("zh-Hans: %q", d)
	}
	if d := Describe(e, en); !strings.HasSuffix(d, " — "+e.Message) {
		t.Errorf("en: %q", d)
	}
	cut := events.Event{Kind: events.KindFault, Fault: &events.Fault{Kind: events.FaultCut, From: 0, To: 3},
		MessageKey: "event.link.cut", MessageArgs: []string{"event.word.node.controller", "event.word.node.broker:3", "event.word.dir.both"}}
	if got := EventMessage(cut, Catalog(i18n.Catalog(i18n.TraditionalChinese))); got != "鏈路 控制器 → broker 3 已切斷，雙向" {
		t.Errorf("zh-Hant: %q", got)
	}
	old := events.Event{Kind: events.KindFault, Message: "every link restored"}
	if got := EventMessage(old, hans); got != old.Message {
		t.Errorf("an event without a key: %q", got)
	}
	tr := events.TruncatedRecord{Reason: "r", ReasonKey: "event.truncation",
		ReasonArgs: []string{"event.word.cause.diverging-epoch", "leader-epoch", "event.word.trunc.unknown-epoch:2:3:4"}}
	if got := TruncatedReason(tr, hans); got != "epoch 分歧（规则 leader-epoch）：leader 2 说 epoch 3 结束于 4：我们不知道这个 epoch" {
		t.Errorf("truncated reason %q", got)
	}
}

// TestDescribeTopicCreatedOnce: a created topic's line is the controller's
// message alone (it names the topic, its partitions and replication
// factor), not the panel's words and then the same again; without a
// message (an older server's event) the panel's words.
func TestDescribeTopicCreatedOnce(t *testing.T) {
	e := events.Event{Kind: events.KindTopic, Topic: "lab", TopicCreated: &events.Topic{Name: "lab", Partitions: []events.Partition{{}}},
		MessageKey: "event.topic.created.one", MessageArgs: []string{"lab", "1", "3"}}
	for _, l := range i18n.Languages() {
		c := Catalog(i18n.Catalog(l))
		if d, m := Describe(e, c), EventMessage(e, c); d != m || strings.Count(d, "lab") != 1 {
			t.Errorf("%s: %q, want the message alone, %q", l, d, m)
		}
	}
	if d := Describe(events.Event{Kind: events.KindTopic, TopicCreated: e.TopicCreated}, en); d != "topic lab created with 1 partition(s)" {
		t.Errorf("without a message: %q", d)
	}
}

// TestISRWrittenAsLessons: the panel writes an ISR as the lesson texts and
// lesson lanes do (fmt.Sprint of the ids, views/lesson.templ), in the
// event list and the lanes' meta line.
func TestISRWrittenAsLessons(t *testing.T) {
	for _, isr := range [][]int32{nil, {1}, {1, 2, 3}, {10, 2}} {
		if got, want := ids(isr), fmt.Sprint(isr); got != want {
			t.Errorf("ids(%v) = %q, want %q", isr, got, want)
		}
	}
	if d := Describe(events.Event{Kind: events.KindISR, Topic: "lab", ISR: []int32{1, 2, 3}}, en); !strings.HasSuffix(d, "ISR → [1 2 3]") {
		t.Errorf("ISR event: %q", d)
	}
}
