package server

import (
	"strings"
	"testing"
)

// TestBrowserEventsListStartsFilled: the overview's event list shows the
// recent history on page load (server-rendered, the clock paused so no new
// event arrives), and keeps it once the panel is live.
func TestBrowserEventsListStartsFilled(t *testing.T) {
	b := startBrowserLab(t, true)
	b.open("/", true)
	if n := eval[int](b, `document.querySelectorAll('#panel-events li[data-seq]').length`); n == 0 {
		t.Fatal("the event list is empty once live")
	}
	created := eval[[]string](b, `[...document.querySelectorAll('#panel-events li.k-topic')].map(li => li.textContent)`)
	if len(created) == 0 {
		t.Error("no topic-created entry in the event list")
	}
	for _, line := range created {
		if strings.Count(line, "created") != 1 {
			t.Errorf("the topic's creation told twice: %q", line)
		}
	}
	// A new event is listed above the history.
	b.click(`#stage-fetch`)
	b.poll(`(l => l.length > 1 && +l[0].dataset.seq > +l[l.length-1].dataset.seq)(document.querySelectorAll('#panel-events li[data-seq]'))`,
		"new events listed above the history")
}
