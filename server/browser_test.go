package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"tidemark/events"
	"tidemark/server/cluster"
	"tidemark/static"
)

// The browser tests run the real server and cluster on free loopback ports
// and drive the pages in headless Chromium: no part is mocked. Each test is
// bounded (browserTimeout) and saves screenshots to artifacts/.

// browserTimeout bounds one browser test, browser start to shutdown.
const browserTimeout = 3 * time.Minute

// chromiumPath finds the browser for the end-to-end test. Without one the
// test skips locally but fails when CI=true: CI installs chromium.
func chromiumPath(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("Chromium not found but CI=true: install the Debian package chromium")
	}
	t.Skip("Chromium not found; install the Debian package chromium to run the browser test")
	return ""
}

var (
	staticOnce sync.Once
	staticDir  string
	staticErr  error
)

// buildStatic writes the static tree with a freshly built panel into a temp
// dir (once per test binary), so the tests check the panel as it is now,
// whether or not `go tool task wasm` ran before.
func buildStatic(t testing.TB) string {
	t.Helper()
	staticOnce.Do(func() { staticDir, staticErr = buildStaticDir() })
	if staticErr != nil {
		t.Fatal(staticErr)
	}
	return staticDir
}

func buildStaticDir() (string, error) {
	dir, err := os.MkdirTemp("", "tidemark-static-")
	if err != nil {
		return "", err
	}
	if err := os.CopyFS(dir, static.FS); err != nil {
		return "", err
	}
	// TIDEMARK_EXTRA_CSS appends rules to app.css: to measure what a style
	// costs without rebuilding the test binary.
	if extra := os.Getenv("TIDEMARK_EXTRA_CSS"); extra != "" {
		css := filepath.Join(dir, "app.css")
		b, err := os.ReadFile(css)
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(css, append(b, "\n"+extra+"\n"...), 0o644); err != nil {
			return "", err
		}
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("go command not found: %v", err)
	}
	out, err := exec.Command(goBin, "env", "GOROOT").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOROOT: %v", err)
	}
	execJS, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "lib", "wasm", "wasm_exec.js"))
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "wasm", "wasm_exec.js"), execJS, 0o644); err != nil {
		return "", err
	}
	// The flags of Taskfile.yml's wasm task.
	ld := "-ldflags=-s -w"
	if os.Getenv("TIDEMARK_WASM_NAMES") != "" {
		ld = "-ldflags=" // keep the names, for a profile
	}
	cmd := exec.Command(goBin, "build", "-trimpath", ld, "-gcflags=tidemark/...=-l", "-o", filepath.Join(dir, "wasm", "panel.wasm"), "./wasm")
	cmd.Dir = ".." // the module root
	cmd.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the panel: %v\n%s", err, out)
	}
	return dir, nil
}

// browserLab is a running lab with a headless Chromium on its pages.
type browserLab struct {
	t   testing.TB
	url string
	cl  *cluster.Cluster
	ctx context.Context // the browser tab
}

// startBrowserLab starts the lab (clock paused if paused) and a browser, and
// stops both when the test ends; extra adds Chromium flags.
func startBrowserLab(t testing.TB, paused bool) *browserLab {
	t.Helper()
	chromium := chromiumPath(t)
	dir := buildStatic(t)
	args := []string{"--addr", "127.0.0.1:0", "--kafka-port", "0", "--data-dir", t.TempDir()}
	if paused {
		args = append(args, "--paused")
	}
	cfg, err := parseFlags(args, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg.static = os.DirFS(dir)
	cfg.logger = quietLogger()

	ctx, cancel := context.WithTimeout(context.Background(), browserTimeout)
	t.Cleanup(cancel)
	serverCtx, stopServer := context.WithCancel(ctx)
	type started struct {
		url string
		cl  *cluster.Cluster
	}
	ready := make(chan started, 1)
	var out bytes.Buffer // written by run before ready
	runErr := make(chan error, 1)
	go func() {
		runErr <- run(serverCtx, cfg, &out, func(url string, cl *cluster.Cluster) { ready <- started{url, cl} })
	}()
	var srv started
	select {
	case srv = <-ready:
	case err := <-runErr:
		t.Fatalf("server did not start: %v", err)
	}
	t.Cleanup(func() {
		stopServer()
		if err := <-runErr; err != nil {
			t.Errorf("server shutdown: %v", err)
		}
	})

	opts := chromeOptions(t, chromium, 1280, 1000)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancelBrowser := chromedp.NewContext(allocCtx)
	t.Cleanup(func() { cancelBrowser(); cancelAlloc() })

	// Keep what the page logs, to show it if the test fails.
	var (
		consoleMu sync.Mutex
		console   []string
	)
	messages := chromedp.Console(bctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			consoleMu.Lock()
			console = append(console, m.String())
			consoleMu.Unlock()
		}
	}()
	t.Cleanup(func() {
		if t.Failed() {
			consoleMu.Lock()
			defer consoleMu.Unlock()
			for _, m := range console {
				t.Log("browser console:", m)
			}
		}
	})
	return &browserLab{t: t, url: srv.url, cl: srv.cl, ctx: bctx}
}

// open loads a page of the lab and, if it has the panel, waits until it is live.
func (b *browserLab) open(path string, panel bool) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, chromedp.Navigate(b.url+strings.TrimPrefix(path, "/"))); err != nil {
		b.t.Fatalf("open %s: %v", path, err)
	}
	if panel {
		b.poll(`document.querySelector('#panel[data-status="live"]') !== null`, "the panel to report live")
	}
}

// poll waits (at most 30s) until the JavaScript expression is true. A poll
// that a navigation interrupts (a link, a form) starts again on the new page.
func (b *browserLab) poll(expr, what string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	var err error
	for range 5 {
		_, err = chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(20*time.Millisecond)))
		if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "context") && !strings.Contains(err.Error(), "navigated") {
			break
		}
		time.Sleep(50 * time.Millisecond) // the new page's context is being made
	}
	if err != nil {
		b.shot("failed-" + strings.NewReplacer(" ", "-", "/", "-").Replace(b.t.Name()))
		b.t.Fatalf("waiting for %s: %v\n(expression %s)", what, err, expr)
	}
}

// awaitReloading waits (at most limit) until expr is true on a page that
// reloads itself every second while a run goes on (a meta refresh): each
// reload can interrupt an evaluation, so it asks again. what names the
// run in the failure, shot the screenshot taken then.
func (b *browserLab) awaitReloading(expr, what, shot string, limit time.Duration) {
	b.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		ctx, cancel := context.WithTimeout(b.ctx, 2*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		cancel()
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			b.shot(shot)
			b.t.Fatalf("%s did not finish in %v (last error %v)", what, limit, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// eval returns the value of a JavaScript expression.
func eval[T any](b *browserLab, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// click clicks the element the CSS selector finds.
//
// The panel may replace the element between chromedp finding it and
// clicking it (CDP then answers "Could not find node with given id"): the
// click is tried again, the element queried afresh, a few times.
func (b *browserLab) click(sel string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	if err := clickFresh(ctx, sel); err != nil {
		b.t.Fatalf("click %s: %v", sel, err)
	}
}

// clickFresh clicks the element sel finds, again (queried afresh) when the
// page replaced it in between, up to 5 times. The node is looked up
// before any mouse event is sent, so a stale node was never clicked.
func clickFresh(ctx context.Context, sel string) error {
	var err error
	for range 5 {
		if err = chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel))); err == nil || !staleNode(err) {
			break
		}
	}
	return err
}

// staleNode reports whether err is CDP's answer about a node the page
// removed or replaced since it was queried.
func staleNode(err error) bool {
	s := err.Error()
	return strings.Contains(s, "Could not find node with given id") || strings.Contains(s, "No node with given id") ||
		strings.Contains(s, "Node is detached") || strings.Contains(s, "node is not attached")
}

// shotWait bounds each step of a screenshot. A screenshot is only evidence
// for whoever reads a failure: one that cannot be taken in this time is
// skipped with a log line, so the test's own message comes out rather
// than a hang until browserTimeout (a page with JavaScript off runs no
// animation frame callbacks, which the lanes' rendering waited for).
const shotWait = 5 * time.Second

// shotRun runs one step of screenshot name, bounded by shotWait; on an
// error it logs it and returns false.
func shotRun[T any](b *browserLab, name string, a chromedp.Action[T]) (T, bool) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, shotWait)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		b.t.Logf("screenshot %s: skipped: %v", name, err)
		return v, false
	}
	return v, true
}

// shot saves a full-page screenshot as artifacts/<name>.png. The lane
// figures out of view, which the page does not render (static/panel.js),
// are rendered first, so the picture shows the whole page; without any
// (no panel, or JavaScript off) no frame is waited for.
func (b *browserLab) shot(name string) {
	b.t.Helper()
	// Not rendered, the lanes out of view are blank in the picture: still
	// worth taking.
	shotRun(b, name+" (rendering the lanes)", chromedp.Evaluate[bool](`(() => {
  const figs = document.querySelectorAll(".lane-fig[data-offscreen]");
  if (figs.length === 0) return true;
  figs.forEach(f => delete f.dataset.offscreen);
  return new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() => done(true))));
})()`, chromedp.EvalAwaitPromise))
	if png, ok := shotRun(b, name, chromedp.FullScreenshot(100)); ok {
		b.save(name, png)
	}
}

// save writes a screenshot as artifacts/<name>.png.
func (b *browserLab) save(name string, png []byte) {
	b.t.Helper()
	art := filepath.Join("..", "artifacts")
	if err := os.MkdirAll(art, 0o755); err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(art, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// shotOf saves a screenshot of the element sel finds as artifacts/<name>.png.
func (b *browserLab) shotOf(sel, name string) {
	b.t.Helper()
	if png, ok := shotRun(b, name, chromedp.Screenshot(chromedp.CSS(sel))); ok {
		b.save(name, png)
	}
}

// shotInView saves what sel finds as the learner sees it, scrolled into
// view (in its scrolling boxes too) and clipped to what of it they show,
// as artifacts/<name>.png. chromedp.Screenshot captures beyond the
// viewport, which lays the page out again at its full height: boxes sized
// in vh (the stage's lanes box, which holds the charts) grow and what is
// in them moves, so its clip caught the lanes instead of the charts.
func (b *browserLab) shotInView(sel, name string) {
	b.t.Helper()
	clip, ok := shotRun(b, name+" (scrolling it into view)", chromedp.Evaluate[page.Viewport](`(() => {
  const el = document.querySelector(`+strconv.Quote(sel)+`);
  el.scrollIntoView({block: "start", inline: "nearest"});
  let r = el.getBoundingClientRect(), top = r.top, left = r.left, bottom = r.bottom, right = r.right;
  for (let a = el.parentElement; a; a = a.parentElement) {
    if (getComputedStyle(a).overflow === "visible") continue;
    const c = a.getBoundingClientRect();
    top = Math.max(top, c.top); left = Math.max(left, c.left); bottom = Math.min(bottom, c.bottom); right = Math.min(right, c.right);
  }
  bottom = Math.min(bottom, innerHeight); right = Math.min(right, innerWidth);
  return {x: Math.round(left + scrollX), y: Math.round(top + scrollY), width: Math.round(right - left), height: Math.round(bottom - top), scale: 1};
})()`))
	if !ok {
		return
	}
	if clip.Width <= 0 || clip.Height <= 0 {
		b.t.Errorf("screenshot %s: %s is not in view (%+v)", name, sel, clip)
		return
	}
	beyond := false
	capture := func(ctx context.Context, tg *chromedp.Target) ([]byte, error) {
		res, err := cdp.Call(ctx, tg, page.CaptureScreenshot, page.CaptureScreenshotParams{
			Format: page.CaptureScreenshotFormatPng, Clip: &clip, CaptureBeyondViewport: &beyond})
		if err != nil {
			return nil, err
		}
		return res.Data, nil
	}
	if png, ok := shotRun(b, name, chromedp.Action[[]byte](capture)); ok {
		b.save(name, png)
	}
}

// api sends one API request to the lab and decodes its 200 answer into v.
func (b *browserLab) api(method, path, body string, v any) {
	b.t.Helper()
	apiCall(b.t, b.url, method, path, body, v)
}

// lane is the selector of broker's lane of demo-p in the panel.
func lane(p int, broker int32) string {
	return `#lanes g.replica[data-topic="demo"][data-partition="` + strconv.Itoa(p) + `"][data-broker="` + strconv.Itoa(int(broker)) + `"]`
}

// recs is the selector of the accessible list of records of demo-p's
// lane on broker in the panel (its cells are drawn on a canvas).
func recs(p int, broker int32) string {
	return `#lanes .lane-recs[data-topic="demo"][data-partition="` + strconv.Itoa(p) + `"][data-broker="` + strconv.Itoa(int(broker)) + `"]`
}

// cellPixel is a JavaScript expression: the [r, g, b, a] that demo-p's
// canvas holds inside the box of broker's record at offset (6 px in from
// its left edge, 10 up from its bottom: clear of its texts and band),
// placed from the lane's LEO marker in the SVG.
func cellPixel(p int, broker int32, offset int64) string {
	return `((f, off) => {
  const g = f.querySelector('g.replica[data-broker="` + strconv.Itoa(int(broker)) + `"]'), leo = +g.dataset.leo;
  const lx = parseFloat(g.querySelector("g.marker.leo").getAttribute("transform").slice(10));
  const y = parseFloat(g.getAttribute("transform").split(",")[1]);
  const cv = f.querySelector("canvas.lane-canvas"), k = cv.width / parseFloat(cv.style.width);
  return [...cv.getContext("2d").getImageData(Math.round((lx - (leo - off) * 40 + 6) * k), Math.round((y + 44) * k), 1, 1).data];
})(document.querySelector('` + fig(p) + `'), ` + strconv.FormatInt(offset, 10) + `)`
}

// axNames returns the names of the nodes of the page's accessibility
// tree that are not ignored, as a screen reader finds them: the lanes'
// records are there only through their lists.
func (b *browserLab) axNames() []string {
	b.t.Helper()
	got, err := chromedp.Run(b.ctx, func(ctx context.Context, tg *chromedp.Target) ([]string, error) {
		r, err := cdp.Call(ctx, tg, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
		if err != nil {
			return nil, err
		}
		var names []string
		for _, n := range r.Nodes {
			var name string
			if !n.Ignored && n.Name != nil && json.Unmarshal(n.Name.Value, &name) == nil && name != "" {
				names = append(names, name)
			}
		}
		return names, nil
	})
	if err != nil {
		b.t.Fatalf("the accessibility tree: %v", err)
	}
	return got
}

// fig is the selector of demo-p's figure in the panel.
func fig(p int) string {
	return `#lanes figure[data-topic="demo"][data-partition="` + strconv.Itoa(p) + `"]`
}

// TestBrowserPanel walks the overview as a learner: three brokers; produce
// with acks=all from the page's form and see every replica's HW advance in
// the panel; crash the leader from its button and see a new leader and
// leader epoch; restart it and see it rejoin the ISR; step back through
// the timeline and return to live; the reduced-motion and keyboard
// behaviour; switch the language and see Chinese labels.
func TestBrowserPanel(t *testing.T) {
	b := startBrowserLab(t, false)
	b.open("/", true)
	b.poll(`document.querySelectorAll("#panel-brokers .broker-card").length === 3`, "three broker cards in the panel")
	if n := eval[int](b, `document.querySelectorAll("#brokers tbody tr").length`); n != 3 {
		t.Fatalf("server-rendered table has %d brokers, want 3", n)
	}
	b.poll(`document.querySelectorAll('`+fig(0)+` g.replica').length === 3`, "three lanes of demo-0")

	// Produce with acks=all through the page's form (the panel sends it).
	if err := chromedp.Do(b.ctx,
		chromedp.SetValue(chromedp.CSS("#produce-partition"), "0"),
		chromedp.SetValue(chromedp.CSS("#produce-count"), "3"),
		chromedp.SetValue(chromedp.CSS("#produce-acks"), "all"),
	); err != nil {
		t.Fatal(err)
	}
	b.click("#produce-form button[type=submit]")
	b.poll(`(document.querySelector("#flash .flash.ok")||{}).textContent?.includes("acks=all")`, "the produce to be acknowledged")
	snap := b.cl.Snapshot()
	p0 := snap.Partition("demo", 0)
	for _, r := range p0.Replicas {
		b.poll(`document.querySelector('`+lane(0, r)+`[data-hw="3"]') !== null`, fmt.Sprintf("broker %d's HW to reach 3 in the panel", r))
	}
	b.poll(`document.querySelectorAll('`+recs(0, p0.Leader)+` .rec.committed').length === 3`, "three committed records on the leader")
	b.shot("1-produced-acks-all")
	b.shotOf(fig(0), "1-produced-lanes")

	// Crash the leader with its button: a new leader and a new leader epoch.
	leader, epoch := p0.Leader, p0.LeaderEpoch
	b.click(`[data-testid="node-` + strconv.Itoa(int(leader)) + `"] > summary`) // the stage's broker menu
	b.click(`[data-testid="node-` + strconv.Itoa(int(leader)) + `"] form[data-action="crash"] button`)
	b.poll(`(()=>{const f=document.querySelector('`+fig(0)+`');return f && +f.dataset.leader>0 && +f.dataset.leader!==`+strconv.Itoa(int(leader))+` && +f.dataset.epoch>`+strconv.Itoa(int(epoch))+`})()`,
		"a new leader and leader epoch for demo-0")
	b.poll(`document.querySelector('#panel-brokers .broker-card.state-crashed[data-broker="`+strconv.Itoa(int(leader))+`"]') !== null`, "the crashed broker's card")
	b.shot("2-leader-crashed")

	// Restart it: it recovers, catches up and rejoins the ISR.
	// The menu closed after the crash; opened again it offers a restart.
	b.click(`[data-testid="node-` + strconv.Itoa(int(leader)) + `"] > summary`)
	b.click(`[data-testid="node-` + strconv.Itoa(int(leader)) + `"] form[data-action="restart"] button`)
	b.poll(`(document.querySelector('`+fig(0)+`')||{dataset:{}}).dataset.isr?.split(/[\[\] ]/).includes("`+strconv.Itoa(int(leader))+`")`,
		fmt.Sprintf("broker %d to rejoin the ISR of demo-0", leader))
	b.poll(`document.querySelector('`+lane(0, leader)+`:not(.osr)') !== null`, "the restarted broker's lane marked ISR")
	b.shot("3-rejoined")

	// The timeline: step back, the lanes show an older state; then live.
	for range 3 {
		b.click("#tl-back")
	}
	b.poll(`(()=>{const p=document.getElementById("panel").dataset;return p.mode==="past" && +p.viewSeq < +p.seq})()`, "the timeline to show the past")
	b.poll(`document.querySelector("#panel-events li.cursor") !== null`, "the event shown marked in the list")
	b.shot("4-timeline-past")
	b.click("#tl-live")
	b.poll(`(()=>{const p=document.getElementById("panel").dataset;return p.mode==="live" && p.viewSeq === p.seq})()`, "the timeline back at live")

	// A fresh event is highlighted by an animation…
	var clock struct {
		LastSeq uint64 `json:"last_seq"`
	}
	b.api("POST", "api/v1/clock/pause", "", &clock)
	sel := `#panel-events li[data-seq="` + strconv.FormatUint(clock.LastSeq, 10) + `"]`
	b.poll(`document.querySelector('`+sel+`') !== null`, "the pause event in the list")
	if name := eval[string](b, `getComputedStyle(document.querySelector('`+sel+`')).animationName`); name != "arrive" {
		t.Fatalf("new event animation = %q, want arrive", name)
	}
	// … which a reader who prefers reduced motion does not get, in the list
	// or the lanes.
	reduceMotion := func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-reduced-motion", Value: "reduce"}},
		})
		return chromedp.Void{}, err
	}
	if err := chromedp.Do(b.ctx, reduceMotion); err != nil {
		t.Fatalf("emulating prefers-reduced-motion: %v", err)
	}
	b.api("POST", "api/v1/clock/resume", "", &clock)
	sel = `#panel-events li[data-seq="` + strconv.FormatUint(clock.LastSeq, 10) + `"]`
	b.poll(`document.querySelector('`+sel+`') !== null`, "the resume event in the list")
	if name := eval[string](b, `getComputedStyle(document.querySelector('`+sel+`')).animationName`); name != "none" {
		t.Fatalf("with prefers-reduced-motion the animation is %q, want none", name)
	}
	b.api("POST", "api/v1/topics/demo/records", `{"partition":0,"acks":"all","records":[{"value":"calm"}]}`, nil)
	b.poll(`document.querySelector('`+lane(0, leader)+`[data-hw="4"]') !== null`, "the HW after a produce under reduced motion")
	if n := eval[int](b, `document.querySelectorAll('#lanes .new, #lanes .moved, #lanes .elected, #lanes .fetch-arrow').length`); n != 0 {
		t.Fatalf("%d animated lane elements under reduced motion", n)
	}
	// A write to the lanes that fails (a bug) is logged, and the next frame
	// draws the lanes afresh: the panel keeps going.
	eval[bool](b, `(() => { const apply = tidemarkDOM.apply; tidemarkDOM.apply = () => { tidemarkDOM.apply = apply; return false; }; return true; })()`)
	b.api("POST", "api/v1/topics/demo/records", `{"partition":0,"acks":"all","records":[{"value":"again"}]}`, nil)
	b.poll(`[...document.querySelectorAll('`+recs(0, leader)+` .rec.committed')].map(g => +g.dataset.offset).sort((x, y) => x - y).join() === "0,1,2,3,4"`,
		"every record once in the lanes drawn afresh after a failed write")

	// The pause control works from the keyboard: focus it, press Enter, Space.
	pressed := func() string {
		return eval[string](b, `document.getElementById("panel-pause").getAttribute("aria-pressed")`)
	}
	if err := chromedp.Do(b.ctx, chromedp.Focus(chromedp.CSS("#panel-pause")), chromedp.KeyEvent("\r")); err != nil {
		t.Fatalf("keyboard on the pause button: %v", err)
	}
	if p := pressed(); p != "true" {
		t.Fatalf("after Enter aria-pressed = %q, want true", p)
	}
	if err := chromedp.Do(b.ctx, chromedp.KeyEvent(" ")); err != nil {
		t.Fatal(err)
	}
	if p := pressed(); p != "false" {
		t.Fatalf("after Space aria-pressed = %q, want false", p)
	}

	// Switch the language: the choice persists, pages and panel speak it.
	b.click(`.langs a[data-lang="zh-Hans"]`)
	b.poll(`document.documentElement.lang === "zh-Hans" && document.querySelector('#panel[data-status="live"]') !== null`, "the page in Simplified Chinese")
	for sel, want := range map[string]string{"h1": "集群", "#brokers-h": "Broker 列表", "#panel-status": "实时", "#produce-form legend": "生产"} {
		if got := eval[string](b, `document.querySelector('`+sel+`').textContent`); !strings.Contains(got, want) {
			t.Errorf("%s reads %q, want %q", sel, got, want)
		}
	}
	b.poll(`document.querySelector("#panel-brokers .broker-card .badge")?.textContent.includes("运行中")`, "broker cards in Chinese")
	// An event's message in the page's language: the fencing rule changes
	// and changes back.
	rule := b.cl.FencingRule()
	b.api("PUT", "api/v1/cluster/fencing-rule", `{"rule":"zookeeper"}`, nil)
	b.api("PUT", "api/v1/cluster/fencing-rule", `{"rule":"`+rule+`"}`, nil)
	b.poll(`document.querySelector("#panel-events").textContent.includes("隔离规则（fencing.rule）现在是 zookeeper（之前是 `+rule+`）")`, "event messages in Chinese")
	b.shotOf("#panel-events", "5-events-zh-Hans")
	if got := eval[string](b, `document.querySelector("#tl-live").textContent`); got != "回到实时" {
		t.Errorf("timeline button reads %q", got)
	}
	b.open("/topics/demo/partitions/0", true)
	if got := eval[string](b, `document.querySelector("h1").textContent`); !strings.Contains(got, "分区 demo-0") {
		t.Errorf("partition page title %q, want it in Chinese", got)
	}
	b.shot("5-partition-zh-Hans")
	b.open("/", true)
	b.shot("6-overview-zh-Hans")
}

// TestBrowserTruncation drives the cluster into a real truncation under the
// high-watermark rule (KIP-101's hazard, on a paused clock with stepped
// fetches) and sees the truncated record struck out where it was: in the
// panel's lanes, on the partition page and in its truncation list; the
// timeline shows the lanes before it happened; the segment explorer walks a
// lookup on the new leader.
func TestBrowserTruncation(t *testing.T) {
	b := startBrowserLab(t, true)
	b.open("/topics/demo/partitions/0", true)

	// The rule, set from the page's config form.
	if err := chromedp.Do(b.ctx, chromedp.SetValue(chromedp.CSS("#cfg-trunc"), "high-watermark")); err != nil {
		t.Fatal(err)
	}
	b.click("#config-form button[type=submit]")
	b.poll(`document.querySelector("#flash .flash.ok") !== null`, "the config change")
	if snap := b.cl.Snapshot(); snap.Topic("demo").Configs["truncation.rule"] != "high-watermark" {
		got := snap.Topic("demo").Configs["truncation.rule"]
		t.Fatalf("truncation.rule = %q", got)
	}

	snap := b.cl.Snapshot()
	p0 := snap.Partition("demo", 0)
	leader := p0.Leader
	var followers []int32
	for _, r := range p0.Replicas {
		if r != leader {
			followers = append(followers, r)
		}
	}
	fetch := func(ids ...int32) {
		for _, id := range ids {
			b.api("POST", "api/v1/brokers/"+strconv.Itoa(int(id))+"/fetch", "", nil)
		}
	}
	// m1 is committed everywhere; m2 reaches every log, but only the
	// leader learns that it is committed.
	b.api("POST", "api/v1/topics/demo/records", `{"partition":0,"acks":"1","records":[{"value":"m1"}]}`, nil)
	for range 3 {
		fetch(followers...)
	}
	b.api("POST", "api/v1/topics/demo/records", `{"partition":0,"acks":"1","records":[{"value":"m2"}]}`, nil)
	fetch(followers...)
	fetch(followers...)
	b.poll(`document.querySelectorAll('#lanes figure[data-partition="0"] g.replica[data-leo="2"]').length === 3`, "m2 on every replica")
	before := b.cl.Bus().LastSeq()

	// The leader dies; the controller elects a follower, and the other one,
	// now a follower of a new epoch, truncates to its own HW (1): m2 goes.
	b.api("POST", "api/v1/brokers/"+strconv.Itoa(int(leader))+"/crash", "", nil)
	b.api("POST", "api/v1/clock/step", `{"ms":2100}`, nil)
	var trunc *events.Event
	evs, _ := b.cl.Bus().Since(before, 0)
	for i, e := range evs {
		if e.Kind == events.KindTruncation && e.Topic == "demo" && e.Partition == 0 {
			trunc = &evs[i]
		}
	}
	if trunc == nil || len(trunc.Truncated) == 0 {
		t.Fatalf("no truncation after the leader died; events: %+v", evs)
	}
	victim, off := trunc.Broker, trunc.Truncated[0].Offset
	ghost := recs(0, victim) + ` .ghost[data-offset="` + strconv.FormatInt(off, 10) + `"]`
	b.poll(`document.querySelector('`+ghost+`') !== null`, fmt.Sprintf("broker %d's truncated offset %d struck out in the panel", victim, off))
	b.shot("7-truncation-panel")
	b.shotOf(fig(0), "7-truncation-lanes")

	// The timeline: just before the truncation, the record was still there.
	// Back steps over messages in flight (they change nothing), so step
	// until the state shown is older than the truncation.
	older := `+document.getElementById("panel").dataset.viewSeq < ` + strconv.FormatUint(trunc.Seq, 10)
	for i := 0; i < 200 && !eval[bool](b, older); i++ {
		b.click("#tl-back")
	}
	b.poll(older, "the timeline just before the truncation")
	b.poll(`document.querySelector('`+ghost+`') === null && document.querySelector('`+recs(0, victim)+` .rec[data-offset="`+strconv.FormatInt(off, 10)+`"]') !== null`,
		"the record in its place before the truncation")
	b.shot("8-timeline-before-truncation")
	b.click("#tl-live")
	b.poll(`document.querySelector('`+ghost+`') !== null`, "the truncated record again at live")

	// The partition page shows it server-side: struck out where it was.
	b.open("/topics/demo/partitions/0", true)
	srvGhost := `#server-lanes section.lane[data-broker="` + strconv.Itoa(int(victim)) + `"] li.cell.ghost[data-offset="` + strconv.FormatInt(off, 10) + `"] del`
	if n := eval[int](b, `document.querySelectorAll('`+srvGhost+`').length`); n != 1 {
		t.Fatalf("partition page: %d struck-out records at offset %d of broker %d", n, off, victim)
	}
	if n := eval[int](b, `document.querySelectorAll('#truncations li[data-broker="`+strconv.Itoa(int(victim))+`"] del').length`); n == 0 {
		t.Fatal("partition page lists no truncated record")
	}
	b.shot("9-truncation-partition-page")
	b.shotOf("#server-lanes", "9-truncation-server-lanes")

	// The segment explorer of the new leader walks a lookup of offset 1.
	snap = b.cl.Snapshot()
	newLeader := snap.Partition("demo", 0).Leader
	b.open("/brokers/"+strconv.Itoa(int(newLeader))+"/partitions/demo/0/segments?offset=1", false)
	if got := eval[string](b, `(document.querySelector("#lookup-found")||{}).textContent||""`); !strings.Contains(got, "batch of offsets 1–1") {
		t.Fatalf("lookup result %q", got)
	}
	b.shot("10-segments-lookup")
}

// apiCall sends one API request to the running lab and decodes its 200 answer into v.
func apiCall(t testing.TB, base, method, path, body string, v any) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s = %d %s", method, path, resp.StatusCode, b)
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
}

// chromeOptions are the flags every browser test starts headless Chromium
// with, in a fresh profile: the machine's network is closed, so background
// networking, QUIC, component updates and sync are off.
func chromeOptions(t testing.TB, chromium string, width, height int) []chromedp.ExecAllocatorOption {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(width, height),
	)
	// TIDEMARK_CHROME_FLAGS adds flags ("name" or "name=value", spaces
	// between) or, as "-name", drops one: to measure what a flag costs.
	for _, f := range strings.Fields(os.Getenv("TIDEMARK_CHROME_FLAGS")) {
		if name, ok := strings.CutPrefix(f, "-"); ok {
			opts = append(opts, chromedp.Flag(name, false))
			continue
		}
		name, value, ok := strings.Cut(f, "=")
		if ok {
			opts = append(opts, chromedp.Flag(name, value))
		} else {
			opts = append(opts, chromedp.Flag(name, true))
		}
	}
	return opts
}

// TestBrowserShotWithoutScripts: with JavaScript off, a page runs no
// animation frame callbacks, which shot waited for to render the lanes:
// a failing no-JS test hung until browserTimeout instead of showing its
// message. shot, shotOf and shotInView now take their pictures of such a
// page at once, and a step that cannot finish (here a promise that never
// settles) is skipped after shotWait, the tab still usable after it.
func TestBrowserShotWithoutScripts(t *testing.T) {
	b := startBrowserLab(t, true)
	b.noScripts()
	b.open("/", false)
	start := time.Now()
	if _, ok := shotRun(b, "never", chromedp.Evaluate[bool](`new Promise(() => {})`, chromedp.EvalAwaitPromise)); ok {
		t.Errorf("a promise that never settles settled")
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("a step that never finishes took %v to be skipped", d.Round(time.Second))
	}
	for _, c := range []struct {
		name  string
		shoot func(name string)
	}{
		{"noscript-page", b.shot},
		{"noscript-main", func(name string) { b.shotOf("main", name) }},
		{"noscript-main-in-view", func(name string) { b.shotInView("main", name) }},
	} {
		start := time.Now()
		c.shoot(c.name)
		if d := time.Since(start); d > 15*time.Second {
			t.Errorf("%s with JavaScript off took %v", c.name, d.Round(time.Second))
		}
		if fi, err := os.Stat(filepath.Join("..", "artifacts", c.name+".png")); err != nil || fi.ModTime().Before(start.Add(-time.Second)) {
			t.Errorf("%s with JavaScript off was not saved: %v", c.name, err)
		}
	}
}
