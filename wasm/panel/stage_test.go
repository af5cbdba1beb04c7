package panel

import (
	"strings"
	"testing"

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
	nodes := StageNodesHTML(stageSnap(), Catalog{}, "/")
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
