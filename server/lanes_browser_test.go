package server

import (
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserLanesOnScreen: on a phone, a lane figure (wider than the
// screen) opens on its newest records with every lane's HW and LEO markers
// in view, and follows them as records come, while its window fills and
// once it slides; scrolled back by the learner, it keeps its place as
// records come and through a resize, until scrolled to the newest again.
// Its cells are drawn on a canvas, its accessible list holds every record
// of the window, also while the figure is out of view.
func TestBrowserLanesOnScreen(t *testing.T) {
	b := startBrowserLab(t, true)
	b.viewport(360, 740, true) // a phone: the figure shows a few cells of its window
	b.open("/", true)

	// demo-1's window fills: its newest records move right, the figure with them.
	b.produce(1, 0, 8)
	b.poll(markersInView(fig(1)), "demo-1's HW and LEO markers in view (8 records)")
	b.produce(1, 8, 8)
	b.poll(`+document.querySelector('`+fig(1)+` g.replica').dataset.leo === 16 && `+markersInView(fig(1)), "demo-1's HW and LEO markers in view (16 records)")
	b.poll(markersInView(fig(2)), "demo-2's HW and LEO markers in view (no records)")

	// Out of view (the page scrolled to its end), the figure is not
	// rendered (app.css) nor its canvas drawn, but its list of records
	// follows them.
	eval[bool](b, `(() => { window.scrollTo(0, document.documentElement.scrollHeight); return true; })()`)
	b.poll(`"offscreen" in document.querySelector('`+fig(0)+`').dataset`, "the figure out of view marked offscreen")
	b.produce(0, 0, 60) // offsets 0–59: the window shows 41–60
	snap := b.cl.Snapshot()
	leader := snap.Partition("demo", 0).Leader
	cell := func(off int) string {
		return `document.querySelector('` + recs(0, leader) + ` .rec[data-offset="` + strconv.Itoa(off) + `"]')`
	}
	// Drawn: the canvas holds an opaque box at the record's place.
	drawn := func(off int64) string { return cellPixel(0, leader, off) + `[3] === 255` }
	b.poll(`[...document.querySelectorAll('`+recs(0, leader)+` .rec')].some(v => /^r4[1-9]$/.test(v.dataset.val))`, "the records listed out of view")

	// In view again: rendered, on its newest records, its canvas drawn.
	eval[bool](b, `(f => { f.scrollIntoView(); return true; })(document.querySelector('`+fig(0)+`'))`)
	b.poll(markersInView(fig(0)), "demo-0's HW and LEO markers in view once the figure is")
	b.poll(cell(59)+` !== null && `+cell(59)+`.dataset.val === "r59" && `+drawn(59), "the newest record listed and drawn")
	// Scrolled to its newest records, the lanes' labels stick to the
	// figure's left edge: one per lane, in view, naming its broker.
	b.poll(`(() => { const f = document.querySelector('`+fig(0)+`'), ps = f.querySelectorAll('.lane-pins span');
		if (!f.classList.contains('pinned') || ps.length !== f.querySelectorAll('g.replica').length) return false;
		const box = f.getBoundingClientRect();
		const gs = f.querySelectorAll('g.replica');
		return [...ps].every((p, i) => { const r = p.getBoundingClientRect(), g = gs[i].getBoundingClientRect();
			return r.width > 0 && r.left >= box.left - 1 && r.left < box.left + 40 && r.top >= g.top && r.bottom <= g.bottom && /\d/.test(p.textContent); }); })()`,
		"demo-0's lane labels pinned to the figure's left edge, each beside its lane")
	b.shotOf(fig(0), "lanes-newest-360px")

	// The learner scrolls back to the start: the oldest records of the
	// window are there.
	scrollLeft := func(expr string) float64 {
		return eval[float64](b, `(f => { f.scrollLeft = `+expr+`; return f.scrollLeft; })(document.querySelector('`+fig(0)+`'))`)
	}
	if left := scrollLeft("0"); left != 0 {
		t.Fatalf("scrolled to %v, not to the start", left)
	}
	b.poll(cell(41)+` !== null && `+cell(41)+`.dataset.val === "r41" && `+drawn(41), "the record of offset 41 listed and drawn")
	b.shotOf(fig(0), "lanes-scrolled")

	// More records: the window slides under the learner, who stays at its
	// start; a resize keeps the place too.
	b.produce(0, 60, 10) // the window shows 51–70
	b.poll(cell(51)+` !== null && `+cell(51)+`.dataset.val === "r51" && `+drawn(51), "the window slid to offset 51")
	b.frames()
	if left := eval[float64](b, `document.querySelector('`+fig(0)+`').scrollLeft`); left != 0 {
		t.Errorf("the figure scrolled back to its start moved to %v as records came", left)
	}
	width := eval[float64](b, `document.querySelector('`+fig(0)+`').clientWidth`)
	b.viewport(400, 740, true)
	b.poll(`document.querySelector('`+fig(0)+`').clientWidth > `+strconv.FormatFloat(width, 'f', -1, 64), "the figure resized")
	b.frames()
	if left := eval[float64](b, `document.querySelector('`+fig(0)+`').scrollLeft`); left != 0 {
		t.Errorf("the figure scrolled back to its start moved to %v on a resize", left)
	}
	b.viewport(360, 740, true)

	// Scrolled to the newest again, it follows them.
	scrollLeft("f.scrollWidth")
	b.frames()
	b.produce(0, 70, 5)
	b.poll(cell(74)+` !== null && `+markersInView(fig(0)), "the figure following the newest records again")
	b.shotOf(fig(0), "lanes-following-360px")
}

// produce sends n records (values r<from>…) to demo's partition p with
// acks=1, has every follower fetch three times a second of lab time apart
// (their copies; their LEO to the leader, whose HW moves; the HW) and
// waits for the panel to show it all.
func (b *browserLab) produce(p, from, n int) {
	b.t.Helper()
	recs := make([]string, n)
	for i := range recs {
		recs[i] = `{"value":"r` + strconv.Itoa(from+i) + `"}`
	}
	b.api("POST", "api/v1/topics/demo/records", `{"acks":"1","partition":`+strconv.Itoa(p)+`,"records":[`+strings.Join(recs, ",")+`]}`, nil)
	for range 3 {
		b.api("POST", "api/v1/clock/step", `{"ms":1000}`, nil)
		for _, id := range []string{"1", "2", "3"} {
			b.api("POST", "api/v1/brokers/"+id+"/fetch", "", nil)
		}
	}
	b.poll(`+document.getElementById("panel").dataset.seq >= `+strconv.FormatUint(b.cl.Bus().LastSeq(), 10), "the panel to catch up")
}

// frames waits for two frames of the page: what a scroll or a resize
// brings (its events, the panel's redraw) has happened.
func (b *browserLab) frames() {
	b.t.Helper()
	if _, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](`new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() => done(true))))`,
		chromedp.EvalAwaitPromise)); err != nil {
		b.t.Fatalf("waiting for two frames: %v", err)
	}
}

// markersInView is a JavaScript expression: the figure sel finds, brought
// into view, has lanes, and every lane's HW and LEO markers (line and
// label) lie inside the figure's visible box.
func markersInView(sel string) string {
	return `(f => {
  f.scrollIntoView({block: "nearest"});
  if ("offscreen" in f.dataset) return false;
  const r = f.getBoundingClientRect(), left = r.left + f.clientLeft, right = left + f.clientWidth;
  const lanes = [...f.querySelectorAll("g.replica")];
  return lanes.length > 0 && lanes.every(l => ["hw", "leo"].every(m => {
    const g = l.querySelector("g.marker." + m);
    if (!g) return false;
    const b = g.getBoundingClientRect();
    return b.width > 0 && b.left >= left - .5 && b.right <= right + .5;
  }));
})(document.querySelector('` + sel + `'))`
}
