package views

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"tidemark/events"
	"tidemark/i18n"
)

// TestStageOptions: free play's stage opens fault menus and a produce menu
// on the producer node; a lesson's stage (the lesson drives its cluster)
// has neither, follows the run's stream and plays back the step it
// answers.
func TestStageOptions(t *testing.T) {
	s := events.Snapshot{Seq: 40, Brokers: []events.Broker{{ID: 1, State: events.BrokerUp}, {ID: 2, State: events.BrokerCrashed}},
		Topics: []events.Topic{{Name: "demo"}}}
	render := func(o StageOpts) string {
		var buf bytes.Buffer
		if err := Stage(Page{Lang: i18n.English, Path: "/"}, s, o).Render(context.Background(), &buf); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	free := render(StageOpts{})
	for _, want := range []string{`<details class="node client" data-testid="node-client"`, `<option value="demo">demo</option>`,
		`data-action="produce"`, `data-action="crash" data-when="running"`, `data-testid="linkctl-1-2"`, `id="stage-clock-state"`, `data-menus="true"`} {
		if !strings.Contains(free, want) {
			t.Errorf("free play's stage lacks %s", want)
		}
	}
	lesson := render(StageOpts{WS: "/ws?run=abc", Lesson: true, PlayTo: 40, PlaySpeed: "fast"})
	for _, want := range []string{`data-ws="/ws?run=abc"`, `data-menus="false"`, `data-play-to="40"`, `data-play-speed="fast"`, `id="stage-play"`, `data-testid="node-client"`} {
		if !strings.Contains(lesson, want) {
			t.Errorf("a lesson's stage lacks %s", want)
		}
	}
	for _, not := range []string{"<form", "<details", `id="stage-clock-state"`, `data-testid="clients"`} {
		if strings.Contains(lesson, not) {
			t.Errorf("a lesson's stage has %s", not)
		}
	}
}

// TestPointerCSS: a step's pointers ring their broker on the topology and
// mark their replica's lane (and an HW or LEO pointer's marker); a pointer
// at no broker adds nothing, one repeated adds its rules once, and a topic
// that is no legal Kafka name (it could end the selector) marks no lane.
func TestPointerCSS(t *testing.T) {
	css := PointerCSS([]LessonPointerView{
		{Kind: "hw", Broker: 2, Topic: "hw", Partition: 0},
		{Kind: "record", Broker: 2, Topic: "hw", Partition: 0},
		{Kind: "file"},
		{Kind: "leo", Broker: 3, Topic: `x"] body { color: red } [a="`, Partition: 1},
		{Kind: "lso", Broker: 1, Topic: "txn"},
		{Kind: "cleaner", Broker: 1, Topic: "kept"},
	})
	for _, want := range []string{`#topo [data-testid="node-2"]`, `#lanes g[data-topic="hw"][data-partition="0"][data-broker="2"] .marker.hw line`, `#topo [data-testid="node-3"]`,
		`#lanes g[data-topic="txn"][data-partition="0"][data-broker="1"] .marker.lso line`, `#lanes g[data-topic="kept"][data-partition="0"][data-broker="1"] .cleaner rect`} {
		if !strings.Contains(css, want) {
			t.Errorf("no rule for %s in:\n%s", want, css)
		}
	}
	if strings.Count(css, `node-2"]`) != 1 || strings.Contains(css, "body") || strings.Contains(css, "marker.leo") {
		t.Errorf("rules repeated or an illegal topic in a selector:\n%s", css)
	}
}

// TestReplayHintTruncated: a run's page says when its recording stops
// short of the run's end, and says nothing of it otherwise.
func TestReplayHintTruncated(t *testing.T) {
	render := func(v RunPlayback) string {
		var buf bytes.Buffer
		if err := replayHint(Page{Lang: i18n.English}, v).Render(context.Background(), &buf); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	if h := render(RunPlayback{Recorded: true, Truncated: true, Events: 5000}); !strings.Contains(h, "first 5000 events") {
		t.Errorf("a truncated recording's hint: %s", h)
	}
	if h := render(RunPlayback{Recorded: true, Events: 300}); strings.Contains(h, "replay-truncated") {
		t.Errorf("a whole recording's hint: %s", h)
	}
}
