package server

import (
	"strconv"
	"strings"
	"testing"

	"tidemark/events"
	"tidemark/server/web"
)

// TestBrowserStageTime drives free play's time on the stage at 1366×768:
// the ¼× button slows the lab clock and the status line says so; the
// clock's button pauses it; "Step one event" brings exactly one new event
// into the list (and one step to the timeline); a fetch round stepped at
// ¼× crosses its link four times slower than at 1×.
func TestBrowserStageTime(t *testing.T) {
	b := startBrowserLab(t, false)
	b.viewport(1366, 768, false)
	b.open("/", true)

	b.click(`#stage-speeds button[data-rate="0.25"]`)
	b.poll(`document.querySelector('#stage-clock-state[data-rate="0.25"][data-paused="false"]') !== null`, "the status line at ¼×, running")
	if pressed := eval[string](b, `document.querySelector('#stage-speeds button[data-rate="0.25"]').getAttribute("aria-pressed") + document.querySelector('#stage-speeds button[data-rate="1"]').getAttribute("aria-pressed")`); pressed != "truefalse" {
		t.Errorf("rate buttons pressed: ¼× and 1× read %s, want true and false", pressed)
	}
	if text := eval[string](b, `document.getElementById("stage-clock-state").textContent`); text != "Clock running · ¼×" {
		t.Errorf("status line %q", text)
	}
	if r := b.cl.Clock().Rate(); r != 0.25 {
		t.Fatalf("the lab clock runs at %v after ¼×", r)
	}
	b.shotOf(".stage-time", "stage-time-1-quarter")

	b.click("#stage-pause")
	b.poll(`document.querySelector('#stage-clock-state[data-paused="true"]') !== null && document.getElementById("stage-resume") !== null`, "the status line paused and the resume button")

	// Let what the running lab set in motion happen (ISR shrinks of the
	// partitions whose followers no longer fetch), so the next step has
	// exactly one thing to bring: a new partition's first ISR shrink.
	for i := 0; ; i++ {
		var st web.StepEventResponse
		b.api("POST", "api/v1/clock/step-event", "", &st)
		if !st.Found {
			break
		}
		if i == 10 {
			t.Fatal("the paused lab still has events after 10 steps to the next")
		}
	}
	if _, err := b.cl.CreateTopic("solo", 1, 3, nil); err != nil {
		t.Fatal(err)
	}
	before := b.cl.Bus().LastSeq()
	b.poll(`+document.getElementById("panel").dataset.seq >= `+strconv.FormatUint(before, 10), "the panel to catch up")
	tlEnd := eval[int](b, `+document.getElementById("tl-range").max`)

	b.click("#stage-step-event")
	b.poll(`document.querySelector("#stage-flash .flash.ok") !== null`, "the step's outcome, said on the stage")
	var listed []events.Event
	all, _ := b.cl.Bus().Since(before, 0)
	for _, e := range all {
		if !e.Kind.Unlisted() {
			listed = append(listed, e)
		}
	}
	if len(listed) != 1 || listed[0].Kind != events.KindISR {
		t.Fatalf("the step to the next event published %+v, want one ISR shrink", listed)
	}
	newest := strconv.FormatUint(listed[0].Seq, 10)
	b.poll(`document.querySelector('#panel-events li[data-seq="`+newest+`"]') !== null`, "the new event in the list")
	fresh := eval[[]string](b, `[...document.querySelectorAll("#panel-events li")].filter(li => +li.dataset.seq > `+strconv.FormatUint(before, 10)+`).map(li => li.textContent)`)
	if len(fresh) != 1 {
		t.Fatalf("one step to the next event listed %d events: %q", len(fresh), fresh)
	}
	if flash := eval[string](b, `document.getElementById("stage-flash").textContent`); !strings.Contains(flash, "to the next event") {
		t.Errorf("flash %q", flash)
	}
	// The timeline: one step back shows the lab just before that event.
	b.click("#tl-back")
	b.poll(`+document.getElementById("panel").dataset.viewSeq < `+newest+` && +document.getElementById("tl-range").max > `+strconv.Itoa(tlEnd), "the timeline one event back, before the ISR shrink")
	b.shot("stage-time-2b-timeline-back")
	b.click("#tl-live")
	b.poll(`+document.getElementById("panel").dataset.viewSeq >= `+newest, "the timeline live again")
	b.shot("stage-time-2-step-event")

	// A fetch round at ¼×: the request crosses its link in 4 × 1,600 ms
	// (messages from before, drawn at 1×, may still be on their way).
	sent := `[...document.querySelectorAll('#topo-msgs [data-testid="msg"][data-kind="fetch-request"]')].find(m => +m.dataset.seq > ` + strconv.FormatUint(b.cl.Bus().LastSeq(), 10) + `)`
	b.click("#stage-fetch")
	b.poll(sent+` !== undefined`, "the round's fetch request in flight")
	if d := eval[float64](b, `+`+sent+`.dataset.duration`); d != 4*1600 {
		t.Errorf("at ¼× a fetch request crosses its link in %v ms, want 6400", d)
	}
	b.shotOf("#topo", "stage-time-3-fetch-at-quarter")
}
