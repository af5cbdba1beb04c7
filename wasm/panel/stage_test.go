package panel

import (
	"math"
	"strings"
	"testing"
	"time"

	"tidemark/events"
)

func stageSnap() *events.Snapshot {
	return &events.Snapshot{Seq: 1, Controller: 0,
		Brokers: []events.Broker{{ID: 1, State: events.BrokerUp}, {ID: 2, State: events.BrokerCrashed}, {ID: 3, State: events.BrokerUp}},
		Cuts:    []events.Fault{{Kind: events.FaultCut, From: 1, To: 2, OneWay: true}, {Kind: events.FaultCut, From: 3, To: 0}}}
}

// TestStageLinks checks each link direction is drawn apart: a one-way cut
// marks only its direction, a two-way cut both.
func TestStageLinks(t *testing.T) {
	svg := StageLinksSVG(stageSnap(), Catalog{})
	for id, want := range map[string]string{"1-2": "cut", "2-1": "up", "3-0": "cut", "0-3": "cut", "0-1": "up"} {
		if !strings.Contains(svg, `data-testid="link-`+id+`" data-from="`+id[:1]+`" data-to="`+id[2:]+`" data-state="`+want+`"`) {
			t.Errorf("link %s not drawn %s", id, want)
		}
	}
	if n := strings.Count(svg, `data-testid="link-`); n != 12 {
		t.Errorf("%d link directions, want 12", n)
	}
	nodes := StageNodesHTML(stageSnap(), Catalog{}, "/", true)
	if !strings.Contains(nodes, `data-testid="node-2" data-broker="2" data-state="crashed"`) || !strings.Contains(nodes, `data-testid="node-0"`) {
		t.Errorf("nodes: %s", nodes)
	}
}

// TestFlights checks the messages put in flight carry what the stage
// labels them with, and that the timeline steps over them.
func TestFlights(t *testing.T) {
	c := Catalog{"stage.msg.fetch": "fetch @%d e%d", "stage.msg.fetched": "%d rec HW %d"}
	evs := []events.Event{
		{Seq: 2, Kind: events.KindFetchRequest, Broker: 3, Wire: &events.Wire{From: 3, To: 1, FetchOffset: 5, LastFetchedEpoch: 2}},
		{Seq: 3, Kind: events.KindHW, Broker: 1},
		{Seq: 4, Kind: events.KindFetchResponse, Broker: 3, Wire: &events.Wire{From: 1, To: 3, HW: 5, Records: 2, Lost: true}},
		{Seq: 5, Kind: events.KindFetchRequest, Broker: 3, Wire: &events.Wire{From: 3, To: 9}}, // no node 9: not drawn
	}
	fs := Flights(stageSnap(), evs, c, 10)
	if len(fs) != 2 || fs[0].Label != "fetch @5 e2" || fs[1].Label != "2 rec HW 5" || !fs[1].Lost {
		t.Fatalf("flights %+v", fs)
	}
	if fs := Flights(stageSnap(), evs, c, 1); len(fs) != 1 || fs[0].Seq != 4 {
		t.Errorf("max 1 kept %+v, want the newest", fs)
	}

	s := NewState()
	s.Handle(events.Message{Type: events.MessageSnapshot, Snapshot: &events.Snapshot{Seq: 1}})
	s.Handle(events.Message{Type: events.MessageEvents, Events: evs})
	if len(s.Recent) != 1 {
		t.Errorf("%d events listed, want only the HW change", len(s.Recent))
	}
	s.Back() // from live: before the newest change, over the messages
	if s.Pos != 0 {
		t.Errorf("Back: pos %d, want 0 (before the HW change)", s.Pos)
	}
	s.Forward() // after the HW change, over the fetch request
	if s.Following || s.Pos != 2 {
		t.Errorf("Forward: pos %d following %v, want 2", s.Pos, s.Following)
	}
}

// TestFlightLabelSides: a message's label is on its right-hand side, where
// its direction of the link is drawn, so on every link the labels of a
// fetch and of its response pass on opposite sides, not over each other.
func TestFlightLabelSides(t *testing.T) {
	v := stageSnap()
	pos := stageLayout(v)
	for _, a := range []int32{0, 1, 2, 3} {
		for _, b := range []int32{1, 2, 3} {
			if a == b {
				continue
			}
			there := Flights(v, []events.Event{{Kind: events.KindFetchRequest, Wire: &events.Wire{From: a, To: b}}}, Catalog{}, 1)
			back := Flights(v, []events.Event{{Kind: events.KindFetchResponse, Wire: &events.Wire{From: b, To: a}}}, Catalog{}, 1)
			if len(there) != 1 || len(back) != 1 {
				t.Fatalf("%d↔%d: flights %+v %+v", a, b, there, back)
			}
			x, y, end := there[0].labelAt()
			if bx, by, bend := back[0].labelAt(); x == bx && y == by && end == bend {
				t.Errorf("%d↔%d: both labels at %d,%d", a, b, x, y)
			}
			// Rightwards the right-hand side is below the link.
			if p, q := pos[a], pos[b]; q.X-p.X > math.Abs(q.Y-p.Y) && y <= 0 {
				t.Errorf("%d→%d runs rightwards, label not below: at %d,%d", a, b, x, y)
			}
		}
	}
}

// TestFlightsAnyKind: a message kind without a shape and label of its own
// (Raft's, or one added later) is drawn as a pill labelled with its
// event's message in the page's language, or with its kind's name.
func TestFlightsAnyKind(t *testing.T) {
	c := Catalog{"stage.msg.raft.heartbeat": "Raft heartbeat t%s c%s"}
	evs := []events.Event{
		{Seq: 2, Kind: events.KindRaft, Broker: 1, Wire: &events.Wire{From: 1, To: 3},
			MessageKey: "stage.msg.raft.heartbeat", MessageArgs: []string{"2", "7"}},
		{Seq: 3, Kind: events.KindRaft, Broker: 3, Wire: &events.Wire{From: 3, To: 1}},
	}
	fs := Flights(stageSnap(), evs, c, 10)
	if len(fs) != 2 || fs[0].Label != "Raft heartbeat t2 c7" || fs[1].Label != "raft" {
		t.Fatalf("flights %+v", fs)
	}
	if h := fs[0].HTML(1600); !strings.Contains(h, "Raft heartbeat t2 c7") || ShapeOf(fs[0].Kind) != anyShape {
		t.Errorf("markup %s, shape %+v", h, ShapeOf(fs[0].Kind))
	}
}

// TestFly: a message in flight is one M op for the topology's canvas: its
// way in pixels, delay, duration and scale, flags, shape, colour, label,
// the label's place and its title; its item in the list names it for tests.
func TestFly(t *testing.T) {
	f := Flight{Seq: 7, Kind: events.KindFetchResponse, From: Point{X: 100, Y: 50}, To: Point{X: 300, Y: 50}, Label: "2 rec HW 5", Lost: true, Title: "t"}
	var p Painter
	p.Fly(&f, 1.5, 150, 1600, false)
	got := strings.ReplaceAll(string(p.Buf), "\x00", "|")
	if want := "M|0|150.0|75.0|450.0|75.0|150.0|1600.0|1.5|1|M0 -7 L7 0 L0 7 L-7 0 Z||--blue|2 rec HW 5|9|16|t|"; got != want {
		t.Errorf("op\n%s\nwant\n%s", got, want)
	}
	p.Buf = p.Buf[:0]
	f.Kind, f.Lost, f.From, f.To = events.KindAck, false, f.To, f.From
	p.Fly(&f, 1, 0, 400, true) // leftwards, reduced motion, a tick
	if got := strings.Split(string(p.Buf), "\x00"); got[9] != "6" || got[12] != "--green" || got[14] != "9" || got[15] != "-8" {
		t.Errorf("ack: %q", got)
	}
	if h := f.HTML(400); !strings.Contains(h, `data-testid="msg" data-kind="ack" data-seq="7" data-duration="400.0"`) || !strings.HasPrefix(h, "<g ") {
		t.Errorf("item %s", h)
	}
	for _, s := range shapes {
		if sh := Shape(s.kind); !strings.HasPrefix(sh, `<path d="`+s.shape.D) {
			t.Errorf("legend of %s: %s", s.kind, sh)
		}
	}
}

// TestClients: external clients' produces and fetches are listed newest
// first, one row per client, kind and partition; a consumer at the HW says
// it stopped there; the UI's producer is left out.
func TestClients(t *testing.T) {
	var cs Clients
	cs.Observe([]events.Event{
		{Seq: 1, Kind: events.KindProduceRequest, Broker: 1, Topic: "demo", Acks: events.AcksAll,
			Wire: &events.Wire{From: events.NoBroker, To: 1, Client: "rdkafka", Records: 3}},
		{Seq: 2, Kind: events.KindProduceRequest, Broker: 1, Topic: "demo", Wire: &events.Wire{Client: UIClient, Records: 1}},
		{Seq: 3, Kind: events.KindClientFetch, Broker: 1, Topic: "demo", Wire: &events.Wire{From: 1, To: events.NoBroker, Client: "kgo", FetchOffset: 1, HW: 3, Records: 2}},
		{Seq: 4, Kind: events.KindHW, Broker: 1, Topic: "demo", Offsets: &events.Offsets{HW: 3}},
		{Seq: 5, Kind: events.KindClientFetch, Broker: 1, Topic: "demo", Wire: &events.Wire{From: 1, To: events.NoBroker, Client: "kgo", FetchOffset: 3, HW: 3}},
	})
	rows := cs.Rows()
	if len(rows) != 2 || rows[0].Client != "kgo" || rows[0].Offset != 3 || rows[1].Client != "rdkafka" || rows[1].Records != 3 {
		t.Fatalf("rows %+v", rows)
	}
	out := cs.HTML(en)
	for _, want := range []string{"produced 3 records to demo-0, acks=all, to broker 1", "reads demo-0 at offset 3; HW 3; lag 0", "stopped at the HW", `class="consumer at-hw"`} {
		if !strings.Contains(out, want) {
			t.Errorf("clients lack %q: %s", want, out)
		}
	}
	// One record is singular.
	cs.Observe([]events.Event{{Seq: 6, Kind: events.KindProduceRequest, Broker: 1, Topic: "demo", Partition: 2, Acks: events.AcksAll,
		Wire: &events.Wire{From: events.NoBroker, To: 1, Client: "rdkafka", Records: 1}}})
	if out, want := cs.HTML(en), "produced 1 record to demo-2, acks=all, to broker 1"; !strings.Contains(out, want) {
		t.Errorf("clients lack %q: %s", want, out)
	}
	for range 20 {
		cs.Observe([]events.Event{{Kind: events.KindClientFetch, Topic: "t", Partition: int32(len(cs.Rows())), Wire: &events.Wire{Client: "c"}}})
	}
	if len(cs.Rows()) != MaxClientRows {
		t.Errorf("%d rows, want at most %d", len(cs.Rows()), MaxClientRows)
	}
}

// TestCharts: LEO and HW per replica, ISR size, the produce rate per
// second of lab time and the UI producer's acknowledgement latency per
// acks, each a chart with its data-testid.
func TestCharts(t *testing.T) {
	snap := stageSnap()
	snap.Topics = []events.Topic{{Name: "demo", Partitions: []events.Partition{{Leader: 1, ISR: []int32{1, 3},
		ReplicaLogs: []events.Replica{{Broker: 1, LEO: 2, HW: 1}, {Broker: 3, LEO: 1, HW: 1}}}}}}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var ch Charts
	ch.Observe(snap, []events.Event{
		{Seq: 1, Time: t0, Kind: events.KindProduceRequest, Acks: events.AcksAll, Topic: "demo", Wire: &events.Wire{Client: UIClient}},
		{Seq: 2, Time: t0.Add(10 * time.Millisecond), Kind: events.KindAppend, Broker: 1, Topic: "demo", Offsets: &events.Offsets{Base: 0, Last: 1}},
		{Seq: 3, Time: t0.Add(10 * time.Millisecond), Kind: events.KindAppend, Broker: 3, Topic: "demo", Offsets: &events.Offsets{Base: 0, Last: 0}},
		{Seq: 4, Time: t0.Add(25 * time.Millisecond), Kind: events.KindAck, Acks: events.AcksAll, Topic: "demo", Offsets: &events.Offsets{Base: 0, Last: 1}},
	})
	if len(ch.rate) != 1 || ch.rate[0].v != 2 {
		t.Errorf("rate %v, want 2 records in second 0 (the leader's appends only)", ch.rate)
	}
	if l := ch.lat[events.AcksAll]; len(l) != 1 || l[0].v != 25 {
		t.Errorf("latency %v, want 25 ms for acks=all", l)
	}
	snap.Topics[0].Partitions[0].ISR = []int32{1}
	ch.Observe(snap, []events.Event{{Seq: 5, Time: t0.Add(2 * time.Second), Kind: events.KindISR, Topic: "demo"}})
	if n := len(ch.isr); n != 2 || ch.isr[1].v != 1 {
		t.Errorf("ISR sizes %v", ch.isr)
	}
	out := ch.HTML(en)
	for _, want := range []string{`data-testid="chart-leo-hw"`, `data-testid="chart-isr"`, `data-testid="chart-rate"`, `data-testid="chart-latency"`,
		"demo-0", `class="c0 leo"`, "<polyline", "<circle", "acks=all"} {
		if !strings.Contains(out, want) {
			t.Errorf("charts lack %q", want)
		}
	}
	// Old samples leave the window.
	for i := range 100 {
		ch.Observe(snap, []events.Event{{Seq: uint64(10 + i), Time: t0.Add(time.Duration(3+i) * time.Second), Kind: events.KindHW, Topic: "demo"}})
	}
	if first := ch.isr[0].t; first < ch.now-ChartWindow.Seconds()-1 {
		t.Errorf("a sample from %.0f s kept at %.0f s", first, ch.now)
	}
}

// TestStageObserved: an observed cluster's stage draws its brokers (id 0
// among them) and their links only, names the broker that is its
// controller, and offers no fault menus: no lab controller, no producer.
func TestStageObserved(t *testing.T) {
	v := &events.Snapshot{Observed: true, Controller: 2,
		Brokers: []events.Broker{{ID: 0, State: events.BrokerUp}, {ID: 1, State: events.BrokerUp}, {ID: 2, State: events.BrokerUp}}}
	nodes := StageNodesHTML(v, en, "/", true)
	if n := strings.Count(nodes, `data-testid="node-`); n != 3 || strings.Contains(nodes, "node-client") || strings.Contains(nodes, `class="node controller"`) {
		t.Errorf("%d nodes, want the 3 brokers only: %s", n, nodes)
	}
	if strings.Contains(nodes, "<details") || strings.Contains(nodes, "<form") {
		t.Errorf("fault menus on an observed cluster: %s", nodes)
	}
	if !strings.Contains(nodes, `data-testid="node-0" data-broker="0"`) {
		t.Errorf("broker 0 not drawn as a broker: %s", nodes)
	}
	for _, nv := range StageNodes(v, en) {
		if want := nv.ID == 2; strings.Contains(nv.Role, en.T("panel.controller")) != want {
			t.Errorf("broker %d role %q", nv.ID, nv.Role)
		}
	}
	svg := StageLinksSVG(v, en)
	if n := strings.Count(svg, `data-testid="link-`); n != 6 {
		t.Errorf("%d link directions, want 6 (3 brokers)", n)
	}
	if strings.Contains(svg, en.T("panel.controller")) {
		t.Errorf("a link names the lab's controller: %s", svg)
	}
	if m := StageLinkMenusHTML(v, en, "/", true); m != "" {
		t.Errorf("link menus on an observed cluster: %s", m)
	}
	pos := stageLayout(v)
	if _, ok := pos[ClientNode]; ok || len(pos) != 3 {
		t.Errorf("layout %v", pos)
	}
	// The lab's stage is unchanged: node 0, and a place for the producer
	// (which the page draws).
	if lab := StageNodesHTML(stageSnap(), en, "/", true); !strings.Contains(lab, `class="node controller"`) {
		t.Errorf("lab stage: %s", lab)
	}
	if _, ok := ClientPos(stageSnap()); !ok {
		t.Error("the lab's stage has no place for its producer")
	}
	if _, ok := ClientPos(v); ok {
		t.Error("an observed cluster's stage has a producer")
	}
}

// TestFlightsGrouped: messages taking the same direction of a link in one
// frame fly as one, labelled with how many more it carries, so no two
// labels overprint; the other direction and other links fly apart; a
// broker's menu marks each action with the states it fits, and a lesson's
// stage (no menus) has none.
func TestFlightsGrouped(t *testing.T) {
	en := Catalog{"stage.msg.fetch": "fetch @%d e%d", "stage.msg.more": "+%d", "stage.msg.fetched": "%d rec, HW %d"}
	evs := []events.Event{
		{Seq: 2, Kind: events.KindFetchRequest, Broker: 3, Wire: &events.Wire{From: 3, To: 1, FetchOffset: 5}},
		{Seq: 3, Kind: events.KindFetchRequest, Broker: 3, Wire: &events.Wire{From: 3, To: 1, FetchOffset: 6}},
		{Seq: 4, Kind: events.KindFetchRequest, Broker: 3, Wire: &events.Wire{From: 3, To: 1, FetchOffset: 7}},
		{Seq: 5, Kind: events.KindFetchResponse, Broker: 3, Wire: &events.Wire{From: 1, To: 3, HW: 5}},
		{Seq: 6, Kind: events.KindFetchRequest, Broker: 2, Wire: &events.Wire{From: 2, To: 1, FetchOffset: 1}},
	}
	fs := Flights(stageSnap(), evs, en, 10)
	if len(fs) != 3 {
		t.Fatalf("%d flights, want 3 (3→1 grouped, 1→3, 2→1): %+v", len(fs), fs)
	}
	if fs[0].Label != "fetch @5 e0 +2" || strings.Count(fs[0].Title, "\n") != 2 {
		t.Errorf("grouped flight: label %q, title %q", fs[0].Label, fs[0].Title)
	}
	seen := map[[4]float64]bool{}
	for _, f := range fs {
		k := [4]float64{f.From.X, f.From.Y, f.To.X, f.To.Y}
		if seen[k] {
			t.Errorf("two flights on one way: %+v", f)
		}
		seen[k] = true
	}

	nodes := StageNodesHTML(stageSnap(), Catalog{}, "/", true)
	if !strings.Contains(nodes, `data-action="restart" data-when="down"`) || !strings.Contains(nodes, `data-action="crash" data-when="running"`) {
		t.Error("a broker's actions are not marked with the states they fit")
	}
	if strings.Contains(StageNodesHTML(stageSnap(), Catalog{}, "/", false), "<form") || StageLinkMenusHTML(stageSnap(), Catalog{}, "/", false) != "" {
		t.Error("a stage without menus has forms")
	}
}

// TestChartAxes: each chart has both axes, its largest value with its
// unit, 0, and the time axis's ends (a window ago, now).
func TestChartAxes(t *testing.T) {
	var ch Charts
	snap := &events.Snapshot{Topics: []events.Topic{{Name: "demo", Partitions: []events.Partition{{Partition: 0, Leader: 1, ISR: []int32{1, 2},
		ReplicaLogs: []events.Replica{{Broker: 1, LEO: 7, HW: 5}}}}}}}
	ch.Observe(snap, []events.Event{{Seq: 1, Kind: events.KindHW, Time: time.Unix(100, 0)}})
	c := Catalog{"stage.chart.unit.offset": "%s (offset)", "stage.chart.unit.replicas": "%s replicas", "stage.chart.x.from": "−%s s", "stage.chart.x.now": "now"}
	html := ch.HTML(c)
	for _, want := range []string{">7.0 (offset)<", ">2.0 replicas<", ">−60 s<", ">now<", `x1="1" y1="16" x2="1" y2="73"`} {
		if !strings.Contains(html, want) {
			t.Errorf("the charts lack %s", want)
		}
	}
}
