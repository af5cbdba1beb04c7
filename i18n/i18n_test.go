package i18n

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"tidemark/events"
	"tidemark/i18n/i18ntest"
)

var verb = regexp.MustCompile(`%[-+# 0-9.]*[a-zA-Z%]`)

// TestCataloguesMatch: every language has exactly the English keys, no empty
// text, and the same fmt verbs in the same order.
func TestCataloguesMatch(t *testing.T) {
	en := Keys(English)
	if len(en) == 0 {
		t.Fatal("empty English catalog")
	}
	for _, l := range Languages()[1:] {
		if got := Keys(l); !slices.Equal(got, en) {
			missing, extra := diff(en, got), diff(got, en)
			t.Errorf("%s: missing %v, extra %v", l, missing, extra)
		}
		for _, k := range en {
			text := T(l, k)
			if text == "" {
				t.Errorf("%s: %s is empty", l, k)
			}
			if a, b := verb.FindAllString(T(English, k), -1), verb.FindAllString(catalogs[l][k], -1); !slices.Equal(a, b) {
				t.Errorf("%s: %s has verbs %v, English %v", l, k, b, a)
			}
		}
	}
}

func diff(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

func TestPick(t *testing.T) {
	cases := []struct {
		cookie, header string
		want           Lang
	}{
		{"", "", English},
		{"", "zh-CN,zh;q=0.9,en;q=0.8", SimplifiedChinese},
		{"", "zh-TW", TraditionalChinese},
		{"", "zh-Hant-HK;q=0.9, en;q=0.5", TraditionalChinese},
		{"", "fr-FR, en;q=0.3", English},
		{"", "fr-FR;q=0.9, zh-HK;q=0.8, en;q=0.7", TraditionalChinese},
		{"", "en;q=0.2, zh;q=0.9", SimplifiedChinese},
		{"zh-Hant", "en", TraditionalChinese},
		{"klingon", "zh", SimplifiedChinese},
		{"", ";;;,,q=", English},
	}
	for _, c := range cases {
		if got := Pick(c.cookie, c.header); got != c.want {
			t.Errorf("Pick(%q, %q) = %s, want %s", c.cookie, c.header, got, c.want)
		}
	}
}

func TestT(t *testing.T) {
	if got := T(SimplifiedChinese, "lang.switch"); got != "语言" {
		t.Fatalf("T = %q", got)
	}
	if got := T(English, "no.such.key"); got != "no.such.key" {
		t.Fatalf("missing key gives %q", got)
	}
}

// TestEventTexts: event texts take their arguments as text (%s only,
// events.Render formats them again in the reader's language), and the
// helpers build what the event carries.
func TestEventTexts(t *testing.T) {
	for _, k := range Keys(English) {
		if !strings.HasPrefix(k, "event.") {
			continue
		}
		for _, v := range verb.FindAllString(T(English, k), -1) {
			if v != "%s" {
				t.Errorf("%s uses %s: event texts take only %%s", k, v)
			}
		}
	}
	for _, n := range []int{1, 2} {
		if Plural("event.word.segments", n) != map[int]string{1: "event.word.segments.one", 2: "event.word.segments.other"}[n] {
			t.Errorf("Plural(%d) = %s", n, Plural("event.word.segments", n))
		}
	}
	en, args := Text("event.broker.started.recovered", Count("event.word.segments", 1), Count("event.word.torn-bytes", 12))
	if want := "recovered after an unclean shutdown: 1 segment re-read, 12 torn bytes cut"; en != want {
		t.Errorf("English %q, want %q", en, want)
	}
	if !slices.Equal(args, []string{"event.word.segments.one:1", "event.word.torn-bytes.other:12"}) {
		t.Errorf("args %q", args)
	}
	left := []events.ISRChange{{Cause: events.ISRFenced, Broker: 2}}
	e := EventMessage(events.Event{Kind: events.KindISR}, "event.isr.removed", "demo-0", ISRCause(left), ISRToELR(left), []int32{1, 3}, "", 4)
	if e.Message != "demo-0: broker 2 left: the controller fenced it; ISR [1 3], partition epoch 4" || e.MessageKey != "event.isr.removed" {
		t.Errorf("event %+v", e)
	}
	if got := Message(SimplifiedChinese, e.Message, e.MessageKey, e.MessageArgs); got != "demo-0：broker 2 离开：控制器隔离了它；ISR [1 3]，分区 epoch 4" {
		t.Errorf("zh-Hans %q", got)
	}
	if got := Message(TraditionalChinese, "old English", "", nil); got != "old English" {
		t.Errorf("an event without a key shows %q", got)
	}
	// A message said inside another one.
	n := EventMessage(events.Event{}, "event.broker.not-running", Nested(EventMessage(events.Event{}, "event.broker.fenced.request", 3)))
	if n.Message != "broker 3 fenced on request (the broker is not running)" {
		t.Errorf("nested %q", n.Message)
	}
	if KafkaError("NOT_ENOUGH_REPLICAS") != "errors.NOT_ENOUGH_REPLICAS" || KafkaError("NO_SUCH_CODE") != "errors.other" {
		t.Error("KafkaError")
	}
}

// TestChineseSpacing: in both Chinese catalogues and in the Chinese lines
// of every lesson and scenario file, a Latin word or number is set off
// from Chinese characters by a space (i18ntest.SpacingProblems), as the
// great majority of them already were ("请给出segment 文件" was not).
func TestChineseSpacing(t *testing.T) {
	if len(i18ntest.SpacingProblems("的segment")) == 0 || len(i18ntest.SpacingProblems("3个")) == 0 {
		t.Fatal("the check finds nothing")
	}
	if p := i18ntest.SpacingProblems("时钟%s · %[1]d 个，{hw 1} 为 HW：`acks=all`"); len(p) != 0 {
		t.Fatalf("placeholders and punctuation: %v", p)
	}
	for _, l := range []Lang{SimplifiedChinese, TraditionalChinese} {
		for _, k := range Keys(l) {
			for _, p := range i18ntest.SpacingProblems(catalogs[l][k]) {
				t.Errorf("%s %s: %s", l, k, p)
			}
		}
	}
	files, _ := filepath.Glob("../lessons/data/*.lesson")
	more, _ := filepath.Glob("../lessons/scenarios/*.scenario")
	if len(files) == 0 {
		t.Fatal("no lesson files")
	}
	for _, f := range append(files, more...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if !strings.Contains(line, "zh-Hans:") && !strings.Contains(line, "zh-Hant:") {
				continue
			}
			for _, p := range i18ntest.SpacingProblems(line) {
				t.Errorf("%s:%d: %s", f, i+1, p)
			}
		}
	}
}

// TestOfflineLeaderWording: a partition without a leader reads the same in
// the live panel's lanes ("panel.lane.meta" with "panel.nobroker") and in
// the lesson page's server-rendered lanes, in every language.
func TestOfflineLeaderWording(t *testing.T) {
	head := func(s string) string {
		h, _, _ := strings.Cut(s, "·")
		return strings.TrimSpace(h)
	}
	for _, l := range Languages() {
		panel := head(T(l, "panel.lane.meta", T(l, "panel.nobroker"), 3, "[]", 5))
		lanes := head(T(l, "lesson.lanes.partition.offline", 3, "[]"))
		if panel != lanes {
			t.Errorf("%s: the panel says %q, the lesson's lanes %q", l, panel, lanes)
		}
	}
}
