package server

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"tidemark/events"
	"tidemark/static"
)

// chromiumPath finds the browser for the end-to-end test. Without one the
// test skips locally but fails when CI=true: CI installs chromium.
func chromiumPath(t *testing.T) string {
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

// buildStatic writes the static tree with a freshly built panel into a temp
// dir, so the test checks the panel as it is now, whether or not `go tool
// task wasm` ran before.
func buildStatic(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, static.FS); err != nil {
		t.Fatal(err)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go command not found: %v", err)
	}
	out, err := exec.Command(goBin, "env", "GOROOT").Output()
	if err != nil {
		t.Fatalf("go env GOROOT: %v", err)
	}
	execJS, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "lib", "wasm", "wasm_exec.js"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "wasm", "wasm_exec.js"), execJS, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(goBin, "build", "-trimpath", "-ldflags=-s -w", "-o", filepath.Join(dir, "wasm", "panel.wasm"), "./wasm")
	cmd.Dir = ".." // the module root
	cmd.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the panel: %v\n%s", err, out)
	}
	return dir
}

// TestBrowserPanel starts the real server on a random loopback port, loads the
// overview in headless Chromium, waits for the WASM panel to report live,
// publishes an event and sees it appear in the panel, and saves a screenshot
// to artifacts/.
func TestBrowserPanel(t *testing.T) {
	chromium := chromiumPath(t)
	staticDir := buildStatic(t)

	cfg, err := parseFlags([]string{"--addr", "127.0.0.1:0", "--data-dir", t.TempDir()}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg.static = os.DirFS(staticDir)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	serverCtx, stopServer := context.WithCancel(ctx)
	type startedLab struct {
		url string
		lab *staticLab
	}
	started := make(chan startedLab, 1)
	var out bytes.Buffer // written by run before started is called
	runErr := make(chan error, 1)
	go func() {
		runErr <- run(serverCtx, cfg, &out, func(url string, lab *staticLab) { started <- startedLab{url, lab} })
	}()
	var srv startedLab
	select {
	case srv = <-started:
	case err := <-runErr:
		t.Fatalf("server did not start: %v", err)
	}
	defer func() {
		stopServer()
		if err := <-runErr; err != nil {
			t.Errorf("server shutdown: %v", err)
		}
	}()

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
		chromedp.WindowSize(1200, 1000),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()

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
	defer func() {
		if t.Failed() {
			consoleMu.Lock()
			defer consoleMu.Unlock()
			for _, m := range console {
				t.Log("browser console:", m)
			}
		}
	}()

	if err := chromedp.Do(bctx,
		chromedp.Navigate(srv.url),
		chromedp.WaitVisible(chromedp.CSS(`#panel[data-status="live"]`)),
	); err != nil {
		t.Fatalf("panel never reported live: %v", err)
	}
	n, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("#panel-brokers .broker-card").length`))
	if err != nil || n != 3 {
		t.Fatalf("panel shows %d brokers (err %v), want 3", n, err)
	}
	rows, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("#brokers tbody tr").length`))
	if err != nil || rows != 3 {
		t.Fatalf("server-rendered table has %d brokers (err %v), want 3", rows, err)
	}

	const marker = "hello from the browser test"
	ev := srv.lab.publish(events.Event{Kind: events.KindFault, Broker: 2, Fault: &events.Fault{Kind: events.FaultCrash}, Message: marker})
	sel := `#panel-events li[data-seq="` + strconv.FormatUint(ev.Seq, 10) + `"]`
	if err := chromedp.Do(bctx, chromedp.WaitVisible(chromedp.CSS(sel))); err != nil {
		t.Fatalf("event %d never appeared in the panel: %v", ev.Seq, err)
	}
	text, err := chromedp.Run(bctx, chromedp.TextContent(chromedp.CSS(sel)))
	if err != nil || !strings.Contains(text, marker) || !strings.Contains(text, "crash broker 2") {
		t.Fatalf("event text %q (err %v), want the crash and %q", text, err, marker)
	}
	// The crash shows on broker 2's card as well.
	if err := chromedp.Do(bctx, chromedp.WaitVisible(chromedp.CSS(`#panel-brokers .broker-card.state-crashed[data-broker="2"]`))); err != nil {
		t.Fatalf("broker 2 not shown crashed: %v", err)
	}

	// The fresh event is highlighted by an animation…
	anim := func(sel string) string {
		t.Helper()
		name, err := chromedp.Run(bctx, chromedp.Evaluate[string](`getComputedStyle(document.querySelector('`+sel+`')).animationName`))
		if err != nil {
			t.Fatalf("animation of %s: %v", sel, err)
		}
		return name
	}
	if name := anim(sel); name != "arrive" {
		t.Fatalf("new event animation = %q, want arrive", name)
	}
	// … which a reader who prefers reduced motion does not get.
	reduceMotion := func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-reduced-motion", Value: "reduce"}},
		})
		return chromedp.Void{}, err
	}
	if err := chromedp.Do(bctx, reduceMotion); err != nil {
		t.Fatalf("emulating prefers-reduced-motion: %v", err)
	}
	ev = srv.lab.publish(events.Event{Kind: events.KindClock, Broker: events.NoBroker, Clock: &events.ClockChange{Action: events.ClockPause}})
	sel = `#panel-events li[data-seq="` + strconv.FormatUint(ev.Seq, 10) + `"]`
	if err := chromedp.Do(bctx, chromedp.WaitVisible(chromedp.CSS(sel))); err != nil {
		t.Fatalf("event %d never appeared: %v", ev.Seq, err)
	}
	if name := anim(sel); name != "none" {
		t.Fatalf("with prefers-reduced-motion the animation is %q, want none", name)
	}

	// The pause control works from the keyboard: focus it, press Enter.
	pressed := func() string {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.getElementById("panel-pause").getAttribute("aria-pressed")`))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if err := chromedp.Do(bctx, chromedp.Focus(chromedp.CSS("#panel-pause")), chromedp.KeyEvent("\r")); err != nil {
		t.Fatalf("keyboard on the pause button: %v", err)
	}
	if p := pressed(); p != "true" {
		t.Fatalf("after Enter aria-pressed = %q, want true", p)
	}
	if err := chromedp.Do(bctx, chromedp.KeyEvent(" ")); err != nil {
		t.Fatal(err)
	}
	if p := pressed(); p != "false" {
		t.Fatalf("after Space aria-pressed = %q, want false", p)
	}

	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	art := filepath.Join("..", "artifacts")
	if err := os.MkdirAll(art, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(art, "overview-live.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Log(strings.TrimSpace(out.String()))
}
