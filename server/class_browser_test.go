package server

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserClass: two learners join in two browser contexts (separate
// cookie jars) and each gets a private cluster. Ada crashes broker 1 from
// her topology's menu; Bob's stage still shows it up and his API says so.
// The teacher, in a third context opened from the printed link, sees both
// rows online, with Ada's lesson progress.
func TestBrowserClass(t *testing.T) {
	l, browser := startClassBrowsers(t, 2)
	ada, bob := browser(), browser()
	ada.joinClass(l.codes[0], "Ada")
	bob.joinClass(l.codes[1], "Bob")

	ada.click(`[data-testid="node-1"] > summary`)
	ada.click(`[data-testid="node-1"] form[data-action="crash"] button`)
	ada.poll(`document.querySelector('[data-testid="node-1"][data-state="crashed"]') !== null`, "broker 1 crashed on Ada's topology")
	ada.shot("class-ada")

	// Ada's lesson progress, through the API with her cookie.
	ada.poll(`(async () => {
		const r = await fetch('/api/v1/lessons/01-partitions/runs', {method: 'POST', headers: {'Content-Type': 'application/json'}, body: '{"speed":"instant"}'});
		const run = await r.json();
		return (await fetch('/api/v1/lessons/runs/' + run.id + '/next', {method: 'POST'})).ok;
	})()`, "Ada's first lesson step")

	bob.poll(`(async () => {
		const c = await (await fetch('/api/v1/cluster')).json();
		return c.brokers.every(b => b.state === 'up');
	})()`, "every broker up in Bob's cluster")
	if got := eval[bool](bob, `document.querySelector('[data-testid="node-1"][data-state="crashed"]') === null`); !got {
		t.Fatal("broker 1 shows crashed on Bob's stage")
	}
	bob.shot("class-bob")

	teacher := browser()
	teacher.open("/class?token="+l.teacher, false)
	for seat, name := range map[int]string{1: "Ada", 2: "Bob"} {
		row := `document.querySelector('[data-testid="seat-` + strconv.Itoa(seat) + `"]')`
		teacher.poll(row+` !== null && `+row+`.querySelector('.name').textContent.includes('`+name+`') && `+
			row+`.querySelector('.online .badge.ok') !== null`, name+"'s row, online")
	}
	teacher.poll(`document.querySelector('[data-testid="seat-1"] [data-lesson="01-partitions"]') !== null`, "Ada's lesson progress")
	teacher.shot("class-teacher")
	if got := eval[string](teacher, `location.pathname + location.search`); got != "/class" {
		t.Fatalf("the teacher link stayed at %q; the token should leave the address bar", got)
	}
}

// joinClass joins a seat with its code through the join page and waits for
// the seat's overview with the live panel.
func (b *browserLab) joinClass(code, name string) {
	b.t.Helper()
	b.open("/join?code="+code, false)
	if err := chromedp.Do(b.ctx, chromedp.SendKeys(chromedp.CSS("#join-name"), name)); err != nil {
		b.t.Fatal(err)
	}
	// Submitting navigates; wait for the new page before polling it.
	if _, err := chromedp.RunResponse(b.ctx, chromedp.Click(chromedp.CSS(`form[data-testid="join"] button`))); err != nil {
		b.t.Fatalf("joining as %s: %v", name, err)
	}
	b.poll(`location.pathname === "/" && document.querySelector('#panel[data-status="live"]') !== null`, name+"'s overview, live")
}

// startClassBrowsers starts a class lab of seats seats and 3 brokers with
// the real panel, and one Chromium; browser opens a context of its own in
// it (a learner or a teacher, cookies apart).
func startClassBrowsers(t *testing.T, seats int) (l classLab, browser func() *browserLab) {
	t.Helper()
	chromium := chromiumPath(t)
	static := buildStatic(t)
	l, _ = startClassWith(t, t.TempDir(), func(c *config) { c.static = os.DirFS(static) }, "--seats", strconv.Itoa(seats), "--brokers", "3")

	ctx, cancel := context.WithTimeout(context.Background(), browserTimeout)
	t.Cleanup(cancel)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, chromeOptions(t, chromium, 1366, 900)...)
	t.Cleanup(cancelAlloc)
	first, cancelFirst := chromedp.NewContext(allocCtx)
	t.Cleanup(cancelFirst)
	if err := chromedp.Do(first, chromedp.Navigate("about:blank")); err != nil { // starts the browser
		t.Fatal(err)
	}
	return l, func() *browserLab {
		bctx, cancel := chromedp.NewContext(first, chromedp.WithNewBrowserContext())
		t.Cleanup(cancel)
		return &browserLab{t: t, url: l.url, ctx: bctx}
	}
}
