package lessons

import (
	"context"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// languageDoc is the language's reference, kept next to the code it
// describes by TestLanguageDoc.
const languageDoc = "../docs/language.md"

// vocabRow is a row of the reference's action and query tables:
// | `word` | `args` (— for none) | runs on | what it does |
var vocabRow = regexp.MustCompile("^\\| `([a-z0-9-]+)` \\| (.*?) \\| (both|cluster|rules) \\| (.*) \\|$")

// expectRow is a row of the expected violations' table.
var expectRow = regexp.MustCompile("^\\| `expect ([a-z-]+) ")

// TestLanguageDoc: docs/language.md lists every action and query of the
// vocabulary (the rules-only words included) with the arguments the
// parser checks, the options it accepts and the back-ends that run it,
// and no word the vocabulary lacks; it lists every expect kind; and its
// two examples parse and play. A word added, renamed or moved to another
// back-end without its line in the reference fails here.
func TestLanguageDoc(t *testing.T) {
	src, err := os.ReadFile(languageDoc)
	if err != nil {
		t.Fatal(err)
	}
	rules, err := backend(BackendRules)
	if err != nil {
		t.Fatal(err) // backends_test.go links the rules back-end into this binary
	}
	runsOn := func(onRules, rulesOnly bool) string {
		switch {
		case rulesOnly:
			return "rules"
		case onRules:
			return "both"
		}
		return "cluster"
	}
	seen := map[string]map[string]bool{"Actions": {}, "Queries": {}}
	var kinds []string
	section := ""
	for i, line := range strings.Split(string(src), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			section = h
			continue
		}
		if m := expectRow.FindStringSubmatch(line); m != nil {
			kinds = append(kinds, m[1])
		}
		m := vocabRow.FindStringSubmatch(line)
		if m == nil || seen[section] == nil {
			continue
		}
		name, argsCell, where := m[1], m[2], m[3]
		at := func(format string, a ...any) {
			t.Helper()
			t.Errorf("%s:%d: "+format, append([]any{languageDoc, i + 1}, a...)...)
		}
		if seen[section][name] {
			at("%s listed twice", name)
		}
		seen[section][name] = true
		var args string
		var keys []string
		var want string
		if section == "Actions" {
			spec, ok := actions[name]
			if !ok {
				at("action %q does not exist", name)
				continue
			}
			args, keys, want = spec.args, spec.keys, runsOn(rules.Actions[name], rulesOnlyActions[name])
		} else {
			spec, ok := queries[name]
			if !ok {
				at("query %q does not exist", name)
				continue
			}
			args, want = spec.args, runsOn(rules.Queries[name], rulesOnlyQueries[name])
		}
		wantCell := "`" + args + "`"
		if args == "" {
			wantCell = "—"
		}
		if argsCell != wantCell {
			at("%s takes %s, the doc says %s", name, wantCell, argsCell)
		}
		if where != want {
			at("%s runs on %s, the doc says %s", name, want, where)
		}
		for _, k := range keys {
			if !strings.Contains(line, "`"+k+"`") {
				at("%s: option %s is not listed", name, k)
			}
		}
	}
	for _, n := range actionNames() {
		if !seen["Actions"][n] {
			t.Errorf("action %s is missing from %s (## Actions)", n, languageDoc)
		}
	}
	for _, n := range queryNames() {
		if !seen["Queries"][n] {
			t.Errorf("query %s is missing from %s (## Queries)", n, languageDoc)
		}
	}
	slices.Sort(kinds)
	if want := sortedKeys(violations); !slices.Equal(kinds, want) {
		t.Errorf("expect kinds in the doc %v, want %v", kinds, want)
	}
	t.Logf("%d actions and %d queries documented", len(seen["Actions"]), len(seen["Queries"]))

	// The examples: a lesson and a scenario, each played as a scenario
	// (every check must hold, every show block match).
	for _, lang := range []string{"lesson", "scenario"} {
		block := fenced(string(src), lang)
		if block == "" {
			t.Errorf("no ```%s example in %s", lang, languageDoc)
			continue
		}
		s, err := ParseScript("language.md:"+lang, []byte(block))
		if err != nil {
			t.Errorf("the %s example: %v", lang, err)
			continue
		}
		for _, run := range s.Runs() {
			if err := RunScenario(context.Background(), s, run, t.TempDir()); err != nil {
				t.Errorf("the %s example on %s: %v", lang, run, err)
			}
		}
	}
}

// fenced is the first code block of md fenced as ```lang.
func fenced(md, lang string) string {
	_, rest, ok := strings.Cut(md, "\n```"+lang+"\n")
	if !ok {
		return ""
	}
	body, _, _ := strings.Cut(rest, "\n```")
	return body + "\n"
}
