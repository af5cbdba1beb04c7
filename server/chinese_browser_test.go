package server

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"tidemark/i18n"
	"tidemark/i18n/i18ntest"
	"tidemark/server/cluster"
)

// shownTextJS returns the text a reader sees on the page, one text node
// a line: visible text outside code (code, pre, kbd, samp: names typed
// as they are), outside elements in another language (the language
// switch's "English") and outside what is hidden; SVG text (the stage,
// the lanes) included.
const shownTextJS = `(() => {
  const out = [];
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n; (n = walk.nextNode()); ) {
    const el = n.parentElement;
    if (!el || !n.textContent.trim() || el.closest("code,pre,kbd,samp,script,style,noscript,template,[hidden]")) continue;
    const l = el.closest("[lang]");
    if (l && !l.lang.startsWith("zh")) continue;
    if (!el.getClientRects().length) continue;
    out.push(n.textContent.trim());
  }
  return out.join("\n");
})()`

// halfWidthPunct is an ASCII colon, semicolon or comma after Chinese
// text or its closing bracket (with what follows, to find it): Chinese
// takes full-width punctuation.
var halfWidthPunct = regexp.MustCompile(`[\p{Han}）][:;,][^\n]{0,20}`)

// submitJS submits the page's control form for action with the fields
// given, as a learner would: the lab controls' form, not the stage's menu
// of the same action (the panel sends it and shows the answer in #flash).
func submitJS(action string, fields map[string]string) string {
	var b strings.Builder
	b.WriteString(`(() => { const f = document.querySelector('form[data-action="` + action + `"]:not(#panel form)'); `)
	for k, v := range fields {
		b.WriteString(`{ const el = f.elements[` + strconv.Quote(k) + `]; if (el.type === "checkbox") el.checked = ` + strconv.FormatBool(v == "true") + `; else el.value = ` + strconv.Quote(v) + `; } `)
	}
	b.WriteString(`for (const id of ["flash", "stage-flash"]) { const el = document.getElementById(id); if (el) el.innerHTML = ""; } f.requestSubmit(); return true; })()`)
	return b.String()
}

// TestBrowserChineseHasNoEnglish opens every page a learner reaches
// without setup (overview, partition, segments, lessons, a lesson run,
// chaos, compare) in both Chinese scripts with the live panel running,
// after a crash, a restart, a one-way cut and produces (acks=0 and 1),
// and fails on any Latin word the page shows outside
// i18ntest.AllowedLatin, config names, error codes, code and the lab's
// identifiers (topic names, record values, client ids). On the way it
// checks that the network controls follow the live state: a one-way cut
// is listed with its open direction at once, and gone after healing.
func TestBrowserChineseHasNoEnglish(t *testing.T) {
	b := startBrowserLab(t, false)
	// The lab's names: its producer's client id, the demo topic, the
	// lessons' topics and record keys, the produce form's value.
	identifiers := []string{cluster.UIClientID, "demo", "record", "lab", "hw", "le", "cp", "ap", "zk", "elr", "last",
		"orders", "logs", "alice", "carol", "dave"}
	check := func(lang i18n.Lang, page string) {
		t.Helper()
		text := eval[string](b, shownTextJS)
		seen := map[string]bool{}
		for _, m := range halfWidthPunct.FindAllString(text, -1) {
			t.Errorf("%s %s: half-width punctuation in %q", lang, page, m)
		}
		for _, w := range i18ntest.LatinWords(text, identifiers...) {
			if !seen[w] {
				seen[w] = true
				t.Errorf("%s %s shows %q", lang, page, w)
			}
		}
		if len(seen) > 0 && testing.Verbose() {
			t.Logf("%s %s:\n%s", lang, page, text)
		}
	}
	flash := func(lang i18n.Lang, what string) string {
		t.Helper()
		// Said where the control is: on the stage for its own controls.
		answer := `document.querySelector("#flash .flash.ok, #flash .flash.bad, #stage-flash .flash.ok, #stage-flash .flash.bad")`
		b.poll(answer+` !== null`, what+" answered")
		f := eval[string](b, answer+`.textContent`)
		if !strings.HasPrefix(f, "✓") {
			t.Fatalf("%s %s: %q", lang, what, f)
		}
		return f
	}
	for i, lang := range []i18n.Lang{i18n.SimplifiedChinese, i18n.TraditionalChinese} {
		b.open("/ui/lang?set="+string(lang)+"&next=/", true)
		if got := eval[string](b, `document.documentElement.lang`); got != string(lang) {
			t.Fatalf("html lang %q, want %s", got, lang)
		}
		// A crash and a restart through the API (a different broker in
		// each language), then a one-way cut and produces through the
		// page's own controls, whose answers are checked.
		crashed := int32(3 - i)
		b.api("POST", "api/v1/brokers/"+strconv.Itoa(int(crashed))+"/crash", "", nil)
		b.api("POST", "api/v1/brokers/"+strconv.Itoa(int(crashed))+"/restart", "", nil)
		eval[bool](b, submitJS("cut", map[string]string{"from": "2", "to": "3", "oneway": "true"}))
		if f, want := flash(lang, "the cut"), i18n.T(lang, "ui.done.cut1", "2", "3", "2", "3", "3", "2"); !strings.Contains(f, want) {
			t.Errorf("%s: the cut answered %q, want %q", lang, f, want)
		}
		// The network controls show the cut as the stage does, without a reload.
		cut1 := i18n.T(lang, "panel.network.cut1", 2, 3, 3, 2)
		b.poll(`document.getElementById("network-cuts").textContent.includes(`+strconv.Quote(cut1)+`)`, "the network controls to list the cut")
		eval[bool](b, submitJS("produce", map[string]string{"topic": "demo", "partition": "0", "count": "3", "acks": "0"}))
		if f, want := flash(lang, "the acks=0 produce"), i18n.T(lang, "ui.done.produce0", 3, 0); !strings.Contains(f, want) {
			t.Errorf("%s: acks=0 answered %q, want %q", lang, f, want)
		}
		eval[bool](b, submitJS("produce", map[string]string{"topic": "demo", "partition": "0", "count": "2", "acks": "1"}))
		flash(lang, "the acks=1 produce")
		b.poll(`document.querySelectorAll("#panel-events li").length > 5`, "the event list to fill")
		check(lang, "/")

		for _, page := range []string{"/topics/demo/partitions/0", "/brokers/1/partitions/demo/0/segments"} {
			b.open(page, page != "/brokers/1/partitions/demo/0/segments")
			check(lang, page)
		}
		b.open("/", true)
		eval[bool](b, submitJS("heal", nil))
		flash(lang, "the heal")
		none := i18n.T(lang, "panel.network.none")
		b.poll(`document.getElementById("network-cuts").textContent.includes(`+strconv.Quote(none)+`)`, "the network controls to show every link up")

		b.open("/lessons", false)
		check(lang, "/lessons")
		b.click(`[data-start="08-hw"]`)
		b.poll(`document.readyState !== "loading" && document.querySelector('#progress[data-cursor="0"]') !== null`, "the lesson run")
		b.click("#next")
		b.poll(`document.readyState !== "loading" && document.querySelector('#progress[data-cursor="1"]') !== null`, "the lesson's first step")
		check(lang, "a lesson run")
		b.click("#stop")
		b.poll(`document.querySelector('[data-start="08-hw"]') !== null`, "the lesson list")

		for _, page := range []string{"/chaos", "/compare"} {
			b.open(page, false)
			check(lang, page)
		}
	}
}
