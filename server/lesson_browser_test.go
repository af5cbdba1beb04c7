package server

import (
	"context"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"tidemark/i18n"
	"tidemark/server/cluster"
)

// TestBrowserLessons walks lesson 08-hw in headless Chromium in each
// language: the list and the run page are in that language, a step runs
// with Next, a prediction is answered and its verdict and checks are shown,
// Back shows the recorded lanes of the step before, Next moves forward
// again, and ending the run frees its cluster.
func TestBrowserLessons(t *testing.T) { walkLesson(t, false) }

// TestBrowserLessonsKeyboard walks the same lesson in each language with
// the keyboard only: every control is reached with Tab (a prediction's
// choice with the arrow keys) and used with Enter or Space.
func TestBrowserLessonsKeyboard(t *testing.T) { walkLesson(t, true) }

func walkLesson(t *testing.T, keyboard bool) {
	chromium := chromiumPath(t)
	cfg, err := parseFlags([]string{"--addr", "127.0.0.1:0", "--kafka-port", "0", "--data-dir", t.TempDir()}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg.logger = quietLogger()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	serverCtx, stopServer := context.WithCancel(ctx)
	started := make(chan string, 1)
	runErr := make(chan error, 1)
	go func() {
		runErr <- run(serverCtx, cfg, io.Discard, func(url string, _ *cluster.Cluster) { started <- url })
	}()
	var base string
	select {
	case base = <-started:
	case err := <-runErr:
		t.Fatalf("server did not start: %v", err)
	}
	defer func() {
		stopServer()
		if err := <-runErr; err != nil {
			t.Errorf("server shutdown: %v", err)
		}
	}()

	opts := chromeOptions(t, chromium, 1200, 1000)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()

	cur := t // the (sub)test the helpers below report to
	// poll waits until a JavaScript expression is true; a navigation (a
	// form post and its redirect) interrupting it starts it again.
	poll := func(expr string) {
		cur.Helper()
		pctx, cancel := context.WithTimeout(bctx, 30*time.Second)
		defer cancel()
		var err error
		for range 5 {
			_, err = chromedp.Run(pctx, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(20*time.Millisecond)))
			if err == nil || pctx.Err() != nil || !strings.Contains(err.Error(), "context") && !strings.Contains(err.Error(), "navigated") {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err != nil {
			body, _ := chromedp.Run(bctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
			cur.Fatalf("waiting for %s: %v\npage: %s", expr, err, body)
		}
	}
	navigate := func(path string) {
		cur.Helper()
		if err := chromedp.Do(bctx, chromedp.Navigate(base+path)); err != nil {
			cur.Fatalf("open %s: %v", path, err)
		}
	}
	// tabTo presses Tab until the focused element matches sel (at most 80
	// times, so an unreachable control fails the test).
	tabTo := func(sel string) {
		cur.Helper()
		focused := `(document.activeElement && document.activeElement.matches(` + strconv.Quote(sel) + `)) ? "yes" : "no"`
		for range 80 {
			v, err := chromedp.Run(bctx, chromedp.Evaluate[string](focused))
			if err != nil {
				cur.Fatalf("focus check: %v", err)
			}
			if v == "yes" {
				return
			}
			if err := chromedp.Do(bctx, chromedp.KeyEvent(kb.Tab)); err != nil {
				cur.Fatalf("Tab: %v", err)
			}
		}
		cur.Fatalf("Tab never reaches %s", sel)
	}
	click := func(sel, then string) {
		cur.Helper()
		cctx, cancel := context.WithTimeout(bctx, 20*time.Second)
		defer cancel()
		var err error
		if keyboard {
			tabTo(sel)
			err = chromedp.Do(cctx, chromedp.KeyEvent(kb.Enter))
		} else {
			err = clickFresh(cctx, sel) // the panel may replace Next as it is clicked
		}
		if err != nil {
			cur.Fatalf("click %s: %v", sel, err)
		}
		poll(then)
	}
	// choose picks a prediction's choice: a click, or Tab into the group
	// and the arrow keys until it is checked.
	choose := func(value string) {
		cur.Helper()
		sel := `#predict input[value="` + value + `"]`
		if !keyboard {
			if err := clickFresh(bctx, sel); err != nil {
				cur.Fatal(err)
			}
			return
		}
		tabTo(`#predict input[type="radio"]`)
		checked := `document.querySelector(` + strconv.Quote(sel) + `).checked ? "yes" : "no"`
		for range 10 {
			if err := chromedp.Do(bctx, chromedp.KeyEvent(" ")); err != nil { // Space checks the focused choice
				cur.Fatal(err)
			}
			if v, _ := chromedp.Run(bctx, chromedp.Evaluate[string](checked)); v == "yes" {
				return
			}
			if err := chromedp.Do(bctx, chromedp.KeyEvent(kb.ArrowDown)); err != nil {
				cur.Fatal(err)
			}
		}
		cur.Fatalf("the arrow keys never reach the choice %s", value)
	}
	js := func(expr string) string {
		cur.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[string](expr))
		if err != nil {
			cur.Fatalf("evaluating %s: %v", expr, err)
		}
		return strings.TrimSpace(v)
	}
	text := func(sel string) string { return js(`document.querySelector(` + strconv.Quote(sel) + `).textContent`) }
	attr := func(sel, name string) string {
		return js(`document.querySelector(` + strconv.Quote(sel) + `).getAttribute(` + strconv.Quote(name) + `) || ""`)
	}
	cursor := func() int {
		n, _ := strconv.Atoi(attr("#progress", "data-cursor"))
		return n
	}
	// at: the page of step n, parsed to its end (under load a poll could
	// see the bar's #progress of a page whose card was not parsed yet, and
	// #next was null).
	at := func(n int) string {
		return `document.readyState !== "loading" && document.querySelector('#progress[data-cursor="` + strconv.Itoa(n) + `"]') !== null`
	}

	for _, lang := range i18n.Languages() {
		t.Run(string(lang), func(t *testing.T) {
			cur = t
			// The language switch sets the cookie and returns to the list.
			navigate("ui/lang?set=" + string(lang) + "&next=/lessons")
			poll(`document.querySelector('[data-start="08-hw"]') !== null`)
			if got := attr("html", "lang"); got != string(lang) {
				t.Fatalf("html lang %q", got)
			}
			if got, want := text("main h1"), i18n.T(lang, "lesson.list.title"); got != want {
				t.Fatalf("list title %q, want %q", got, want)
			}
			click(`[data-start="08-hw"]`, at(0))
			if got, want := text("#next"), i18n.T(lang, "lesson.run"); !strings.Contains(got, want) {
				t.Fatalf("the run button %q, want %q", got, want)
			}
			// Step 1 has no prediction: its button runs it, and the card
			// answers with what it did until the learner moves on.
			click("#next", at(1))
			if got, want := text("#next"), i18n.T(lang, "lesson.next"); !strings.HasPrefix(got, want) {
				t.Fatalf("Next %q, want %q…", got, want)
			}
			if got := attr(`#run-lanes tr[data-broker="1"]`, "data-leo"); got != "1" {
				t.Fatalf("broker 1's LEO %s after producing m1", got)
			}
			// The live panel follows the run's own cluster, not the main one.
			poll(`document.querySelector('#panel[data-status="live"] [data-topic="lab"][data-broker="1"][data-leo="1"]') !== null`)
			// Next opens step 2's question, with nothing chosen for the learner.
			click("#next", `document.querySelector('#predict') !== null`)
			if n := js(`String(document.querySelectorAll('#predict input:checked').length)`); n != "0" {
				t.Fatalf("%s choices preselected", n)
			}
			// Pick "nothing" and run.
			choose("nothing")
			click("#predict-run", at(2))
			if got := attr("#verdict", "data-right"); got != "true" {
				t.Fatalf("verdict right=%q", got)
			}
			if got, want := text("#verdict"), i18n.T(lang, "lesson.verdict.right"); !strings.Contains(got, want) {
				t.Fatalf("verdict %q, want %q", got, want)
			}
			if n := js(`String(document.querySelectorAll('#checks li[data-pass="false"]').length)`); n != "0" {
				t.Fatalf("%s checks failed", n)
			}
			// Every choice now says why it is right or wrong; the learner's is marked.
			if n := js(`String(document.querySelectorAll('#choices-why li').length)`); n != "2" {
				t.Fatalf("%s choices explained, want 2", n)
			}
			if got := attr(`#choices-why li[data-choice="nothing"]`, "data-chosen"); got != "true" {
				t.Fatalf("the chosen answer is not marked: %q", got)
			}
			// Back: the lanes after step 1, rebuilt from the recorded events.
			click("#back", at(1))
			if js(`String(document.querySelector('#recorded') !== null)`) != "true" {
				t.Fatal("Back does not say it shows a recorded state")
			}
			if got := attr(`#run-lanes tr[data-broker="1"]`, "data-hw"); got != "0" {
				t.Fatalf("after Back broker 1's HW %s, want 0", got)
			}
			// Next moves forward through the recorded state without asking again.
			click("#next", at(2))
			if cursor() != 2 {
				t.Fatalf("after Next: cursor %d", cursor())
			}
			click("#stop", `document.querySelector('[data-start="08-hw"]') !== null`)
		})
	}
}
