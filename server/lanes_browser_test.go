package server

import (
	"strconv"
	"strings"
	"testing"
)

// TestBrowserLanesOnScreen: a lane figure draws only the cells of the part
// of its window on screen (and a margin); scrolling it sideways draws the
// cells that come into view, with their values.
func TestBrowserLanesOnScreen(t *testing.T) {
	b := startBrowserLab(t, true)
	b.viewport(360, 740, true) // a phone: the figure shows a few cells of its window
	b.open("/", true)
	// Out of view (the page scrolled to its end), the figure is not
	// rendered (app.css), but its cells are written as records come.
	eval[bool](b, `(() => { window.scrollTo(0, document.documentElement.scrollHeight); return true; })()`)
	b.poll(`"offscreen" in document.querySelector('`+fig(0)+`').dataset`, "the figure out of view marked offscreen")
	recs := make([]string, 60)
	for i := range recs {
		recs[i] = `{"value":"r` + strconv.Itoa(i) + `"}`
	}
	b.api("POST", "api/v1/topics/demo/records", `{"acks":"1","partition":0,"records":[`+strings.Join(recs, ",")+`]}`, nil)
	b.poll(`+document.getElementById("panel").dataset.seq >= `+strconv.FormatUint(b.cl.Bus().LastSeq(), 10), "the panel to catch up")
	snap := b.cl.Snapshot()
	leader := snap.Partition("demo", 0).Leader
	cell := func(off int) string {
		return `document.querySelector('` + lane(0, leader) + ` g.rec[data-offset="` + strconv.Itoa(off) + `"]')`
	}
	lowest := `Math.min(...[...document.querySelectorAll('` + lane(0, leader) + ` g.rec')].map(g => +g.dataset.offset))`
	b.poll(`[...document.querySelectorAll('`+lane(0, leader)+` g.rec text.val')].some(v => /^r4[1-9]$/.test(v.textContent))`, "the cells written out of view")
	// In view again: rendered (out of view it has no scroll width).
	eval[bool](b, `(f => { f.scrollIntoView(); return true; })(document.querySelector('`+fig(0)+`'))`)
	b.poll(`!("offscreen" in document.querySelector('`+fig(0)+`').dataset)`, "the figure rendered once in view")
	b.poll(lowest+` < 59`, "the cells on screen")
	before := eval[float64](b, lowest)
	if drawn := eval[bool](b, cell(59)+` !== null`); drawn {
		t.Errorf("the cell of offset 59, off screen, was drawn (lowest drawn %v)", before)
	}
	eval[bool](b, `(f => { f.scrollLeft = f.scrollWidth; return true; })(document.querySelector('`+fig(0)+`'))`)
	b.poll(cell(59)+` !== null && `+cell(59)+`.querySelector("text.val").textContent === "r59"`, "the cell of offset 59 drawn once scrolled into view")
	b.poll(lowest+` > `+strconv.FormatFloat(before, 'f', 0, 64), "the cells scrolled out of view let go")
	b.shotOf(fig(0), "lanes-scrolled")
}
