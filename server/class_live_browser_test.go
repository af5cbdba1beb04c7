package server

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// answerJS starts 01-partitions in the page's seat, runs it to its first
// prediction, answers with the first choice the run shows and runs the
// step; it sets window.__answered to the choice id and window.__answeredAt
// to the time the step's request came back.
const answerJS = `(async () => {
	const post = (u, body) => fetch(u, {method: 'POST', headers: {'Content-Type': 'application/json'}, body: body || ''});
	const run = await (await post('/api/v1/lessons/01-partitions/runs', '{"speed":"instant"}')).json();
	for (let i = 0; i < 20; i++) {
		const st = await (await fetch('/api/v1/lessons/runs/' + run.id)).json();
		const cur = st.steps.find(s => s.current);
		if (cur && cur.prediction) {
			const id = cur.prediction.choices[0].id;
			await post('/api/v1/lessons/runs/' + run.id + '/predict', JSON.stringify({choice: id}));
			await post('/api/v1/lessons/runs/' + run.id + '/next');
			window.__answeredAt = Date.now();
			window.__answered = id;
			return;
		}
		await post('/api/v1/lessons/runs/' + run.id + '/next');
	}
	window.__answered = 'none';
})(); true`

// TestBrowserClassLive: a teacher and three learners in separate browser
// contexts. A learner's answer appears on the teacher's dashboard and in
// the per-question bars within 1 s, without a reload (the pages keep a
// marker set before); a second join with a used code is refused in the
// learner's browser and the seat keeps its name; the projected seat view
// (/class/seats/1) follows a broker the learner crashes, live and
// read-only; the dashboard's Reset asks
// for confirmation and, not confirmed, resets nothing.
func TestBrowserClassLive(t *testing.T) {
	l, browser := startClassBrowsers(t, 3)
	teacher, questions := browser(), browser()
	teacher.open("/class?token="+l.teacher, false)
	questions.open("/class?token="+l.teacher, false)
	questions.open("/class/questions", false)
	for _, b := range []*browserLab{teacher, questions} {
		b.poll(`document.body.getAttribute('data-live-state') === 'open'`, "the live class connected")
		eval[bool](b, `window.__noReload = true; window.__changedAt = 0; true`)
	}
	// The moment the teacher's pages show Ada's answer, seen in the page.
	eval[bool](teacher, `new MutationObserver(() => {
		if (!window.__changedAt && document.querySelector('[data-testid="seat-1"] [data-lesson="01-partitions"] .badge')) window.__changedAt = Date.now();
	}).observe(document.getElementById('seat-rows'), {childList: true, subtree: true}); true`)

	eval[bool](questions, `new MutationObserver(() => {
		if (!window.__changedAt && document.querySelector('[data-testid^="question-01-partitions-"] [data-count="1"]')) window.__changedAt = Date.now();
	}).observe(document.getElementById('questions'), {childList: true, subtree: true}); true`)

	ada, bob, cy := browser(), browser(), browser()
	ada.joinClass(l.codes[0], "Ada")
	bob.joinClass(l.codes[1], "Bob")
	cy.joinClass(l.codes[2], "Cy")
	teacher.poll(`document.querySelector('[data-testid="seat-3"] .name').textContent.includes('Cy')`, "Cy's row, live")

	eval[bool](ada, answerJS)
	ada.poll(`!!window.__answered`, "Ada's answer")
	choice := eval[string](ada, `window.__answered`)
	answeredAt := eval[float64](ada, `window.__answeredAt`)
	if choice == "none" {
		t.Fatal("no prediction in 01-partitions")
	}
	teacher.poll(`window.__changedAt > 0`, "Ada's answer on the dashboard")
	questions.poll(`window.__changedAt > 0`, "Ada's answer in the bars")
	if !eval[bool](questions, `document.querySelector('[data-choice="`+choice+`"][data-count="1"]') !== null`) {
		t.Fatalf("the bars do not count Ada's choice %s", choice)
	}
	for name, b := range map[string]*browserLab{"dashboard": teacher, "per-question page": questions} {
		at := eval[float64](b, `window.__changedAt`)
		t.Logf("the %s showed Ada's answer %.0f ms after it", name, at-answeredAt)
		if d := at - answeredAt; d > 1000 {
			t.Errorf("the %s showed Ada's answer %.0f ms after it, want ≤ 1,000", name, d)
		}
		if !eval[bool](b, `window.__noReload === true`) {
			t.Errorf("the %s reloaded", name)
		}
	}
	teacher.shot("class-live-teacher")
	questions.shot("class-live-questions")

	// The classroom screen of Ada's seat follows her cluster live: a broker
	// she crashes shows crashed there, without a reload. It is read-only.
	projector := browser()
	if err := chromedp.Do(projector.ctx, chromedp.EmulateViewport(1366, 768)); err != nil {
		t.Fatal(err)
	}
	projector.open("/class?token="+l.teacher, false)
	projector.open("/class/seats/1", true)
	eval[bool](projector, `window.__noReload = true; true`)
	// Only the timeline's own buttons, which change what the screen shows,
	// not the cluster.
	if n := eval[int](projector, `document.querySelectorAll('#panel form, #panel details, #panel select, #panel input:not(#timeline *)').length`); n != 0 {
		t.Errorf("the projected seat has %d controls, want none", n)
	}
	projector.poll(`document.querySelector('[data-testid="node-2"][data-state="up"]') !== null`, "broker 2 up on the projected stage")
	box := func(sel string) [4]float64 {
		return eval[[4]float64](projector, `(() => { const r = document.querySelector('`+sel+`').getBoundingClientRect(); return [r.x, r.y, r.width, r.height]; })()`)
	}
	topo, name := box(`#topo`), box(`[data-testid="node-2"] .node-name`)
	if topo[2] < 700 || topo[1]+topo[3] > 768 {
		t.Errorf("the projected topology is %v at 1366×768: want at least 700 px wide, on the screen", topo)
	}
	if fs := eval[float64](projector, `parseFloat(getComputedStyle(document.querySelector('[data-testid="node-2"]')).fontSize)`); fs < 20 {
		t.Errorf("a broker's name on the projection is %.0f px, want large type (≥ 20 px)", fs)
	}
	projector.shot("class-projector-seat-before")
	eval[bool](ada, `(async () => { const r = await fetch('/api/v1/brokers/2/crash', {method: 'POST'}); window.__crashed = r.status; })(); true`)
	ada.poll(`window.__crashed === 200`, "Ada's crash of broker 2")
	projector.poll(`document.querySelector('[data-testid="node-2"][data-state="crashed"]') !== null`, "broker 2 crashed on the projected stage")
	if after := box(`[data-testid="node-2"] .node-name`); after[2] == 0 || after[3] == 0 {
		t.Errorf("broker 2's name is gone from the projection after the crash: %v (before %v)", after, name)
	}
	if !eval[bool](projector, `window.__noReload === true`) {
		t.Error("the projection reloaded")
	}
	projector.shot("class-projector-seat-crashed")
	projector.open("/class/projector", true)
	if eval[int](projector, `document.querySelectorAll('#panel form[data-action="crash"]').length`) == 0 {
		t.Error("the teacher's own projected lab has no fault menus")
	}
	projector.shot("class-projector-own")
	// On a phone the stage stacks; nothing runs off the screen's side.
	if err := chromedp.Do(projector.ctx, chromedp.EmulateViewport(360, 740)); err != nil {
		t.Fatal(err)
	}
	projector.open("/class/seats/1", true)
	projector.poll(`document.querySelector('[data-testid="node-2"][data-state="crashed"]') !== null`, "broker 2 crashed on the phone's projection")
	if w := eval[int](projector, `document.documentElement.scrollWidth`); w > 360 {
		t.Errorf("the projection is %d px wide on a 360 px phone", w)
	}
	if topo := box(`#topo`); topo[2] < 300 || topo[0] < 0 || topo[0]+topo[2] > 360 {
		t.Errorf("the phone's projected topology is %v: want the screen's width", topo)
	}
	projector.shot("class-projector-seat-phone")

	// Mallory tries Ada's code.
	mallory := browser()
	mallory.open("/join?code="+l.codes[0], false)
	if err := chromedp.Do(mallory.ctx, chromedp.SendKeys(chromedp.CSS("#join-name"), "Mallory")); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.RunResponse(mallory.ctx, chromedp.Click(chromedp.CSS(`form[data-testid="join"] button`))); err != nil {
		t.Fatal(err)
	}
	mallory.poll(`(document.getElementById('join-error') || {}).textContent?.includes('Ask your teacher for a new code')`, "the refusal on the join page")
	teacher.poll(`document.querySelector('[data-testid="seat-1"] .name').textContent.includes('Ada')`, "seat 1 still Ada's")
	if strings.Contains(eval[string](teacher, `document.getElementById('seats').textContent`), "Mallory") {
		t.Fatal("Mallory on the dashboard")
	}

	// Reset: the API refuses it unconfirmed; the dashboard's is a link to
	// a confirmation, and leaving it resets nothing.
	eval[bool](teacher, `(async () => { const r = await fetch('/api/v1/class/seats/2/reset', {method: 'POST'}); window.__reset = r.status + ' ' + (await r.json()).error.code; })().catch(e => { window.__reset = String(e); }); true`)
	teacher.poll(`window.__reset !== undefined`, "the API's answer to an unconfirmed reset")
	if got := eval[string](teacher, `window.__reset`); got != "400 INVALID_REQUEST" {
		t.Errorf("an unconfirmed reset through the API: %s, want 400 INVALID_REQUEST", got)
	}
	teacher.click(`[data-testid="reset-2"]`)
	teacher.poll(`document.querySelector('[data-testid="confirm-reset"]') !== null`, "the reset's confirmation")
	teacher.shot("class-live-reset-confirm")
	teacher.click(`[data-testid="confirm-reset"] a`)
	teacher.poll(`location.search === '' && document.querySelector('[data-testid="confirm-reset"]') === null`, "the confirmation left")
	bob.poll(`(async () => (await fetch('/api/v1/cluster')).ok)()`, "Bob still signed in")
	teacher.poll(`document.querySelector('[data-testid="seat-2"] .name').textContent.includes('Bob')`, "seat 2 still Bob's")
}
