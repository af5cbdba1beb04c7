package server

import "testing"

// TestBrowserEventsListStartsFilled: the overview's event list shows the
// recent history on page load (server-rendered, the clock paused so no new
// event arrives), and keeps it once the panel is live.
func TestBrowserEventsListStartsFilled(t *testing.T) {
	b := startBrowserLab(t, true)
	b.open("/", true)
	if n := eval[int](b, `document.querySelectorAll('#panel-events li[data-seq]').length`); n == 0 {
		t.Fatal("the event list is empty once live")
	}
	// A new event is listed above the history.
	b.click(`#stage-fetch`)
	b.poll(`(l => l.length > 1 && +l[0].dataset.seq > +l[l.length-1].dataset.seq)(document.querySelectorAll('#panel-events li[data-seq]'))`,
		"new events listed above the history")
}
