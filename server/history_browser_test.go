package server

import (
	"strconv"
	"testing"
	"time"
)

// TestBrowserTimelineWholeHistory: a page loaded after 20,000 events
// reaches the lab's first kept event (the bus's ring and the panel's
// memory hold only the newest), stepping the timeline to its start shows
// the first events, and the charts are drawn from history though nothing
// happens after the load.
func TestBrowserTimelineWholeHistory(t *testing.T) {
	b := startBrowserLab(t, true)
	h := b.cl.History()
	if h == nil {
		t.Fatal("the lab keeps no history")
	}
	first, _ := h.Bounds()
	// 20,000 events, cheaply: the clock resumed and paused again.
	for range 10000 {
		b.cl.Resume()
		b.cl.Pause()
	}
	// Then some lab time.
	for range 5 {
		if err := b.cl.Step(time.Second); err != nil {
			t.Fatal(err)
		}
	}
	last := b.cl.Bus().LastSeq()
	if last-first < 20000 {
		t.Fatalf("published %d events", last-first)
	}
	if _, oldest := b.cl.Bus().Since(0, 1); oldest <= first {
		t.Fatalf("the bus's ring still holds the first event (%d ≤ %d): the test shows nothing", oldest, first)
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		if _, written := h.Bounds(); written >= last {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the history did not catch up with the bus")
		}
		time.Sleep(10 * time.Millisecond)
	}
	p, err := h.Page(first+50, 50, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	firstListed := uint64(0)
	for _, e := range p.Events {
		if !e.Kind.Unlisted() {
			firstListed = e.Seq
			break
		}
	}
	if firstListed == 0 {
		t.Fatal("no listed event among the first 50")
	}
	fs, ls := strconv.FormatUint(first, 10), strconv.FormatUint(last, 10)

	b.open("/", true)
	b.poll(`(t => t !== null && t.dataset.firstSeq === "`+fs+`" && +t.dataset.lastSeq >= `+ls+`)(document.querySelector('[data-testid="timeline"]'))`,
		"the timeline to reach from the first kept event ("+fs+") to the last")
	// The paused lab publishes nothing after the load: only the history
	// can have drawn the replicas' LEO and HW.
	b.poll(`document.querySelectorAll('[data-testid="chart-leo-hw"] polyline').length > 0`, "the charts drawn from history")

	// To the start: the state before the first event, the first listed.
	eval[bool](b, `(r => { r.value = 0; r.dispatchEvent(new Event("input", {bubbles: true})); return true })(document.getElementById("tl-range"))`)
	b.poll(`document.getElementById("panel").dataset.viewSeq === "`+strconv.FormatUint(first-1, 10)+`"`, "the state before the first kept event")
	fl := strconv.FormatUint(firstListed, 10)
	b.poll(`document.querySelector('#panel-events li[data-seq="`+fl+`"]') !== null`, "the first events in the list")
	b.shot("history-timeline-start")
	b.click("#tl-fwd")
	b.poll(`document.getElementById("panel").dataset.viewSeq === "`+fl+`" && document.querySelector('#panel-events li.cursor[data-seq="`+fl+`"]') !== null`,
		"one step forward: the first listed event, marked in the list")
	b.click("#tl-live")
	b.poll(`document.getElementById("panel").dataset.mode === "live"`, "live again")
}
