package server

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserExperiment uploads an experiment file on the /experiments
// page in headless Chromium, follows the experiment's page (it reloads
// itself) until it is done, reads its claim, plot and tables, checks that
// nothing runs past the edge of a 360 px screen, and opens a run on the
// stage. Screenshots: artifacts/experiment.png, experiment-360px.png,
// experiment-run.png.
func TestBrowserExperiment(t *testing.T) {
	b := startBrowserLab(t, false)
	file := filepath.Join(t.TempDir(), "tiny.experiment")
	if err := os.WriteFile(file, []byte(tinyExperiment), 0o644); err != nil {
		t.Fatal(err)
	}
	b.viewport(1366, 768, false)
	b.open("/experiments", false)
	if n := eval[int](b, `document.querySelectorAll('[data-testid="experiment-form"] input[name="study"]').length`); n != 5 {
		t.Fatalf("%d study choices; want the 4 built-in studies and one's own file", n)
	}
	if err := chromedp.Do(b.ctx, chromedp.Click(chromedp.CSS(`input[name="study"][value=""]`)),
		chromedp.SetUploadFiles(chromedp.CSS(`input[name="file"]`), []string{file})); err != nil {
		t.Fatal(err)
	}
	b.click(`[data-testid="experiment-form"] button[type="submit"]`)
	done := `location.pathname.startsWith("/experiments/") && document.querySelector('[data-testid="experiment-claims"]') !== null &&
		document.querySelector('meta[http-equiv="refresh"]') === null`
	b.awaitReloading(done, "the experiment", "failed-experiment", 90*time.Second)
	if n := eval[int](b, `document.querySelectorAll('[data-testid="experiment-claims"] li.good').length`); n != 1 {
		t.Errorf("%d claims hold; want 1", n)
	}
	b.poll(`[...document.querySelectorAll('.exp-plot img')].every(i => i.complete && i.naturalWidth > 0) && document.querySelectorAll('.exp-plot img').length === 1`, "the plot")
	if n := eval[int](b, `document.querySelectorAll('[data-testid="experiment-runs"] tbody tr').length`); n != 2 {
		t.Errorf("%d runs in the table; want 2", n)
	}
	b.poll(`document.documentElement.scrollWidth <= 1366`, "the page within 1366 px")
	b.shot("experiment")
	b.viewport(360, 740, true)
	b.poll(`document.documentElement.scrollWidth <= 360`, "the page within 360 px")
	b.shot("experiment-360px")
	b.viewport(1366, 768, false)
	b.click(`[data-testid="experiment-runs"] tbody tr:last-child a`)
	b.poll(`location.pathname.endsWith("/runs/1") && document.querySelector('#panel[data-status="live"]') !== null`, "the run's playback")
	if got := eval[string](b, `document.getElementById("panel-status").textContent`); got != "playback" {
		t.Errorf("a recorded run's stage says %q, want playback", got)
	}
	b.shot("experiment-run")
}
