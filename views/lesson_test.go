package views

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/a-h/templ"

	"tidemark/apiv1"
	"tidemark/events"
	"tidemark/i18n"
)

// TestLessonLanesShowTruncatedValue: a truncated record in a lesson's
// lanes shows its value (shortened) and why it went, in the page's
// language, and a "look at" pointer to it shows its value.
func TestLessonLanesShowTruncatedValue(t *testing.T) {
	tr := events.TruncatedRecord{Offset: 1, LeaderEpoch: 0, Value: "m2-a-long-value",
		Reason: "high-watermark (rule high-watermark): truncate to HW 1", ReasonKey: "event.truncation",
		ReasonArgs: []string{"high-watermark", "high-watermark", "truncate to HW 1"}}
	v := LessonRunView{RunID: "r", Live: true, Lanes: events.Snapshot{Topics: []events.Topic{{Name: "hw", Partitions: []events.Partition{
		{Partition: 0, Leader: 1, ISR: []int32{1}, ReplicaLogs: []events.Replica{{Broker: 2, LEO: 1, HW: 1, Truncated: []events.TruncatedRecord{tr}}}},
	}}}}}
	for _, lang := range i18n.Languages() {
		var buf bytes.Buffer
		if err := LessonRun(Page{Lang: lang}, v).Render(context.Background(), &buf); err != nil {
			t.Fatal(err)
		}
		why := i18n.Message(lang, tr.Reason, tr.ReasonKey, tr.ReasonArgs)
		if want := "1:m2-a-long-…/e0 (" + why + ")"; !strings.Contains(buf.String(), want) {
			t.Errorf("%s: lanes lack %q", lang, want)
		}
	}
}

// TestLessonLanesNoLeader: a partition with no leader says so, translated,
// instead of "leader -1".
func TestLessonLanesNoLeader(t *testing.T) {
	v := LessonRunView{RunID: "r", Lanes: events.Snapshot{Topics: []events.Topic{{Name: "hw", Partitions: []events.Partition{
		{Partition: 0, Leader: events.NoBroker, LeaderEpoch: 1, ISR: []int32{1}},
	}}}}}
	for _, lang := range i18n.Languages() {
		var buf bytes.Buffer
		if err := LessonRun(Page{Lang: lang}, v).Render(context.Background(), &buf); err != nil {
			t.Fatal(err)
		}
		if want := i18n.T(lang, "lesson.lanes.partition.offline", 1, "[1]"); !strings.Contains(buf.String(), want) {
			t.Errorf("%s: lanes lack %q", lang, want)
		}
		if strings.Contains(buf.String(), "leader -1") {
			t.Errorf("%s: lanes print leader -1", lang)
		}
	}
}

// TestChineseLabelsUseFullWidthColons: a label before what it names ends
// in the language's colon: no ASCII colon after Chinese on a lesson page
// (its result heading, a broken run, the language switch) or the overview.
func TestChineseLabelsUseFullWidthColons(t *testing.T) {
	step := &LessonStepView{Number: 1, Title: "寫入到達 leader"}
	v := LessonRunView{RunID: "r", Cursor: 1, Total: 2, Error: "step 2: broken", Last: step}
	asciiColon := regexp.MustCompile(`[\p{Han}）]:`)
	for _, lang := range []i18n.Lang{i18n.SimplifiedChinese, i18n.TraditionalChinese} {
		for name, c := range map[string]templ.Component{"lesson run": LessonRun(Page{Lang: lang}, v), "overview": Overview(Page{Lang: lang}, events.Snapshot{}, nil)} {
			var buf bytes.Buffer
			if err := c.Render(context.Background(), &buf); err != nil {
				t.Fatal(err)
			}
			for _, m := range asciiColon.FindAllStringIndex(buf.String(), -1) {
				t.Errorf("%s %s: ASCII colon after Chinese in %q", lang, name, buf.String()[max(0, m[0]-40):m[1]])
			}
		}
	}
	var buf bytes.Buffer
	if err := LessonRun(Page{Lang: i18n.English}, v).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "What happened: 1. 寫入到達 leader") || !strings.Contains(buf.String(), "This run broke: step 2: broken") {
		t.Error("English labels lost their colon and space")
	}
}

// TestClassDashboardActionsApart: a seat's actions — the "Show on screen"
// link, the New code and Release forms and the Reset link — are apart
// (they read "Show on screenReset").
func TestClassDashboardActionsApart(t *testing.T) {
	var buf bytes.Buffer
	if err := ClassDashboard(Page{}, ClassView{Name: "QA", Seats: []SeatRow{{Seat: 1, Code: "AAAAA-AAAAA", Name: "Ada"}}}).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for what, re := range map[string]string{
		"the link and New code":  `</a>\s+<form method="post" action="/class/seats/1/code"`,
		"New code and Release":   `</form>\s+<form method="post" action="/class/seats/1/code" class="inline"><input type="hidden" name="release"`,
		"Release and Reset link": `</form>\s+<a href="/class\?reset=1#reset"`,
	} {
		if !regexp.MustCompile(re).MatchString(page) {
			t.Errorf("%s touch", what)
		}
	}
}

// TestPartitionPageOfflineLeader: the partition page's leader fact says
// what the live panel's lanes say of a partition without a leader.
func TestPartitionPageOfflineLeader(t *testing.T) {
	v := apiv1.PartitionView{Topic: "demo", PartitionInfo: apiv1.PartitionInfo{Leader: events.NoBroker, LeaderEpoch: 1, Offline: true}}
	for _, lang := range i18n.Languages() {
		var buf bytes.Buffer
		if err := Partition(Page{Lang: lang}, PartitionPage{View: v}).Render(context.Background(), &buf); err != nil {
			t.Fatal(err)
		}
		if want := `<dd id="pv-leader">` + i18n.T(lang, "panel.nobroker") + `</dd>`; !strings.Contains(buf.String(), want) {
			t.Errorf("%s: no %s", lang, want)
		}
	}
}

// TestBuildsOnListSeparator: the lessons a lesson builds on are listed with
// the language's separator (、 in Chinese, not ", ").
func TestBuildsOnListSeparator(t *testing.T) {
	parts := []LessonPart{{Key: "failures", Items: []LessonItem{{ID: "16-x", Number: 16, Title: "x",
		BuildsOn: []LessonRef{{ID: "12-a", Name: "12 · a"}, {ID: "13-b", Name: "13 · b"}}}}}}
	for lang, want := range map[i18n.Lang]string{i18n.English: "12 · a</a>, <a", i18n.SimplifiedChinese: "12 · a</a>、<a", i18n.TraditionalChinese: "12 · a</a>、<a"} {
		var buf bytes.Buffer
		if err := LessonList(Page{Lang: lang}, parts, nil).Render(context.Background(), &buf); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), want) {
			t.Errorf("%s: no %q", lang, want)
		}
	}
}

// TestLessonPageShowsRules: a lesson's page says under its title which
// rules are in force, the release they follow and the fencing.rule value,
// in the page's language, for every rule (the lab-only one says so).
func TestLessonPageShowsRules(t *testing.T) {
	for _, rule := range fencingRules {
		v := LessonRunView{RunID: "r", Title: "t", Lanes: events.Snapshot{Configs: map[string]string{"fencing.rule": rule}}}
		for _, lang := range i18n.Languages() {
			var buf bytes.Buffer
			if err := LessonRun(Page{Lang: lang}, v).Render(context.Background(), &buf); err != nil {
				t.Fatal(err)
			}
			want := templ.EscapeString(i18n.T(lang, "lesson.rules", i18n.T(lang, "ui.release."+rule), rule))
			if !strings.Contains(buf.String(), `id="lesson-rules"`) || !strings.Contains(buf.String(), want) {
				t.Errorf("%s, %s: the page lacks %q", rule, lang, want)
			}
			if strings.Contains(want, "ui.release.") {
				t.Errorf("%s, %s: no release text: %q", rule, lang, want)
			}
		}
	}
	var buf bytes.Buffer
	if err := LessonRun(Page{Lang: i18n.English}, LessonRunView{RunID: "r", Lanes: events.Snapshot{Configs: map[string]string{"fencing.rule": "kraft-elr"}}}).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "Kafka 4.1") {
		t.Errorf("the default rule's line does not name Kafka 4.1: %s", buf.String())
	}
}
