package server

import (
	"bytes"
	"context"
	"encoding/json"
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

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"tidemark/events"
	"tidemark/server/cluster"
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

// TestBrowserPanel starts the real server and cluster on free loopback
// ports, loads the overview in headless Chromium, waits for the WASM panel to
// report live with three brokers, produces with acks=all through the API and
// sees the HW advance on every replica in the panel, crashes a broker through
// the API and sees it on its card, checks the reduced-motion and keyboard
// behaviour, and saves a screenshot to artifacts/.
func TestBrowserPanel(t *testing.T) {
	chromium := chromiumPath(t)
	staticDir := buildStatic(t)

	cfg, err := parseFlags([]string{"--addr", "127.0.0.1:0", "--kafka-port", "0", "--data-dir", t.TempDir()}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg.static = os.DirFS(staticDir)
	cfg.logger = quietLogger()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	serverCtx, stopServer := context.WithCancel(ctx)
	type startedLab struct {
		url string
		cl  *cluster.Cluster
	}
	started := make(chan startedLab, 1)
	var out bytes.Buffer // written by run before started is called
	runErr := make(chan error, 1)
	go func() {
		runErr <- run(serverCtx, cfg, &out, func(url string, cl *cluster.Cluster) { started <- startedLab{url, cl} })
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

	// Produce with acks=all through the API: the answer comes once the HW
	// passed the records, and the panel shows every replica's HW get there.
	var prod struct {
		Partition  int32 `json:"partition"`
		Leader     int32 `json:"leader"`
		LastOffset int64 `json:"last_offset"`
	}
	apiCall(t, srv.url, "POST", "api/v1/topics/demo/records",
		`{"partition":0,"acks":"all","records":[{"key":"k","value":"one"},{"key":"k","value":"two"},{"key":"k","value":"three"}]}`, &prod)
	if prod.Partition != 0 || prod.LastOffset != 2 {
		t.Fatalf("produce = %+v", prod)
	}
	hw := strconv.FormatInt(prod.LastOffset+1, 10)
	snap := srv.cl.Snapshot()
	for _, r := range snap.Partition("demo", 0).Replicas {
		chip := `#lanes .replica[data-topic="demo"][data-partition="0"][data-broker="` + strconv.Itoa(int(r)) + `"][data-hw="` + hw + `"]`
		if err := chromedp.Do(bctx, chromedp.WaitVisible(chromedp.CSS(chip))); err != nil {
			t.Fatalf("broker %d's HW never reached %s in the panel: %v", r, hw, err)
		}
	}
	leaderChip := `#lanes .replica.leader[data-partition="0"][data-broker="` + strconv.Itoa(int(prod.Leader)) + `"]`
	if err := chromedp.Do(bctx, chromedp.WaitVisible(chromedp.CSS(leaderChip))); err != nil {
		t.Fatalf("leader %d not marked in the panel: %v", prod.Leader, err)
	}

	// Crash a follower through the API: the fault event appears in the list
	// and on the broker's card.
	var crashed struct {
		State   string `json:"state"`
		LastSeq uint64 `json:"last_seq"`
	}
	follower := 2
	if prod.Leader == 2 {
		follower = 3
	}
	apiCall(t, srv.url, "POST", "api/v1/brokers/"+strconv.Itoa(follower)+"/crash", "", &crashed)
	if crashed.State != "crashed" {
		t.Fatalf("crash answered %+v", crashed)
	}
	var crashSeq uint64
	evs, _ := srv.cl.Bus().Since(0, 0)
	for _, e := range evs {
		if e.Kind == events.KindFault && e.Fault != nil && e.Fault.Kind == events.FaultCrash {
			crashSeq = e.Seq
		}
	}
	sel := `#panel-events li[data-seq="` + strconv.FormatUint(crashSeq, 10) + `"]`
	if err := chromedp.Do(bctx, chromedp.WaitVisible(chromedp.CSS(sel))); err != nil {
		t.Fatalf("crash event %d never appeared in the panel: %v", crashSeq, err)
	}
	text, err := chromedp.Run(bctx, chromedp.TextContent(chromedp.CSS(sel)))
	if err != nil || !strings.Contains(text, "crash broker "+strconv.Itoa(follower)) {
		t.Fatalf("event text %q (err %v), want the crash of broker %d", text, err, follower)
	}
	card := `#panel-brokers .broker-card.state-crashed[data-broker="` + strconv.Itoa(follower) + `"]`
	if err := chromedp.Do(bctx, chromedp.WaitVisible(chromedp.CSS(card))); err != nil {
		t.Fatalf("broker %d not shown crashed: %v", follower, err)
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
	var clock struct {
		LastSeq uint64 `json:"last_seq"`
	}
	apiCall(t, srv.url, "POST", "api/v1/clock/pause", "", &clock)
	sel = `#panel-events li[data-seq="` + strconv.FormatUint(clock.LastSeq, 10) + `"]`
	if err := chromedp.Do(bctx, chromedp.WaitVisible(chromedp.CSS(sel))); err != nil {
		t.Fatalf("event %d never appeared: %v", clock.LastSeq, err)
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

// apiCall sends one API request to the running lab and decodes its 200 answer into v.
func apiCall(t *testing.T, base, method, path, body string, v any) {
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
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s %s: %v: %s", method, path, err, b)
	}
}
