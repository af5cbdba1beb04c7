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
