package web

import (
	"strings"
	"testing"
	"time"

	"tidemark/events"
)

// TestChartsFromTheServer: the server follows its lab for the stage's
// charts from its start, so GET /ui/charts and the overview draw what
// happened before the page was loaded: LEO and HW per replica, with their
// axes, in the page's language.
func TestChartsFromTheServer(t *testing.T) {
	lab := newTestLab(events.BusOptions{})
	s := newTestServer(t, lab, Options{})
	h := s.Handler()
	at := time.Unix(1000, 0)
	for i := range 5 {
		at = at.Add(time.Second)
		lab.publish(events.Event{Kind: events.KindAppend, Broker: 1, Topic: "demo", Time: at,
			Offsets: &events.Offsets{Base: int64(i), Last: int64(i), LEO: int64(i + 1)}})
		lab.publish(events.Event{Kind: events.KindHW, Broker: 1, Topic: "demo", Time: at, Offsets: &events.Offsets{HW: int64(i + 1)}})
	}
	// The feed reads the bus in its own goroutine: wait (bounded) until
	// it has sampled the last HW.
	deadline := time.Now().Add(10 * time.Second)
	var got string
	for !strings.Contains(got, ">5.0 (offset)<") {
		if time.Now().After(deadline) {
			t.Fatalf("the charts never reached LEO 5:\n%s", got)
		}
		time.Sleep(10 * time.Millisecond)
		got = send(t, h, "GET", "/ui/charts", "").Body.String()
	}
	for _, want := range []string{`data-testid="chart-leo-hw"`, `data-testid="chart-isr"`, "<polyline", ">now<"} {
		if !strings.Contains(got, want) {
			t.Errorf("/ui/charts lacks %s", want)
		}
	}
	if page := send(t, h, "GET", "/", "").Body.String(); !strings.Contains(page, `data-src="/ui/charts"`) || !strings.Contains(page, `data-testid="chart-leo-hw"`) {
		t.Error("the overview does not open with the charts drawn")
	}
	if zh := do(t, h, "GET", "/ui/charts", map[string]string{"Accept-Language": "zh-CN"}).Body.String(); !strings.Contains(zh, "现在") {
		t.Error("the charts are not in the page's language")
	}
}
