package server

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kgo"

	"tidemark/i18n/i18ntest"
)

// TestBrowserTxnAndCleanerLanes: on a transactional topic with one aborted,
// one committed and one still open transaction, every replica's lane draws
// the commit and abort markers as their own cells, the aborted records
// marked, and the LSO marker at the open transaction's first offset, below
// the HW; on a compacted topic after the log cleaner ran, every lane has a
// row with its clean and dirty sections and the dirty ratio. Markers and
// sections lie inside their lane, no two labels of a lane overlap, the
// legend names them, at 1366×768 and at 360 px (without scrolling the page
// sideways), in English and in Chinese.
func TestBrowserTxnAndCleanerLanes(t *testing.T) {
	b := startBrowserLab(t, false)
	b.viewport(1366, 768, false)
	for _, body := range []string{`{"name":"txn","partitions":1,"replication_factor":3}`,
		`{"name":"compacted","partitions":1,"replication_factor":3,"configs":{"cleanup.policy":"compact","segment.bytes":1024,"min.cleanable.dirty.ratio":0.01,"delete.retention.ms":0}}`} {
		resp, err := http.Post(b.url+"api/v1/topics", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Body.Close(); resp.StatusCode != http.StatusCreated {
			t.Fatalf("creating a topic (%s): %s", body, resp.Status)
		}
	}
	seeds := []string{b.cl.Broker(1).Addr(), b.cl.Broker(2).Addr(), b.cl.Broker(3).Addr()}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// The transactions: aborted, committed, and one left open (its
	// producer closes with the test).
	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.TransactionalID("lanes-tx"), kgo.DefaultProduceTopic("txn"))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	txn := func(end bool, commit kgo.TransactionEndTry, values ...string) {
		t.Helper()
		if err := prod.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for _, v := range values {
			if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", v, err)
			}
		}
		if end {
			if err := prod.EndTransaction(ctx, commit); err != nil {
				t.Fatalf("end transaction: %v", err)
			}
		}
	}
	txn(true, kgo.TryAbort, "ab-1", "ab-2")  // offsets 0, 1; abort marker 2
	txn(true, kgo.TryCommit, "co-1", "co-2") // 3, 4; commit marker 5
	txn(false, kgo.TryCommit, "open-1")      // 6, open: the LSO stays at 6

	// The compacted topic: 5 keys overwritten 10 times, a batch a record
	// (13 to a 1 KiB segment).
	plain, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic("compacted"))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	for round := range 10 {
		for k := range 5 {
			r := &kgo.Record{Key: fmt.Appendf(nil, "k%d", k), Value: fmt.Appendf(nil, "v%d", round)}
			if err := plain.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("produce round %d: %v", round, err)
			}
		}
	}

	// The first load of the panel (its WASM compiled by Chromium) under
	// -race on a loaded machine can take more than poll's 30 s: a longer
	// wait for this one.
	b.open("/", false)
	live, cancelLive := context.WithTimeout(b.ctx, 90*time.Second)
	defer cancelLive()
	if _, err := chromedp.Run(live, chromedp.Poll[bool](`document.querySelector('#panel[data-status="live"]') !== null`,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(90*time.Second))); err != nil {
		b.shot("failed-" + t.Name())
		t.Fatalf("the panel did not report live in 90 s: %v", err)
	}
	txnFig, cmpFig := `#lanes figure[data-topic="txn"]`, `#lanes figure[data-topic="compacted"]`
	// Every replica: both markers and both aborted records listed, the
	// LSO at 6 (the open transaction's first record) below the HW 7.
	b.poll(`(f => f && [...f.querySelectorAll(".lane-recs")].length === 3 && [...f.querySelectorAll(".lane-recs")].every(l =>
		l.querySelectorAll(".rec.control.abort").length === 1 && l.querySelectorAll(".rec.control.commit").length === 1 &&
		[...l.querySelectorAll(".rec.aborted")].map(r => r.dataset.offset).join() === "0,1"))(document.querySelector('`+txnFig+`'))`,
		"the markers and the aborted records on every lane of txn-0")
	b.poll(`[...document.querySelectorAll('`+txnFig+` g.replica')].every(g => g.dataset.hw === "7" &&
		/LSO 6$/.test(g.querySelector(".lane-nums").textContent) && g.querySelector("g.marker.lso") !== null)`,
		"every txn lane's LSO marker at 6, below its HW 7")
	// The cleaner ran on every replica: a row of sections under each lane.
	b.poll(`(f => f && [...f.querySelectorAll("g.replica")].length === 3 && [...f.querySelectorAll("g.replica")].every(g =>
		g.querySelector("g.cleaner rect.clean-section") && g.querySelector("g.cleaner rect.dirty-section") &&
		/\d\.\d\d/.test(g.querySelector(".cleaner-ratio").textContent)))(document.querySelector('`+cmpFig+`'))`,
		"every compacted lane's clean and dirty sections")
	// Compaction removed the older values from the window: below the
	// clean section's end each lane lists at most one record per key.
	if most := eval[int](b, `(f => Math.max(...[...f.querySelectorAll(".lane-recs")].map(l => {
		const end = +f.querySelector('g.replica[data-broker="' + l.dataset.broker + '"] rect.clean-section title').textContent.match(/, (\d+)\)/)[1];
		return [...l.querySelectorAll(".rec")].filter(r => +r.dataset.offset < end).length;
	})))(document.querySelector('`+cmpFig+`'))`); most > 5 {
		t.Errorf("a compacted lane lists %d records in its clean section, more than its 5 keys", most)
	}

	// The partition page's server-drawn lanes (what a page without
	// JavaScript shows) mark the same, and name them in a legend.
	b.open("/topics/txn/partitions/0", true)
	b.poll(`document.querySelectorAll("#server-lanes .lane").length === 3 && [...document.querySelectorAll("#server-lanes .lane")].every(l =>
		l.querySelectorAll(".cell.control.commit").length === 1 && l.querySelectorAll(".cell.control.abort").length === 1 &&
		l.querySelectorAll(".cell.aborted").length === 2 && l.querySelector(".cell.at-lso").dataset.offset === "6") &&
		document.querySelector(".txn-legend") !== null`, "the server-drawn lanes' markers, aborted records and LSO")
	b.shotInView(".txn-legend", "partition-txn-legend-1366")
	b.shotInView("#server-lanes", "partition-txn-1366")
	b.viewport(360, 740, true)
	b.frames()
	if over := eval[float64](b, `document.documentElement.scrollWidth - document.documentElement.clientWidth`); over > 0 {
		t.Errorf("the partition page at 360 px scrolls %v px sideways", over)
	}
	b.shotInView("#server-lanes", "partition-txn-360px")
	b.viewport(1366, 768, false)
	b.open("/", true)

	for _, lang := range []string{"en", "zh-Hans"} {
		if lang != "en" {
			b.open("/ui/lang?set="+lang+"&next=/", true)
		}
		for _, vp := range []struct {
			w, h   int64
			mobile bool
			name   string
		}{{1366, 768, false, "1366"}, {360, 740, true, "360px"}} {
			b.viewport(vp.w, vp.h, vp.mobile)
			b.frames()
			for _, sel := range []string{txnFig, cmpFig} {
				if problems := eval[[]string](b, laneLayoutProblems(sel)); len(problems) > 0 {
					t.Errorf("%s at %s, %s: %v", sel, vp.name, lang, problems)
				}
			}
			if over := eval[float64](b, `document.documentElement.scrollWidth - document.documentElement.clientWidth`); over > 0 {
				t.Errorf("%s, %s: the page scrolls %v px sideways", vp.name, lang, over)
			}
			suffix := vp.name
			if lang != "en" {
				suffix += "-" + lang
			}
			b.shotInView(txnFig, "lanes-txn-"+suffix)
			b.shotInView(cmpFig, "lanes-compacted-"+suffix)
			// Scrolled to the window's start: the label column (the dirty
			// ratio) and the offsets compaction emptied.
			eval[bool](b, `(f => { f.scrollLeft = 0; return true; })(document.querySelector('`+cmpFig+`'))`)
			b.frames()
			b.shotInView(cmpFig, "lanes-compacted-start-"+suffix)
		}
		legend := eval[[]string](b, `[...document.querySelectorAll('#lanes .lane-legend li')].map(li => li.className + ": " + li.textContent)`)
		for _, want := range []string{"lg-lso", "lg-commit", "lg-abort", "lg-aborted", "lg-gap", "lg-clean", "lg-dirty"} {
			if !slices.ContainsFunc(legend, func(s string) bool { return len(s) > len(want) && s[:len(want)+1] == want+":" }) {
				t.Errorf("%s: the legends %q lack %s", lang, legend, want)
			}
		}
		if lang != "en" {
			// What the lanes say of transactions and the cleaner, in tooltips
			// and labels, is Chinese too.
			said := eval[[]string](b, `[...document.querySelectorAll('#lanes .cleaner-ratio, #lanes g.marker.lso title, #lanes g.cleaner title, #lanes .compacted-gap title')].map(e => e.textContent)
				.concat([...document.querySelectorAll('#lanes .rec.control, #lanes .rec.aborted')].map(e => e.getAttribute("aria-label")))`)
			if len(said) == 0 {
				t.Errorf("%s: no lane texts of transactions or the cleaner found", lang)
			}
			for _, text := range said {
				if words := i18ntest.LatinWords(text); len(words) > 0 {
					t.Errorf("%s lane text %q: English words %v", lang, text, words)
				}
			}
			for _, item := range legend {
				if words := i18ntest.LatinWords(item, "lg-lso", "lg-commit", "lg-abort", "lg-aborted", "lg-gap", "lg-clean", "lg-dirty"); len(words) > 0 {
					t.Errorf("%s legend %q: English words %v", lang, item, words)
				}
			}
		}
		b.viewport(1366, 768, false)
	}
}

// laneLayoutProblems is a JavaScript expression listing what is wrong with
// the layout of the lane figure sel finds, brought into view: a marker
// (HW, LEO, LSO) or a cleaner's section outside its lane's
// band (from its top to the next lane's), two labels of one lane that
// overlap, or two items of the legend that do.
func laneLayoutProblems(sel string) string {
	return `(f => {
  const out = [];
  f.scrollIntoView({block: "nearest"});
  const lanes = [...f.querySelectorAll("g.replica")];
  const svg = f.querySelector("svg.lanes-svg").getBoundingClientRect();
  const overlap = (a, b) => a.left < b.right - .5 && b.left < a.right - .5 && a.top < b.bottom - .5 && b.top < a.bottom - .5;
  lanes.forEach((g, i) => {
    const top = svg.top + parseFloat(g.getAttribute("transform").split(",")[1]);
    const bottom = i + 1 < lanes.length ? svg.top + parseFloat(lanes[i + 1].getAttribute("transform").split(",")[1]) : svg.bottom;
    const name = "broker " + g.dataset.broker;
    // (A segment boundary's label reaches a pixel or two above its lane.)
    g.querySelectorAll("g.marker, g.cleaner rect, g.cleaner text").forEach(m => {
      const r = m.getBoundingClientRect();
      if (r.width === 0 && r.height === 0) return;
      if (r.top < top - .5 || r.bottom > bottom + .5 || r.left < svg.left - .5 || r.right > svg.right + .5)
        out.push(name + ": " + (m.getAttribute("class") || m.tagName) + " outside its lane");
    });
    const labels = [...g.querySelectorAll("text")].filter(t => t.getBoundingClientRect().width > 0);
    for (let a = 0; a < labels.length; a++) for (let b = a + 1; b < labels.length; b++)
      if (overlap(labels[a].getBoundingClientRect(), labels[b].getBoundingClientRect()))
        out.push(name + ": labels " + JSON.stringify(labels[a].textContent) + " and " + JSON.stringify(labels[b].textContent) + " overlap");
  });
  const items = [...f.querySelectorAll(".lane-legend li")];
  for (let a = 0; a < items.length; a++) {
    const r = items[a].getBoundingClientRect();
    if (r.right > document.documentElement.clientWidth + .5) out.push("legend item " + a + " beyond the screen's right edge");
    for (let b = a + 1; b < items.length; b++)
      if (overlap(r, items[b].getBoundingClientRect())) out.push("legend items " + a + " and " + b + " overlap");
  }
  return out;
})(document.querySelector('` + sel + `'))`
}
