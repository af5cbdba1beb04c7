package lessons

import (
	"errors"
	"go/ast"
	goparser "go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"tidemark/i18n"
)

// errorKeyArg is, for each function that makes a refusal, the position of
// its catalog key.
var errorKeyArg = map[string]int{"errk": 0, "errf": 1, "parseErr": 2}

// TestParseErrorKeys: every refusal of the lesson language is made from a
// catalog key (never an English format), and every key the parser uses is
// in all three catalogs; no lesson.error.* entry is left unused.
func TestParseErrorKeys(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	fset := token.NewFileSet()
	used := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := goparser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(af, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, _ := strconv.Unquote(lit.Value); strings.HasPrefix(s, "lesson.error.") {
					used[s] = true
				}
			}
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			var name string
			switch fn := call.Fun.(type) {
			case *ast.Ident:
				name = fn.Name
			case *ast.SelectorExpr:
				name = fn.Sel.Name
				if x, ok := fn.X.(*ast.Ident); ok && x.Name == "fmt" && name == "Errorf" && slices.Contains([]string{"script.go", "experiment.go", "value.go"}, f) {
					t.Errorf("%s: fmt.Errorf in the parser: make it keyed (errk)", fset.Position(call.Pos()))
				}
			}
			i, ok := errorKeyArg[name]
			if !ok || len(call.Args) <= i {
				return true
			}
			if id, ok := call.Args[i].(*ast.Ident); ok && id.Name == "key" {
				return true // passing its own key on (errf to parseErr)
			}
			lit, ok := call.Args[i].(*ast.BasicLit)
			if s, _ := strconv.Unquote(litValue(lit)); !ok || !strings.HasPrefix(s, "lesson.error.") {
				t.Errorf("%s: %s without a lesson.error.* key", fset.Position(call.Pos()), name)
			}
			return true
		})
	}
	if len(used) < 100 {
		t.Fatalf("found %d keys in the parser, want its refusals (over 100)", len(used))
	}
	for k := range used {
		for _, l := range i18n.Languages() {
			if _, ok := i18n.Catalog(l)[k]; !ok {
				t.Errorf("%s: not in the %s catalog", k, l)
			}
		}
	}
	for _, k := range i18n.Keys(i18n.English) {
		if strings.HasPrefix(k, "lesson.error.") && !used[k] {
			t.Errorf("%s: in the catalogs, used nowhere", k)
		}
	}
}

func litValue(l *ast.BasicLit) string {
	if l == nil {
		return ""
	}
	return l.Value
}

// englishWords are words of the parser's English refusals that no Chinese
// rendering may keep.
var englishWords = regexp.MustCompile(`\b(want|missing|unknown|needs?|never|before|after|belongs|twice|the|has|not|of|no)\b`)

// TestParseErrorsInChinese: refusals, their nested parts too (an action's
// arguments, a condition's query), read in Chinese; the English is the
// error's Msg.
func TestParseErrorsInChinese(t *testing.T) {
	for _, c := range []struct{ old, new, key string }{
		{"do produce t m1 acks=1", "do produse t m1", "lesson.error.unknown-action"},
		{"acks=1", "acks=2", "lesson.error.usage-do"},
		{"do produce t m1 acks=1", "do produce t m1 timestamp=yesterday", "lesson.error.usage-do"},
		{"do produce t m1 acks=1", "do consume t isolation=serializable", "lesson.error.usage-do"},
		{"do produce t m1 acks=1", "do produce t", "lesson.error.usage-do"},
		{"do produce t m1", "do produce u m1", "lesson.error.topic-never-created-do"},
		{"check leo 1 t == 1", "check leo 4 t == 1", "lesson.error.condition"},
		{"when leo 1 t == 2", "when leno 1 t == 2", "lesson.error.condition"},
		{"leo 1 t == 2", "leo 1 t", "lesson.error.condition-syntax"},
		{"    zh-Hant: 寫入 m1。\n", "", "lesson.error.no-text"},
		{"  choice one when leo 1 t == 2", "  #", "lesson.error.has-second-text"},
		{"  choice one when leo 1 t == 2\n    en: Offset 1\n    zh-Hans: offset 1\n    zh-Hant: offset 1\n  why\n    en: Offsets start at 0.\n    zh-Hans: offset 从 0 开始。\n    zh-Hant: offset 從 0 開始。\n", "", "lesson.error.question-needs-at-least"},
		{"zh-Hans: LEO 为 {leo 1 t}", "zh-Hans: LEO 为 {hw 1 t}", "lesson.error.text-has-placeholders-english"},
		{"do produce t m1 acks=1", "do step forever", "lesson.error.usage-do"},
		{"brokers 1", "brokers 1\nstep\nbrokers 2", "lesson.error.belongs-lesson-header-before"},
		{"part storage\n", "", "lesson.error.no-part"},
	} {
		src := strings.Replace(minimal, c.old, c.new, 1)
		if src == minimal {
			t.Fatalf("%s: the case does not change the file", c.key)
		}
		_, err := ParseScript("m.lesson", []byte(src))
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Key != c.key {
			t.Errorf("%q: %v, want a refusal keyed %s", c.new, err, c.key)
			continue
		}
		if pe.Text(i18n.English) != pe.Msg || pe.Msg == "" || len(pe.Args) != len(pe.args) {
			t.Errorf("%s: English %q, Msg %q, args %q", c.key, pe.Text(i18n.English), pe.Msg, pe.Args)
		}
		for _, l := range []i18n.Lang{i18n.SimplifiedChinese, i18n.TraditionalChinese} {
			zh := pe.Text(l)
			for _, a := range plainArgs(pe.args) { // names and the file's own words
				zh = strings.ReplaceAll(zh, a, "")
			}
			if !strings.ContainsFunc(zh, func(r rune) bool { return unicode.Is(unicode.Han, r) }) || englishWords.MatchString(zh) {
				t.Errorf("%s in %s: %q (English %q)", c.key, l, zh, pe.Msg)
			}
		}
	}
}

// plainArgs are the arguments of a refusal that are not keyed, its parts'
// too, longest first.
func plainArgs(args []any) []string {
	var out []string
	for _, a := range args {
		switch a := a.(type) {
		case *Err:
			out = append(out, plainArgs(a.Args)...)
		case string:
			out = append(out, a, strconv.Quote(a))
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// TestExperimentErrorsInChinese: an experiment file's refusals read in
// Chinese too, their nested parts included.
func TestExperimentErrorsInChinese(t *testing.T) {
	const head = "experiment bad\nduration 10s\n"
	for _, c := range []struct{ src, key string }{
		{head + "workload w acks=2\n", "lesson.error.faults-bad"},
		{head + "workload w idempotence=yes acks=1\n", "lesson.error.faults-bad"},
		{head + "faults f\nat 3s do explode 1\n", "lesson.error.at"},
		{head + "faults f\nat 3s\n", "lesson.error.at"},
		{head + "faults f random 99\n", "lesson.error.faults-bad"},
		{head + "seeds x\n", "lesson.error.seeds"},
		{head + "plot lost by colour\n", "lesson.error.plot"},
		{head + "check lost\n", "lesson.error.check"},
		{head + "colour red\n", "lesson.error.unknown-keyword-experiment"},
		{"duration 10s\n", "lesson.error.file-must-start-experiment"},
	} {
		_, err := ParseExperiment("x.experiment", []byte(c.src))
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Key != c.key {
			t.Errorf("%q: %v, want a refusal keyed %s", c.src, err, c.key)
			continue
		}
		for _, l := range []i18n.Lang{i18n.SimplifiedChinese, i18n.TraditionalChinese} {
			zh := pe.Text(l)
			for _, a := range plainArgs(pe.args) {
				zh = strings.ReplaceAll(zh, a, "")
			}
			if !strings.ContainsFunc(zh, func(r rune) bool { return unicode.Is(unicode.Han, r) }) || englishWords.MatchString(zh) {
				t.Errorf("%s in %s: %q (English %q)", c.key, l, pe.Text(l), pe.Msg)
			}
		}
	}
}
