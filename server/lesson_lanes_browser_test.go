package server

import (
	"strings"
	"testing"
)

// TestBrowserLessonLanesEveryTopic runs lesson 14 (topics hw and le side by
// side) in Chromium: once the panel is live it draws a figure with lanes for
// every topic of the run's cluster, at every step to the last, and hides the
// server-rendered tables, which would go stale; the last step's pointer to
// a truncated record shows its value.
func TestBrowserLessonLanesEveryTopic(t *testing.T) {
	b := startBrowserLab(t, false)
	b.open("/lessons", false)
	b.click(`[data-start="14-kip101-hw-truncation"]`)
	b.poll(`document.readyState !== "loading" && document.querySelector('#progress[data-cursor="0"]') !== null`, "the run to start")
	live := `document.querySelector('#panel[data-status="live"]') !== null`
	// A figure out of view is not painted (static/panel.js): each is
	// scrolled into view first.
	drawn := func(topic string) string {
		return `(f => !!f && (f.scrollIntoView(), f.querySelectorAll('g.replica').length === 2 && ` +
			`f.querySelector('.lane-recs .rec') !== null && !('offscreen' in f.dataset)))` +
			`(document.querySelector('#lanes figure[data-topic="` + topic + `"]'))`
	}
	total := eval[int](b, `+document.querySelector('#progress').dataset.total`)
	for step := 1; step <= total; step++ {
		b.lessonStep(step, "", nil)
		b.poll(live, "the panel to report live")
		b.poll(drawn("hw")+` && `+drawn("le"), "both topics' lanes in the panel")
		b.poll(`document.querySelector("#run-lanes table.lanes").offsetParent === null`, "the server-rendered tables hidden")
	}
	// The last step points at broker 1's truncated m2, value and all.
	if got := eval[string](b, `[...document.querySelectorAll('#pointers li[data-kind="truncated"]')].map(l => l.textContent).join("; ")`); !strings.Contains(got, "offset 1 · m2 ·") {
		t.Errorf("truncated-record pointers %q lack m2", got)
	}
	b.shot("lesson-14-last-step")
}
