package server

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"tidemark/lessons"
)

// lessonStep runs the step the run's page asks next, waiting for the
// cursor to reach n: from an answer, Next first opens the next step's text
// and question; a prediction is answered with the choice sel finds inside
// #predict (the first when ""); a step that asks none runs with its
// button. check, if not nil, is called on the page that asks, before it
// runs.
func (b *browserLab) lessonStep(n int, sel string, check func()) {
	b.t.Helper()
	b.poll(`document.querySelector('#predict-run, #next') !== null`, "a control to move on")
	if eval[string](b, `document.querySelector('.lesson-screen').dataset.view`) == "answer" {
		b.click("#next")
		b.poll(`document.querySelector('.lesson-screen[data-view="ask"]') !== null`, "the next step's question")
	}
	b.poll(`document.querySelector('#panel[data-status="live"]') !== null`, "the panel to report live")
	if check != nil {
		check()
	}
	if eval[bool](b, `document.querySelector('#predict') !== null`) {
		if sel == "" {
			sel = `input[type="radio"]`
		}
		b.click(`#predict ` + sel)
		b.click("#predict-run")
	} else {
		b.click("#next")
	}
	b.poll(`document.readyState !== "loading" && document.querySelector('#progress[data-cursor="`+strconv.Itoa(n)+`"]') !== null`, "step "+strconv.Itoa(n))
}

// inView is JavaScript that lists the elements sels find that are not
// wholly inside the viewport (or missing, when must), and whether the page
// scrolls: "" when all is well.
func inView(must bool, sels ...string) string {
	q := make([]string, len(sels))
	for i, s := range sels {
		q[i] = strconv.Quote(s)
	}
	return `(() => { const out = []; const must = ` + strconv.FormatBool(must) + `;
		for (const sel of [` + strings.Join(q, ",") + `]) {
			const el = document.querySelector(sel);
			if (!el) { if (must) out.push(sel + " missing"); continue; }
			const r = el.getBoundingClientRect();
			if (r.width === 0 || r.top < 0 || r.left < 0 || r.bottom > innerHeight + 0.5 || r.right > innerWidth + 0.5)
				out.push(sel + " at " + [r.left, r.top, r.right, r.bottom].map(Math.round).join(","));
		}
		if (document.documentElement.scrollHeight > innerHeight + 1) out.push("the page scrolls: " + document.documentElement.scrollHeight);
		return out.join("; "); })()`
}

// pastRightEdgeJS is JavaScript that lists what reaches past the right
// edge of the viewport outside a box that scrolls (or clips) sideways on
// its own, and whether the page itself is wider: "" when nothing does.
const pastRightEdgeJS = `(() => {
		const scrolls = el => { for (let p = el.parentElement; p; p = p.parentElement) { const o = getComputedStyle(p).overflowX; if (o === "auto" || o === "scroll" || o === "hidden") return true; } return false; };
		const out = [];
		if (document.documentElement.scrollWidth > innerWidth) out.push("the page is " + document.documentElement.scrollWidth + " px wide");
		for (const el of document.querySelectorAll("main *")) {
			const r = el.getBoundingClientRect();
			if (r.width > 0 && r.right > innerWidth + 0.5 && !scrolls(el)) out.push(el.tagName + "." + el.getAttribute("class") + " to " + Math.round(r.right));
		}
		return out.slice(0, 8).join("; "); })()`

// TestBrowserLessonOneScreen walks three lessons at 1366×768: on every
// step the step's text, its question (when it asks one), the topology and
// the lanes' box are inside the viewport and the page does not scroll; the
// lanes start in view; after a prediction, wrong where the lesson lets the
// test know which is wrong, the verdict is in view with the step's text,
// and the learner moves on with Next. At 360 px the same page stacks in
// that order and nothing reaches past the right edge but inside a box
// that scrolls sideways on its own (a lane figure).
func TestBrowserLessonOneScreen(t *testing.T) {
	b := startBrowserLab(t, false)
	b.viewport(1366, 768, false)
	lanesInView := `(() => { const l = document.querySelector('[data-testid="lanes"]').getBoundingClientRect();
		return l.top >= 0 && l.top < innerHeight - 120 && document.querySelector('.stage-lanes').getBoundingClientRect().bottom <= innerHeight + 0.5; })()`
	all := []string{"08-hw", "12-min-isr", "14-kip101-hw-truncation"}
	switch v := os.Getenv("TIDEMARK_ALL_LESSONS"); v {
	case "":
	case "1":
		all = nil
		for _, l := range lessons.All() {
			all = append(all, l.ID)
		}
	default: // a comma-separated list
		all = strings.Split(v, ",")
	}
	for _, lesson := range all {
		t.Logf("lesson %s", lesson)
		b.open("/lessons", false)
		b.click(`[data-start="` + lesson + `"]`)
		b.poll(`document.readyState !== "loading" && document.querySelector('#progress[data-cursor="0"]') !== null`, lesson+" to start")
		total := eval[int](b, `+document.querySelector('#progress').dataset.total`)
		for step := 1; step <= total; step++ {
			asked := false
			b.lessonStep(step, `input:not([value="nothing"])`, func() {
				asked = eval[bool](b, `document.querySelector('#predict') !== null`)
				if bad := eval[string](b, inView(true, `[data-testid="lesson-text"]`, `[data-testid="topology"]`, `.stage-lanes`)); bad != "" {
					t.Errorf("%s step %d asks: %s", lesson, step, bad)
				}
				if bad := eval[string](b, inView(false, `[data-testid="question"]`, `#predict-run`, `#next`)); bad != "" {
					t.Errorf("%s step %d asks: %s", lesson, step, bad)
				}
				if !eval[bool](b, lanesInView) {
					t.Errorf("%s step %d: the lanes do not start in view", lesson, step)
				}
			})
			b.poll(`document.querySelector('.lesson-screen[data-view="answer"]') !== null`, "the step's answer")
			b.poll(`document.querySelector('#panel[data-status="live"]') !== null`, "the panel to report live")
			sels := []string{`[data-testid="lesson-text"]`, `[data-testid="topology"]`, `.stage-lanes`}
			if asked {
				sels = append(sels, `[data-testid="verdict"] .verdict`)
			}
			if bad := eval[string](b, inView(true, sels...)); bad != "" {
				t.Errorf("%s step %d answers: %s", lesson, step, bad)
			}
			if bad := eval[string](b, inView(false, `#next`, `#to-lessons`)); bad != "" {
				t.Errorf("%s step %d answers: %s", lesson, step, bad)
			}
			if lesson == "08-hw" && step == 2 && eval[string](b, `document.querySelector('#verdict').dataset.right`) != "false" {
				t.Errorf("08-hw step %d: the wrong prediction was judged right", step)
			}
			if step == 1 && lesson == "08-hw" {
				// Its "look at" list points at broker 1, its lane and its
				// HW and LEO markers, on the stage.
				b.poll(`getComputedStyle(document.querySelector('#topo [data-testid="node-1"]')).boxShadow !== "none"`, "broker 1 ringed on the stage")
				b.poll(`(l => !!l && getComputedStyle(l).strokeWidth === "5px")(document.querySelector('#lanes g[data-topic="lab"][data-broker="1"] .marker.hw line'))`, "broker 1's HW marker drawn heavy")
			}
			if step == 2 && lesson == "08-hw" {
				b.shot("lesson-one-screen-1366")
			}
		}
		b.click("#stop")
		b.poll(`document.querySelector('[data-start="08-hw"]') !== null`, "the lesson list")
	}

	// A phone: the card, then the stage; nothing past the right edge
	// outside a sideways scroller.
	b.viewport(360, 740, true)
	b.open("/lessons", false)
	b.click(`[data-start="08-hw"]`)
	b.lessonStep(1, "", nil)
	b.poll(`document.querySelector('#panel[data-status="live"] #lanes figure') !== null`, "the lanes")
	order := eval[string](b, `(() => { const y = s => document.querySelector(s).getBoundingClientRect().top;
		return y('[data-testid="lesson-text"]') < y('[data-testid="topology"]') && y('[data-testid="topology"]') < y('[data-testid="lanes"]') ? "" : "out of order"; })()`)
	if order != "" {
		t.Errorf("at 360 px the card, topology and lanes are %s", order)
	}
	past := eval[string](b, pastRightEdgeJS)
	if past != "" {
		t.Errorf("at 360 px: %s", past)
	}
	small := eval[string](b, `(() => { const out = [];
		for (const el of document.querySelectorAll(".lesson-screen *")) {
			if (!el.childNodes.length || ![...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim())) continue;
			const r = el.getBoundingClientRect(), fs = parseFloat(getComputedStyle(el).fontSize);
			if (r.width > 0 && fs < 11 && !el.closest('.sr, .lane-list, #topo-msgs') && !(el.closest('svg') && !el.closest('.lanes-svg'))) out.push(el.tagName + "." + el.getAttribute("class") + " " + fs + "px");
		}
		return out.slice(0, 8).join("; "); })()`)
	if small != "" {
		t.Errorf("at 360 px text under 11 px: %s", small)
	}
	b.shot("lesson-one-screen-360")
}
