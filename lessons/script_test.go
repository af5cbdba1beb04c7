package lessons

import (
	"errors"
	"go/ast"
	goparser "go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"tidemark/i18n"
	"tidemark/i18n/i18ntest"
)

// minimal is a valid lesson file that the cases below break one line at a
// time.
const minimal = `lesson 90-teacher
part storage
brokers 1
title
  en: A teacher's lesson
  zh-Hans: 老师的课程
  zh-Hant: 老師的課程
summary
  en: One message.
  zh-Hans: 一条消息。
  zh-Hant: 一筆訊息。
setup
  do create-topic t
step
  title
    en: Write
    zh-Hans: 写入
    zh-Hant: 寫入
  explain
    en: m1 is written.
    zh-Hans: 写入 m1。
    zh-Hant: 寫入 m1。
  question
    en: Where does m1 go?
    zh-Hans: m1 去哪里？
    zh-Hant: m1 去哪裡？
  choice zero when leo 1 t == 1
    en: Offset 0
    zh-Hans: offset 0
    zh-Hant: offset 0
  why
    en: The first offset is 0.
    zh-Hans: 第一个 offset 是 0。
    zh-Hant: 第一個 offset 是 0。
  choice one when leo 1 t == 2
    en: Offset 1
    zh-Hans: offset 1
    zh-Hant: offset 1
  why
    en: Offsets start at 0.
    zh-Hans: offset 从 0 开始。
    zh-Hant: offset 從 0 開始。
  do produce t m1 acks=1
  check leo 1 t == 1
    en: LEO is {leo 1 t}
    zh-Hans: LEO 为 {leo 1 t}
    zh-Hant: LEO 為 {leo 1 t}
`

func TestParseScriptMinimal(t *testing.T) {
	s, err := ParseScript("m.lesson", []byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	if s.ID != "90-teacher" || s.Number != 90 || len(s.Steps) != 1 || len(s.Steps[0].Choices) != 2 || len(s.Steps[0].Items) != 2 {
		t.Fatalf("parsed %+v", s)
	}
}

// TestParseScriptErrors: each broken file is refused with the line at
// fault and what is wrong.
func TestParseScriptErrors(t *testing.T) {
	for _, c := range []struct {
		name, old, new string
		line           int
		msg            string
	}{
		{"unknown action", "do produce t m1 acks=1", "do produse t m1", 43, `unknown action "produse"`},
		{"bad acks", "acks=1", "acks=2", 43, "acks=2: want 0, 1 or all"},
		{"unknown topic", "do produce t m1", "do produce u m1", 43, `topic "u" is never created`},
		{"broker out of range", "check leo 1 t == 1", "check leo 4 t == 1", 44, `broker "4": want 1 to 1`},
		{"missing language", "    zh-Hant: 寫入 m1。\n", "", 19, "has no zh-Hant text"},
		{"unknown language", "zh-Hant: 寫入 m1。", "fr: écrire m1", 22, `unknown language "fr"`},
		{"no why", "  why\n    en: Offsets start at 0.\n    zh-Hans: offset 从 0 开始。\n    zh-Hant: offset 從 0 開始。\n", "", 35, "choice one has no why"},
		{"one choice", "  choice one when leo 1 t == 2", "  #", 36, "why of choice zero has a second en text"},
		{"bad condition", "leo 1 t == 2", "leo 1 t", 35, "want QUERY OP VALUE"},
		{"unknown query", "when leo 1 t == 2", "when leno 1 t == 2", 35, `unknown query "leno"`},
		{"placeholder differs", "zh-Hans: LEO 为 {leo 1 t}", "zh-Hans: LEO 为 {hw 1 t}", 44, "placeholders"},
		{"bad id", "lesson 90-teacher", "lesson teacher", 1, "lesson id"},
		{"bad part", "part storage", "part cooking", 2, `part "cooking"`},
		{"bad duration", "do produce t m1 acks=1", "do step forever", 43, `duration "forever"`},
		{"keyword misplaced", "brokers 1", "brokers 1\nstep\nbrokers 2", 5, "belongs to the lesson's header"},
		{"control character", "  en: Write", "  en: Wr\x00ite", 16, "control character"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := strings.Replace(minimal, c.old, c.new, 1)
			if src == minimal {
				t.Fatalf("case does not change the file")
			}
			_, err := ParseScript("m.lesson", []byte(src))
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("err %v, want a ParseError", err)
			}
			if pe.Line != c.line || !strings.Contains(pe.Msg, c.msg) || pe.File != "m.lesson" {
				t.Fatalf("got %v, want line %d with %q", err, c.line, c.msg)
			}
		})
	}
	if _, err := ParseScript("big.lesson", make([]byte, MaxScriptBytes+1)); err == nil {
		t.Fatal("an oversized file was accepted")
	}
}

// FuzzParseScript: any input is either a Script or a ParseError with a
// line inside the file; never a panic.
func FuzzParseScript(f *testing.F) {
	f.Add([]byte(minimal))
	for _, l := range All() {
		if b, err := builtin.ReadFile("data/" + l.File); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("lesson 01-x\nstep\nchoice a when {x} == {y}\n"))
	scenarios, _ := filepath.Glob("scenarios/*.scenario")
	for _, file := range scenarios {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		s, err := ParseScript("f.lesson", src)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("not a ParseError: %v", err)
			}
			if pe.Line < 0 || pe.Line > strings.Count(string(src), "\n")+1 {
				t.Fatalf("line %d outside the file: %v", pe.Line, err)
			}
			return
		}
		if s.ID == "" || len(s.Steps) == 0 {
			t.Fatalf("accepted a lesson without id or steps: %+v", s)
		}
		if _, err := compile(s); err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("compile: %v", err)
			}
		}
	})
}

// TestAddDir: a teacher's directory adds its lessons to the path; a bad
// file refuses the directory with the file, line and reason, and leaves
// the catalog as it was.
func TestAddDir(t *testing.T) {
	before := len(All())
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "90-teacher.lesson"), []byte(minimal), 0o644); err != nil {
		t.Fatal(err)
	}
	ls, err := AddDir(dir)
	if err != nil || len(ls) != 1 {
		t.Fatalf("AddDir: %v %d", err, len(ls))
	}
	t.Cleanup(func() {
		os.Remove(filepath.Join(dir, "90-teacher.lesson"))
		os.Remove(filepath.Join(dir, "91-bad.lesson"))
		AddDir(dir) // removes them again
	})
	if ByID("90-teacher") == nil || len(All()) != before+1 || All()[len(All())-1].ID != "90-teacher" {
		t.Fatal("the teacher's lesson is not on the path")
	}
	if _, err := AddDir(dir); err != nil || len(All()) != before+1 {
		t.Fatalf("loading the directory again: %v, %d lessons", err, len(All()))
	}
	bad := strings.Replace(strings.Replace(minimal, "90-teacher", "91-bad", 1), "do produce t m1", "do produce t", 1)
	if err := os.WriteFile(filepath.Join(dir, "91-bad.lesson"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = AddDir(dir)
	var pe *ParseError
	if !errors.As(err, &pe) || pe.File != filepath.Join(dir, "91-bad.lesson") || pe.Line != 43 {
		t.Fatalf("bad file: %v", err)
	}
	if ByID("91-bad") != nil || len(All()) != before+1 {
		t.Fatal("a refused directory changed the catalog")
	}
	dup := strings.Replace(minimal, "lesson 90-teacher", "lesson 08-hw", 1)
	if err := os.WriteFile(filepath.Join(dir, "91-bad.lesson"), []byte(dup), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := AddDir(dir); err == nil || !strings.Contains(err.Error(), "taken") {
		t.Fatalf("a duplicate id: %v", err)
	}
}

// TestLearningPath: 20 or more lessons, numbered in order through the
// parts, each building on earlier ones only, every question with a why
// for each choice.
func TestLearningPath(t *testing.T) {
	all := All()
	if len(all) < 20 {
		t.Fatalf("%d lessons, want at least 20", len(all))
	}
	part := 0
	for i, l := range all {
		p := indexOf(Parts, l.Part)
		if p < part {
			t.Errorf("%s (%s) comes after a %s lesson", l.ID, l.Part, Parts[part])
		}
		part = max(part, p)
		if i > 0 && l.Number <= all[i-1].Number {
			t.Errorf("%s is not after %s", l.ID, all[i-1].ID)
		}
		if i > 0 && len(l.BuildsOn) == 0 {
			t.Errorf("%s says nothing about what it builds on", l.ID)
		}
	}
}

func indexOf(s []string, x string) int {
	for i, v := range s {
		if v == x {
			return i
		}
	}
	return -1
}

// zhProblems lists what is wrong with x's texts in the Chinese languages
// (i18ntest.ChineseProblems, and a term the glossary keeps another word
// for), each prefixed by its language.
func zhProblems(x Text) []string {
	var out []string
	for _, l := range []i18n.Lang{i18n.SimplifiedChinese, i18n.TraditionalChinese} {
		s := x.In(l)
		for _, p := range i18ntest.ChineseProblems(s) {
			out = append(out, string(l)+": "+p)
		}
		for _, p := range i18n.GlossaryProblems(l, s) {
			out = append(out, string(l)+": "+p)
		}
	}
	return out
}

// TestNoEnglishInChinese: no Chinese text a lesson shows, before or after
// its steps run (Kafka's error descriptions included), holds an English
// sentence or a term the glossary keeps another word for.
func TestNoEnglishInChinese(t *testing.T) {
	if len(zhProblems(T("x", "messages are rejected since", "y"))) == 0 || len(zhProblems(T("x", "记录：a", "HW 为 1，然后:a"))) == 0 {
		t.Fatal("the check finds nothing in English text")
	}
	if len(zhProblems(T("offset 5", "偏移量 5", "offset 5"))) == 0 || len(zhProblems(T("offset 5", "offset 5", "位移 5"))) == 0 {
		t.Fatal("the check finds no term the glossary keeps another word for")
	}
	for _, l := range All() {
		texts := []Text{l.Title, l.Summary}
		for _, st := range l.Steps {
			texts = append(texts, st.Title, st.Explain)
			if p := st.Predict; p != nil {
				texts = append(texts, p.Question)
				for _, c := range p.Choices {
					texts = append(texts, c.Text, c.Why)
				}
			}
		}
		for _, x := range texts {
			for _, p := range zhProblems(x) {
				t.Errorf("%s: %s", l.ID, p)
			}
		}
	}
	for code, d := range kafkaErrors {
		for _, p := range zhProblems(d) {
			t.Errorf("error %s: %s", code, p)
		}
	}
}

// TestInterfaceCatalogsFollowGlossary: the interface's catalogs speak the
// lessons' glossary and, like the lessons, hold no English sentence in
// Chinese. In them a record is 记录/記錄 and 消息/訊息 a message (a link's,
// Raft's): a text saying 消息 where the English says no message mixes the
// two.
func TestInterfaceCatalogsFollowGlossary(t *testing.T) {
	en := i18n.Catalog(i18n.English)
	message := map[i18n.Lang]string{i18n.SimplifiedChinese: "消息", i18n.TraditionalChinese: "訊息"}
	for _, l := range []i18n.Lang{i18n.SimplifiedChinese, i18n.TraditionalChinese} {
		for key, v := range i18n.Catalog(l) {
			if strings.Contains(v, message[l]) && !strings.Contains(strings.ToLower(en[key]), "message") {
				t.Errorf("%s: %s %q says %s where the English %q says no message (a record is 记录/記錄)", key, l, v, message[l], en[key])
			}
			x := T(en[key], v, v)
			if l == i18n.TraditionalChinese {
				x.Hans = i18n.Catalog(i18n.SimplifiedChinese)[key]
			} else {
				x.Hant = i18n.Catalog(i18n.TraditionalChinese)[key]
			}
			for _, p := range zhProblems(x) {
				if strings.HasPrefix(p, string(l)+":") {
					t.Errorf("%s: %s", key, p)
				}
			}
		}
	}
}

// networkMessage matches the English of a text about a message on a link
// (a request, a response, a heartbeat, Raft's, AlterPartition,
// LeaderAndIsr, a replication protocol's), the one thing a lesson may call
// a message (消息/訊息).
var networkMessage = regexp.MustCompile(`(?i)request|response|heartbeat|raft|in flight|alterpartition|leaderandisr|replication messages`)

// englishMessage matches "message" or "messages" as a word, not as a
// part of a config name (replica.lag.max.messages,
// message.timestamp.type); a sentence's full stop after it still counts.
var englishMessage = regexp.MustCompile(`(?i)(?:^|[^.\w])messages?(?:$|[^.\w]|\.(?:$|\W))`)

// recordCalledMessage reports whether text, in language l, calls a record
// a message where en (the English text; text itself for English) speaks
// of no message on a link: the catalogues call a record record, 记录 or
// 記錄 and keep message, 消息 and 訊息 for a link's messages.
func recordCalledMessage(l i18n.Lang, en, text string) bool {
	says := englishMessage.MatchString(text)
	if l != i18n.English {
		word := map[i18n.Lang]string{i18n.SimplifiedChinese: "消息", i18n.TraditionalChinese: "訊息"}[l]
		says = strings.Contains(text, word)
	}
	return says && !networkMessage.MatchString(en)
}

// TestLessonsCallARecordARecord: every line of the built-in lessons
// (titles, explanations, choices, says, checks) and every text the lessons'
// code says (T) calls a record a record, 记录 or 記錄, as the interface's
// catalogues do (they said message, 消息 or 訊息, which the catalogues keep
// for a link's messages, TestInterfaceCatalogsFollowGlossary).
func TestLessonsCallARecordARecord(t *testing.T) {
	if !recordCalledMessage(i18n.SimplifiedChinese, "three messages", "三条消息") || !recordCalledMessage(i18n.TraditionalChinese, "three messages", "三筆訊息") ||
		recordCalledMessage(i18n.SimplifiedChinese, "Raft messages in flight", "传输中的 Raft 消息") ||
		!recordCalledMessage(i18n.English, "More messages", "More messages") || recordCalledMessage(i18n.English, "Messaging", "Messaging") ||
		recordCalledMessage(i18n.English, "the fetch response message", "the fetch response message") ||
		recordCalledMessage(i18n.English, "replica.lag.max.messages", "replica.lag.max.messages") ||
		recordCalledMessage(i18n.English, "message.timestamp.type=CreateTime", "message.timestamp.type=CreateTime") ||
		!recordCalledMessage(i18n.English, "It drops three messages.", "It drops three messages.") {
		t.Fatal("the check tells a record from a link's message wrongly")
	}
	files, err := fs.Glob(builtin, "data/*"+Ext)
	if err != nil || len(files) == 0 {
		t.Fatalf("no lesson files: %v", err)
	}
	langs := map[string]i18n.Lang{"en:": i18n.English, "zh-Hans:": i18n.SimplifiedChinese, "zh-Hant:": i18n.TraditionalChinese}
	for _, f := range files {
		data, err := fs.ReadFile(builtin, f)
		if err != nil {
			t.Fatal(err)
		}
		en := ""
		for i, line := range strings.Split(string(data), "\n") {
			line = strings.TrimSpace(line)
			if rest, ok := strings.CutPrefix(line, "en:"); ok {
				en = rest
			}
			for prefix, l := range langs {
				if text, ok := strings.CutPrefix(line, prefix); ok && recordCalledMessage(l, en, text) {
					t.Errorf("%s:%d: a record is a record (记录, 記錄), as in the catalogues: %s (English: %s)", f, i+1, text, en)
				}
			}
		}
	}
	for pos, x := range codeTexts(t) {
		for _, l := range i18n.Languages() {
			if recordCalledMessage(l, x.En, x.In(l)) {
				t.Errorf("%s: a record is a record (记录, 記錄), as in the catalogues: %s (English: %s)", pos, x.In(l), x.En)
			}
		}
	}
}

// codeTexts returns every text the package's code writes as T with three
// string literals (what the lessons' actions and queries say), by place.
func codeTexts(t *testing.T) map[string]Text {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]Text{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := goparser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) != 3 {
				return true
			}
			if id, ok := call.Fun.(*ast.Ident); !ok || id.Name != "T" {
				return true
			}
			var s [3]string
			for i, a := range call.Args {
				lit, ok := a.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				if s[i], err = strconv.Unquote(lit.Value); err != nil {
					t.Fatal(err)
				}
			}
			out[fset.Position(call.Pos()).String()] = T(s[0], s[1], s[2])
			return true
		})
	}
	if len(out) < 20 { // 25 when written
		t.Fatalf("only %d texts found in the code", len(out))
	}
	return out
}

// TestTitlesWrapOnAPhone: no lesson title, in any language, holds a run of
// more than 24 ASCII characters with nowhere to break it: the lessons page
// lists the titles, and lesson 13's "unclean 选举（unclean.leader.election.enable）"
// made it scroll sideways at 360 px.
func TestTitlesWrapOnAPhone(t *testing.T) {
	unbroken := regexp.MustCompile(`[!-~]{25,}`)
	for _, l := range All() {
		for _, lang := range i18n.Languages() {
			if run := unbroken.FindString(l.Title.In(lang)); run != "" {
				t.Errorf("%s (%s): title %q has %q, %d characters with no break", l.ID, lang, l.Title.In(lang), run, len(run))
			}
		}
	}
}

// TestLessonsFollowGlossary: no line of any lesson file, in any of the three
// languages, and no text the lessons' code writes holds a rendering
// i18n/glossary.tsv deprecates (unclean shutdown is 非正常关闭, zh-Hant runs
// are 執行, …).
func TestLessonsFollowGlossary(t *testing.T) {
	if len(i18n.GlossaryProblems(i18n.TraditionalChinese, "broker 1 重新運行")) == 0 ||
		len(i18n.GlossaryProblems(i18n.SimplifiedChinese, "非正常停止后")) == 0 ||
		len(i18n.GlossaryProblems(i18n.English, "After an Unclean stop")) == 0 ||
		len(i18n.GlossaryProblems(i18n.English, "an unclean stopwatch")) != 0 {
		t.Fatal("the glossary check finds wrong renderings wrongly")
	}
	files, err := fs.Glob(builtin, "data/*"+Ext)
	if err != nil || len(files) == 0 {
		t.Fatalf("no lesson files: %v", err)
	}
	langs := map[string]i18n.Lang{"en:": i18n.English, "zh-Hans:": i18n.SimplifiedChinese, "zh-Hant:": i18n.TraditionalChinese}
	for _, f := range files {
		data, err := fs.ReadFile(builtin, f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			line = strings.TrimSpace(line)
			for prefix, l := range langs {
				if text, ok := strings.CutPrefix(line, prefix); ok {
					for _, p := range i18n.GlossaryProblems(l, text) {
						t.Errorf("%s:%d: %s: %s", f, i+1, l, p)
					}
				}
			}
		}
	}
	for pos, x := range codeTexts(t) {
		for _, l := range i18n.Languages() {
			for _, p := range i18n.GlossaryProblems(l, x.In(l)) {
				t.Errorf("%s: %s: %s", pos, l, p)
			}
		}
	}
}

// TestValidate: a lesson file is checked as AddDir(dir) would add it,
// changing nothing: a good one passes, one of dir with the same id would be
// replaced (not refused), a built-in id or a bad line is refused with its
// line; RemoveDir takes dir's lessons off the path.
func TestValidate(t *testing.T) {
	before := len(All())
	dir := t.TempDir()
	l, err := Validate(dir, "mine.lesson", []byte(minimal))
	if err != nil || l.ID != "90-teacher" || len(All()) != before {
		t.Fatalf("Validate: %v, %d lessons (%d before)", err, len(All()), before)
	}
	if err := os.WriteFile(filepath.Join(dir, "90-teacher.lesson"), []byte(minimal), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := AddDir(dir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { RemoveDir(dir) })
	if _, err := Validate(dir, "again.lesson", []byte(minimal)); err != nil {
		t.Fatalf("replacing dir's own lesson: %v", err)
	}
	if _, err := Validate(t.TempDir(), "other.lesson", []byte(minimal)); err == nil || !strings.Contains(err.Error(), "taken") {
		t.Fatalf("the same id from another directory: %v", err)
	}
	var pe *ParseError
	bad := strings.Replace(minimal, "do produce t m1", "do produce t", 1)
	if _, err := Validate(dir, "bad.lesson", []byte(bad)); !errors.As(err, &pe) || pe.File != "bad.lesson" || pe.Line != 43 {
		t.Fatalf("a bad line: %v", err)
	}
	RemoveDir(dir)
	if ByID("90-teacher") != nil || len(All()) != before {
		t.Fatal("RemoveDir left the lesson on the path")
	}
}
