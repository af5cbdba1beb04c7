package server

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestBrowserStageOneScreen: the overview at 1366×768 shows the topology,
// the lanes (starting in view) and the charts without scrolling to them;
// the producer node opens a produce menu that produces and closes, with
// its answer said on the stage; a crashed broker's menu offers a restart
// and no crash; and with a one-way cut and a stream of 1,000 records a
// second no two message labels drawn in one frame overlap, and a
// message's description shows on hover and on the topology's focus. At
// 360 px nothing reaches past the right edge.
func TestBrowserStageOneScreen(t *testing.T) {
	b := startBrowserLab(t, false)
	b.viewport(1366, 768, false)
	b.open("/", true)
	box := func(sel string) []float64 {
		return eval[[]float64](b, `(r => [r.left, r.top, r.right, r.bottom])(document.querySelector(`+strconv.Quote(sel)+`).getBoundingClientRect())`)
	}
	for _, sel := range []string{`[data-testid="topology"]`, `[data-testid="node-client"]`, `[data-testid="charts"]`, `.stage-lanes`} {
		if r := box(sel); r[1] < 0 || r[3] > 768.5 || r[2] > 1366.5 {
			t.Errorf("%s at %v: not inside 1366×768", sel, r)
		}
	}
	if r := box(`[data-testid="lanes"]`); r[1] > 560 {
		t.Errorf("the lanes start at y=%.0f: only their header shows", r[1])
	}

	// The producer node's menu produces, closes, and says so on the stage.
	b.click(`[data-testid="node-client"] > summary`)
	b.poll(`document.querySelector('[data-testid="node-client"][open] #stage-produce') !== null`, "the produce menu")
	b.click(`#stage-produce`)
	b.poll(`(document.querySelector("#stage-flash .flash.ok")||{}).textContent?.includes("acks=all")`, "the produce's answer on the stage")
	if eval[bool](b, `document.querySelector('[data-testid="node-client"]').open`) {
		t.Error("the produce menu stays open after its action")
	}

	// A crashed broker's menu: restart only.
	b.api("POST", "api/v1/brokers/3/crash", "", nil)
	b.poll(`document.querySelector('[data-testid="node-3"][data-state="crashed"]') !== null`, "broker 3 down on the stage")
	b.click(`[data-testid="node-3"] > summary`)
	shown := eval[[]string](b, `[...document.querySelectorAll('[data-testid="node-3"] .menu form')].filter(f => f.offsetParent !== null).map(f => f.dataset.action)`)
	if strings.Join(shown, ",") != "restart" {
		t.Errorf("a crashed broker's menu offers %v, want only restart", shown)
	}
	b.click(`[data-testid="node-3"] form[data-action="restart"] button`)
	b.poll(`document.querySelector('[data-testid="node-3"][data-state="up"]') !== null`, "broker 3 up again")

	// A one-way cut and a stream of 1,000 records a second, 4 s of it.
	b.api("POST", "api/v1/network/cuts", `{"from":2,"to":1,"oneway":true}`, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		recs := make([]string, 100)
		for i := range recs {
			recs[i] = `{"value":"s` + strconv.Itoa(i) + `"}`
		}
		body := `{"acks":"1","records":[` + strings.Join(recs, ",") + `]}`
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for range 40 { // bounded: 40 × 100 records in 4 s
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			req, _ := http.NewRequestWithContext(ctx, "POST", b.url+"api/v1/topics/demo/records", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}
	}()
	overlaps, most := 0, 0
	for range 80 { // two frames apart: spread over the stream
		b.frames()
		labels := eval[[][]float64](b, `tidemarkDOM.labels()`)
		most = max(most, len(labels))
		for i, p := range labels {
			for _, q := range labels[i+1:] {
				if p[0] < q[0]+q[2] && q[0] < p[0]+p[2] && p[1] < q[1]+q[3] && q[1] < p[1]+p[3] {
					overlaps++
					t.Errorf("labels overlap: %v and %v", p, q)
				}
			}
		}
	}
	// What a message carries, on hover and on keyboard focus.
	b.frames()
	hovered := eval[string](b, `(() => { const s = tidemarkDOM.spots()[0]; if (!s) return "no message in flight";
		const c = document.getElementById("topo-flights").getBoundingClientRect(), topo = document.getElementById("topo");
		topo.dispatchEvent(new PointerEvent("pointermove", {clientX: c.left + s[0], clientY: c.top + s[1], bubbles: true}));
		const tip = document.getElementById("topo-tip"); return tip.hidden ? "hidden" : tip.textContent; })()`)
	if hovered == "hidden" || hovered == "" || hovered == "no message in flight" {
		t.Errorf("hovering a message in flight shows %q", hovered)
	}
	focused := eval[string](b, `(() => { document.getElementById("topo").focus(); const tip = document.getElementById("topo-tip"); return tip.hidden ? "" : tip.textContent; })()`)
	if focused == "" {
		t.Error("focusing the topology says nothing of the messages in flight")
	}
	cancel()
	wg.Wait()
	if most < 2 {
		t.Errorf("at most %d labels in a frame: the stream drew nothing to check", most)
	}
	b.shot("stage-one-screen-1366")
	producerInside := func(width string) {
		t.Helper()
		// The producer's longest status stays inside the stage (a recorded
		// run's ended with it cut at the stage's left edge).
		if out := eval[string](b, `(() => { document.getElementById("stage-producer").textContent = "error NOT_ENOUGH_REPLICAS_AFTER_APPEND";
			const n = document.querySelector('[data-testid="node-client"]').getBoundingClientRect(), s = document.getElementById("topo").getBoundingClientRect();
			const c = document.querySelector('#topo .node.controller').getBoundingClientRect();
			if (n.right > c.left && n.top < c.bottom && n.bottom > c.top) return "producer " + n.left + "–" + n.right + " over the controller " + c.left + "–" + c.right;
			return n.left >= s.left && n.right <= s.right ? "" : "producer " + n.left + "–" + n.right + ", stage " + s.left + "–" + s.right; })()`); out != "" {
			t.Errorf("at %s: %s", width, out)
		}
	}
	producerInside("1366 px")

	// A phone: nothing past the right edge outside a sideways scroller.
	b.viewport(360, 740, true)
	b.open("/", true)
	if past := eval[string](b, pastRightEdgeJS); past != "" {
		t.Errorf("the overview at 360 px: %s", past)
	}
	producerInside("360 px")
	b.shot("stage-one-screen-360")
}
