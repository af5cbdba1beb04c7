package server

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// viewport makes the tab width×height CSS pixels (a phone if mobile).
func (b *browserLab) viewport(width, height int64, mobile bool) {
	b.t.Helper()
	set := func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, tg, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
			Width: width, Height: height, DeviceScaleFactor: 1, Mobile: mobile})
		return chromedp.Void{}, err
	}
	if err := chromedp.Do(b.ctx, set); err != nil {
		b.t.Fatalf("viewport %d×%d: %v", width, height, err)
	}
}

// noScripts turns JavaScript off in the tab, for the pages as they are
// without it (the next page loaded runs none).
func (b *browserLab) noScripts() {
	b.t.Helper()
	off := func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, tg, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
		return chromedp.Void{}, err
	}
	if err := chromedp.Do(b.ctx, off); err != nil {
		b.t.Fatalf("turning JavaScript off: %v", err)
	}
}

// contrastJS lists the visible HTML text whose contrast with its
// background, from computed styles, is under 4.5:1 (WCAG AA). The
// background is the nearest ancestor's opaque background colour.
const contrastJS = `(() => {
  const rgb = s => { const m = s.match(/[\d.]+/g) || []; return m.map(Number); };
  const lum = c => { const [r,g,b] = c.slice(0,3).map(v => { v/=255; return v <= .03928 ? v/12.92 : Math.pow((v+.055)/1.055, 2.4); }); return .2126*r + .7152*g + .0722*b; };
  const bg = el => { for (; el; el = el.parentElement) { const c = rgb(getComputedStyle(el).backgroundColor); if (c.length === 3 || (c.length === 4 && c[3] > .9)) return c; } return [255,255,255]; };
  const bad = [];
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n; (n = walk.nextNode()); ) {
    const el = n.parentElement;
    if (!n.textContent.trim() || !el || el.closest("svg,noscript,script,style,[hidden],.skip")) continue;
    if (!el.getClientRects().length || getComputedStyle(el).visibility === "hidden") continue;
    const fg = rgb(getComputedStyle(el).color), b = bg(el);
    const [hi, lo] = [lum(fg), lum(b)].sort((x, y) => y - x);
    const ratio = (hi + .05) / (lo + .05);
    if (ratio < 4.5) bad.push(n.textContent.trim().slice(0, 30) + " " + ratio.toFixed(2));
  }
  return bad;
})()`

// svgContrastJS lists the visible SVG text (lanes, links, messages)
// whose fill, from computed styles, is under 4.5:1 against what is drawn
// under it: its own halo (paint-order stroke), else the topmost filled
// shape under its centre, else the page's background there.
const svgContrastJS = `(() => {
  const rgb = s => { const m = (s || "").match(/[\d.]+/g) || []; return m.map(Number); };
  const opaque = c => c.length === 3 || (c.length === 4 && c[3] > .9);
  const lum = c => { const [r,g,b] = c.slice(0,3).map(v => { v/=255; return v <= .03928 ? v/12.92 : Math.pow((v+.055)/1.055, 2.4); }); return .2126*r + .7152*g + .0722*b; };
  const htmlBg = el => { for (; el; el = el.parentElement) { const c = rgb(getComputedStyle(el).backgroundColor); if (opaque(c)) return c; } return [255,255,255]; };
  const shapes = new Set(["rect", "circle", "path", "polygon", "ellipse"]);
  const bad = [];
  for (const t of document.querySelectorAll("svg text")) {
    if (!t.textContent.trim() || t.closest("[hidden]") || !t.getClientRects().length) continue;
    const cs = getComputedStyle(t);
    if (cs.visibility === "hidden" || cs.display === "none" || +cs.opacity === 0) continue;
    const fg = rgb(cs.fill);
    if (!opaque(fg)) continue;
    t.scrollIntoView({block: "center", inline: "center"});
    const r = t.getBoundingClientRect();
    let bg = null;
    if (cs.paintOrder.startsWith("stroke") && parseFloat(cs.strokeWidth) >= 2 && opaque(rgb(cs.stroke))) bg = rgb(cs.stroke);
    for (const el of bg ? [] : document.elementsFromPoint(r.left + r.width / 2, r.top + r.height / 2)) {
      if (el === t || t.contains(el)) continue;
      if (el instanceof SVGElement) {
        const s = getComputedStyle(el), c = rgb(s.fill);
        if (shapes.has(el.tagName) && opaque(c) && +s.fillOpacity > .9) { bg = c; break; }
        continue;
      }
      bg = htmlBg(el); break;
    }
    if (!bg) bg = htmlBg(t.closest("svg"));
    const [hi, lo] = [lum(fg), lum(bg)].sort((x, y) => y - x);
    const ratio = (hi + .05) / (lo + .05);
    if (ratio < 4.5) bad.push(t.textContent.trim().slice(0, 30) + " " + ratio.toFixed(2) + " (" + t.getAttribute("class") + ")");
  }
  window.scrollTo(0, 0);
  return bad;
})()`

// TestBrowserStage drives the stage as a learner at 1366×768 on a paused
// clock: the topology shows the controller and three brokers; a fetch
// round is seen travelling along a link; a one-way cut from a link's menu
// is drawn on that direction only; a broker crashed from its menu shows
// crashed on the topology and in the lanes, and the server-rendered tables
// are gone once the panel is live; record cells show their values,
// committed or not, and every lane figure opens on its newest records
// with its HW and LEO markers in view; the charts draw LEO and HW per
// replica; every HTML and SVG text passes 4.5:1; at 360 px the page does
// not scroll sideways (TestBrowserLanesOnScreen has the lanes at 360 px).
func TestBrowserStage(t *testing.T) {
	b := startBrowserLab(t, true)
	b.viewport(1366, 768, false)
	b.open("/", true)
	for _, id := range []string{"0", "1", "2", "3"} {
		b.poll(`document.querySelector('[data-testid="node-`+id+`"]') !== null`, "node "+id+" on the topology")
	}
	b.poll(`document.querySelectorAll('[data-testid^="link-"]').length === 12`, "12 link directions (3 brokers and the controller)")
	if hidden := eval[bool](b, `document.getElementById("brokers").closest("[hidden]") !== null`); !hidden {
		t.Error("the server-rendered broker table is still shown next to the live panel")
	}
	b.poll(`document.querySelectorAll('#lanes g.replica').length >= 3`, "the lanes")
	inView := eval[bool](b, `(() => { const r = document.getElementById("topo").getBoundingClientRect(), e = document.getElementById("panel-events").getBoundingClientRect(), l = document.getElementById("lanes").getBoundingClientRect(); return r.bottom <= 768 && e.top < 768 && l.top < 768; })()`)
	if !inView {
		t.Error("topology, lanes and event list are not together on one 1366×768 screen")
	}
	b.shot("stage-1-live")

	// Records: some fetched by the followers and committed, one not yet;
	// cells show their values. Twenty seconds of lab time in one-second
	// steps (under replica.lag.time.max.ms between fetch rounds) give
	// the charts' lines a third of their 60 s window: LEO rising, HW one
	// round behind.
	second := func() { b.api("POST", "api/v1/clock/step", `{"ms":1000}`, nil) }
	for i := range 10 {
		b.api("POST", "api/v1/topics/demo/records", `{"acks":"1","partition":0,"records":[{"value":"alpha"},{"value":"beta-`+strconv.Itoa(i)+`"}]}`, nil)
		for range 2 {
			second()
			for _, id := range []string{"1", "2", "3"} {
				b.api("POST", "api/v1/brokers/"+id+"/fetch", "", nil)
			}
		}
	}
	for _, id := range []string{"1", "2", "3"} { // the followers learn the last HW
		b.api("POST", "api/v1/brokers/"+id+"/fetch", "", nil)
	}
	b.api("POST", "api/v1/topics/demo/records", `{"acks":"1","partition":0,"records":[{"value":"gamma-long-value"}]}`, nil)
	second()
	b.poll(`+document.getElementById("panel").dataset.seq >= `+strconv.FormatUint(b.cl.Bus().LastSeq(), 10), "the panel to catch up")
	b.poll(`document.querySelector('#lanes .rec.committed[data-val="beta…"]') !== null && document.querySelector('#lanes .rec.uncommitted') !== null`,
		"committed and uncommitted records with their values")
	b.poll(`[...document.querySelectorAll('#lanes .rec.uncommitted')].every(v => v.dataset.val === "gamm…")`,
		"the uncommitted records to show the value shortened to gamm…")
	// A screen reader finds them: the lists are in the accessibility tree.
	if names := b.axNames(); !slices.ContainsFunc(names, func(n string) bool { return strings.Contains(n, "gamm…") }) {
		t.Errorf("no node of the accessibility tree names the uncommitted record gamm…; %d names: %.600q", len(names), names)
	}
	// The canvas draws them: the leader's newest record (20, not
	// committed) white, the one before it (19) in its epoch's colour.
	snap := b.cl.Snapshot()
	leader := snap.Partition("demo", 0).Leader
	b.poll(`document.querySelector('`+recs(0, leader)+` .rec.uncommitted[data-offset="20"]') !== null`, "offset 20 not committed on the leader")
	b.poll(``+cellPixel(0, leader, 20)+`.join() === "255,255,255,255"`, "the uncommitted record drawn white")
	if px := eval[[]int](b, cellPixel(0, leader, 19)); len(px) != 4 || px[3] != 255 || px[0] == 255 && px[1] == 255 && px[2] == 255 {
		t.Errorf("the committed record drawn %v, not in its epoch's colour", px)
	}
	// Its tooltip: the pointer over its cell names it.
	hover := eval[string](b, `((f, g) => {
  const lx = parseFloat(g.querySelector("g.marker.leo").getAttribute("transform").slice(10)), y = parseFloat(g.getAttribute("transform").split(",")[1]);
  const svg = f.querySelector("svg.lanes-svg"), r = svg.getBoundingClientRect();
  svg.dispatchEvent(new MouseEvent("mousemove", {bubbles: true, clientX: r.left + lx - (+g.dataset.leo - 20) * 40 + 20, clientY: r.top + y + 34}));
  return f.title;
})(document.querySelector('`+fig(0)+`'), document.querySelector('`+lane(0, leader)+`'))`)
	if !strings.Contains(hover, "gamm…") || !strings.Contains(hover, "20") {
		t.Errorf("the tooltip over offset 20 says %q", hover)
	}
	b.shotOf(fig(0), "stage-1b-lane-values")
	// demo-0 holds more records than its window: every figure opens on
	// its newest records, HW and LEO markers in view.
	for p := range 3 {
		b.poll(markersInView(fig(p)), "demo-"+strconv.Itoa(p)+"'s HW and LEO markers in view at 1,366 px")
	}
	b.shotInView(fig(0), "stage-1d-lane-markers-1366px")
	for _, c := range []string{"leo-hw", "isr", "rate", "latency"} {
		b.poll(`document.querySelector('[data-testid="charts"] [data-testid="chart-`+c+`"] svg') !== null`, "the "+c+" chart")
	}
	b.poll(`document.querySelectorAll('[data-testid="chart-leo-hw"] polyline').length >= 6`, "LEO and HW lines of three replicas")
	b.shotInView(`[data-testid="charts"]`, "stage-1c-charts")

	// A fetch round: the follower's request is seen on its way.
	b.click("#stage-fetch")
	b.poll(`document.querySelector('#topo-msgs [data-testid="msg"][data-kind="fetch-request"]') !== null`, "a fetch request in flight")
	b.shotOf("#topo", "stage-2-fetch-in-flight")

	// A one-way cut from the link's menu: drawn on that direction only.
	b.click(`[data-testid="linkctl-1-2"] > summary`)
	b.click(`[data-testid="linkctl-1-2"] form[data-action="cut"] button`)
	b.poll(`document.querySelector('[data-testid="link-1-2"][data-state="cut"]') !== null && document.querySelector('[data-testid="link-2-1"][data-state="up"]') !== null`,
		"link 1→2 drawn cut and 2→1 up")
	b.shotOf("#topo", "stage-3-one-way-cut")

	// Crash broker 1 from its menu.
	b.click(`[data-testid="node-1"] > summary`)
	b.click(`[data-testid="node-1"] form[data-action="crash"] button`)
	b.poll(`document.querySelector('[data-testid="node-1"][data-state="crashed"]') !== null`, "broker 1 crashed on the topology")
	b.poll(`document.querySelector('#lanes g.replica[data-broker="1"].down') !== null`, "broker 1's lanes marked down")
	b.poll(`(() => { const s = `+laneSaturationJS+`; return s.up > 60 && s.down > 0 && s.down <= 0.65 * s.up; })()`,
		"broker 1's cells dimmed on the canvas (their colours at most 0.65 as saturated as the other brokers')")
	b.shot("stage-4-crashed")

	if bad := eval[[]string](b, contrastJS); len(bad) > 0 {
		t.Errorf("text under 4.5:1 contrast: %q", bad)
	}
	if bad := eval[[]string](b, svgContrastJS); len(bad) > 0 {
		t.Errorf("SVG text under 4.5:1 contrast: %q", bad)
	}

	// A phone: the stage stacks, nothing scrolls sideways.
	b.viewport(360, 740, true)
	b.poll(`document.documentElement.scrollWidth <= 360`, "no horizontal scroll at 360 px (scrollWidth "+"≤ 360)")
	b.shot("stage-5-360px")
}

// laneSaturationJS gives, for the lanes of brokers down and up, the
// highest saturation (max − min channel) of the opaque pixels their
// records' row has on the figure's canvas: a dimmed cell is veiled in
// paper, which takes its epoch colour's saturation down by almost half.
const laneSaturationJS = `(() => {
  let down = 0, up = 0;
  for (const g of document.querySelectorAll('#lanes g.replica')) {
    const cv = g.ownerSVGElement && g.ownerSVGElement.parentElement.querySelector('canvas.lane-canvas');
    const w = cv && cv.getBoundingClientRect().width;
    if (!w || !cv.width) continue;
    const r = cv.width / w, y = +/,\s*(-?[\d.]+)\)/.exec(g.getAttribute('transform'))[1];
    const px = cv.getContext('2d').getImageData(0, Math.round((y + 16) * r), cv.width, Math.round(36 * r)).data;
    let m = 0;
    for (let i = 0; i < px.length; i += 4) {
      if (px[i + 3] < 250) continue;
      m = Math.max(m, Math.max(px[i], px[i + 1], px[i + 2]) - Math.min(px[i], px[i + 1], px[i + 2]));
    }
    if (g.classList.contains('down')) down = Math.max(down, m); else up = Math.max(up, m);
  }
  return {down, up};
})()`
