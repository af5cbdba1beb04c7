package views

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"tidemark/i18n"
	"tidemark/i18n/i18ntest"
)

// TestOpenRunsInEveryLanguage: the open-runs list has one item per run,
// each with Continue and an End form posting to the run's stop, says
// finished, in use now and minutes ago in the page's language, and is left
// out when the learner has no run.
func TestOpenRunsInEveryLanguage(t *testing.T) {
	runs := []OpenRunView{
		{ID: "aa11", Title: "08 · HW", Cursor: 2, Total: 5},
		{ID: "bb22", Title: "01 · P", Cursor: 4, Total: 4, Finished: true, Idle: 3*time.Minute + 10*time.Second},
	}
	for _, lang := range i18n.Languages() {
		p := Page{Lang: lang}
		var buf bytes.Buffer
		if err := OpenRuns(p, runs).Render(context.Background(), &buf); err != nil {
			t.Fatal(err)
		}
		html := buf.String()
		_, list, ok := strings.Cut(html, `<ul data-testid="open-runs">`)
		if !ok {
			t.Fatalf("%s: no open-runs list in %s", lang, html)
		}
		list, _, _ = strings.Cut(list, "</ul>")
		if n := strings.Count(list, "<li "); n != 2 {
			t.Fatalf("%s: %d items, want 2", lang, n)
		}
		for _, want := range []string{
			`action="/lessons/runs/aa11/stop"`, `action="/lessons/runs/bb22/stop"`, `href="/lessons/runs/bb22"`,
			p.t("lesson.step.of", 2, 5), p.t("lesson.runs.finished"), p.t("lesson.runs.in-use"),
			p.t("lesson.runs.used-minutes", 3), p.t("lesson.runs.end"), p.t("lesson.runs.continue"), p.t("lesson.runs.title"),
		} {
			if !strings.Contains(html, want) {
				t.Errorf("%s: %q missing", lang, want)
			}
		}
		if strings.Contains(html, "lesson.runs.") {
			t.Errorf("%s: an untranslated key in %s", lang, html)
		}
		if lang != i18n.English {
			for _, text := range []string{p.t("lesson.runs.title"), p.t("lesson.runs.intro"), p.t("lesson.runs.used-seconds", 40),
				p.t("limits.clusters-full.own", "4", "2"), p.t("limits.clusters-full.wait", "4", "90"), p.t("limits.clusters-full.busy", "4")} {
				for _, pr := range i18ntest.ChineseProblems(text) {
					t.Errorf("%s: %s", lang, pr)
				}
			}
		}
		buf.Reset()
		if err := OpenRuns(p, nil).Render(context.Background(), &buf); err != nil || buf.Len() != 0 {
			t.Fatalf("%s: no runs rendered %q (%v)", lang, buf.String(), err)
		}
	}
}
