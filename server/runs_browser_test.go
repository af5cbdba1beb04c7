package server

import (
	"net/http"
	"strconv"
	"testing"
)

// TestBrowserOpenRunsEnd: a lesson started from /lessons in headless
// Chromium is listed among the learner's open runs when they come back to
// /lessons (the browser's learner cookie says whose it is), and its End
// button, a plain form, ends it: the list no longer has it and the run's
// API answers 404.
func TestBrowserOpenRunsEnd(t *testing.T) {
	b := startBrowserLab(t, false)
	b.open("/lessons", false)
	if n := eval[int](b, `document.querySelectorAll('[data-testid="open-runs"] > *').length`); n != 0 {
		t.Fatalf("a new browser has %d open runs", n)
	}
	b.click(`button[data-start="01-partitions"]`)
	b.poll(`location.pathname.startsWith("/lessons/runs/") && document.querySelector('#panel[data-status="live"]') !== null`, "the run's page, live")
	run := eval[string](b, `location.pathname.split("/").pop()`)

	b.open("/lessons", false)
	item := `[data-testid="open-runs"] > [data-run=` + strconv.Quote(run) + `]`
	b.poll(`document.querySelector('`+item+` button[data-end]') !== null`, "the run listed with its End button")
	if n := eval[int](b, `document.querySelectorAll('[data-testid="open-runs"] > *').length`); n != 1 {
		t.Fatalf("%d open runs listed, want 1", n)
	}
	if href := eval[string](b, `document.querySelector('`+item+` a[data-continue]').getAttribute("href")`); href != "/lessons/runs/"+run {
		t.Fatalf("Continue goes to %q", href)
	}
	b.click(item + ` button[data-end]`)
	b.poll(`location.pathname === "/lessons" && document.querySelector('[data-start="01-partitions"]') !== null && document.querySelector('`+item+`') === null`,
		"the list without the ended run")
	if n := eval[int](b, `document.querySelectorAll('[data-testid="open-runs"] > *').length`); n != 0 {
		t.Fatalf("%d open runs listed after End, want none", n)
	}
	resp, err := http.Get(b.url + "api/v1/lessons/runs/" + run)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("GET the ended run: %d, want 404", resp.StatusCode)
	}
}
