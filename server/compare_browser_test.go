package server

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserCompare starts a comparison from the /compare page's form in
// headless Chromium, follows the page (it reloads itself, no JavaScript of
// ours) until the run is done, and reads the results table and the charts:
// one column and one chart per protocol. Screenshot: artifacts/compare.png.
func TestBrowserCompare(t *testing.T) {
	b := startBrowserLab(t, false)
	b.open("/compare", false)
	if err := chromedp.Do(b.ctx, chromedp.SetValue(chromedp.CSS(`input[name="seed"]`), "3")); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(b.ctx, chromedp.SetValue(chromedp.CSS(`input[name="actions"]`), "40")); err != nil {
		t.Fatal(err)
	}
	b.click(`[data-testid="compare-form"] button[type="submit"]`)
	// The run's page reloads every second until the run is done: each
	// reload can interrupt an evaluation, so ask again (bounded).
	done := `location.pathname.startsWith("/compare/runs/") && document.querySelector('[data-testid="compare-table"]') !== null &&
		document.querySelector('meta[http-equiv="refresh"]') === null`
	b.awaitReloading(done, "the comparison", "failed-compare", 90*time.Second)
	// The stage plays the run back, and says so: not "live".
	b.poll(`document.querySelector('#panel[data-status="live"]') !== null`, "the playback's stream")
	if got := eval[string](b, `document.getElementById("panel-status").textContent`); got != "playback" {
		t.Errorf("a recorded run's stage says %q, want playback", got)
	}
	protocols := eval[[]string](b, `[...document.querySelectorAll('[data-testid="compare-table"] th[data-protocol]')].map(th => th.dataset.protocol)`)
	if !slices.Equal(protocols, []string{"isr", "quorum", "pipeline"}) {
		t.Fatalf("table columns %v", protocols)
	}
	if n := eval[int](b, `document.querySelectorAll('[data-testid^="compare-chart-"] polyline').length`); n != 3*len(protocols) {
		t.Errorf("%d chart lines; want 3 per protocol", n)
	}
	text := eval[string](b, `document.querySelector('[data-testid="compare-table"]').innerText`)
	for _, want := range []string{"2f+1", "f+1", " ms"} {
		if !strings.Contains(text, want) {
			t.Errorf("the table lacks %q:\n%s", want, text)
		}
	}
	// Every chart has its axes labelled, and no label is cut by its chart.
	axes := eval[string](b, `(() => { const out = [];
		for (const svg of document.querySelectorAll('.compare-charts svg')) {
			const box = svg.getBoundingClientRect(), texts = svg.querySelectorAll('.chart-axis text');
			if (texts.length < 4) out.push(texts.length + " axis labels");
			for (const t of texts) { const r = t.getBoundingClientRect();
				if (r.left < box.left - 0.5 || r.right > box.right + 0.5 || r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5) out.push("cut: " + t.textContent); }
		}
		return out.join("; "); })()`)
	if axes != "" {
		t.Errorf("compare charts' axes: %s", axes)
	}
	b.shot("compare")

	// The same page in Simplified Chinese (the header's switch).
	b.click(`a[data-lang="zh-Hans"]`)
	b.poll(`document.documentElement.lang === "zh-Hans" && document.querySelector('[data-testid="compare-table"] th') !== null`, "the page in Chinese")
	if th := eval[string](b, `document.querySelector('[data-testid="compare-table"] th').innerText`); th != "指标" {
		t.Errorf("the table's first header in Chinese is %q", th)
	}
	b.shot("compare-zh-Hans")
}
