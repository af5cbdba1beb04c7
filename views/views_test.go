package views

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"tidemark/events"
)

func TestOverviewRendersSnapshot(t *testing.T) {
	s := events.Snapshot{Seq: 7, Controller: events.NoBroker,
		Brokers: []events.Broker{{ID: 1, State: events.BrokerFenced, Listener: "127.0.0.1:9092"}},
		Topics: []events.Topic{{Name: "t<x>", Partitions: []events.Partition{
			{Partition: 0, Leader: events.NoBroker, Replicas: []int32{1}},
			{Partition: 1, Leader: 1, Replicas: []int32{1, 2}, ISR: []int32{1}},
		}}},
	}
	var buf bytes.Buffer
	if err := Overview(s).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	for _, want := range []string{
		"Controller: <strong id=\"controller\">none</strong>", "fenced", "▲", "t&lt;x&gt;",
		"2 partitions · 1 under-replicated · 1 offline", "event #7", `id="panel"`, "Skip to content", `lang="en"`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("overview lacks %q", want)
		}
	}
	if strings.Contains(html, "t<x>") {
		t.Error("topic name not escaped")
	}
}

func TestLayoutText(t *testing.T) {
	var buf bytes.Buffer
	text := English
	text.SkipLink = "Zum Inhalt"
	if err := Layout(Page{Title: "X", Lang: "de", Text: &text}, false).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	if h := buf.String(); !strings.Contains(h, `lang="de"`) || !strings.Contains(h, "Zum Inhalt") || strings.Contains(h, "panel.js") {
		t.Fatalf("layout: %s", h)
	}
}
