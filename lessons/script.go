package lessons

import (
	"bufio"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"tidemark/i18n"
)

// The scenario language. A lesson is a plain-text file read line by line;
// indentation is free, blank lines and lines starting with # are skipped.
// A line starts with a keyword:
//
//	lesson 08-hw              the id: "NN-name", NN its place on the path
//	part replication          storage, replication, failures, delivery, comparisons or features
//	builds-on 02-segments     lessons this one needs (earlier on the path)
//	brokers 3                 the size of the lesson's fresh cluster
//	fencing zookeeper         the controller's fencing rule (default kraft-elr,
//	                          Kafka 4.1); a lesson that pins another says why
//	concepts LEO, HW          what it teaches, comma-separated
//	backends cluster rules    where the file runs: the lab cluster (default)
//	                          and/or the pure rules (replication/rulestest)
//	title / summary           texts of the lesson
//	setup                     actions before the first step (do lines)
//	step                      a new step; then title, explain, question,
//	                          choice, why, do, say and check lines
//	choice ID when COND       an answer to the step's question, right when
//	                          COND holds after the step ran
//	why                       why that choice is right or wrong
//	do ACTION ARGS            one operation on the cluster (see actions)
//	say                       a sentence of the outcome
//	check COND                an assertion about the real outcome
//	show TOPIC                (scenarios) the topic as it is now, kept in
//	                          a ---- block after the line (transcript.go)
//
// A text (title, summary, explain, question, choice, why, say, check) is
// followed by its three languages, one line each:
//
//	en: The leader's HW is {hw 1 lab}.
//	zh-Hans: leader 的 HW 是 {hw 1 lab}。
//	zh-Hant: leader 的 HW 是 {hw 1 lab}。
//
// {QUERY} in a text is replaced by the query's value, written for people
// in the text's language. A COND is TERM [and TERM]…; a TERM is
// QUERY OP VALUE with OP one of == != < <= > >= has lacks, VALUE a literal
// (a list is written [m1 m2], an error by its Kafka name, none for no
// error, yes/no for a truth, a text holding "and" in double quotes) or
// {QUERY}; has and lacks ask whether a list holds an item or a text holds
// some words.
//
// A scenario is a file of the same language that tests rather than
// teaches: it starts with "scenario NAME" instead of "lesson ID", needs no
// part, titles, summary or explanations, a check may go without texts (its
// condition names it), "hw-checkpoint-interval 5s" sets the lab brokers'
// replica.high.watermark.checkpoint.interval.ms (by default an hour: only
// do checkpoint writes it), and "fencing" may list several rules: RunScenario
// plays it once per rule and per back-end. A scenario names the
// invariants its settings break, each where it first breaks:
//
//	expect lost TOPIC VALUE        an acknowledged VALUE is not in the leader's log
//	expect seen-gone TOPIC OFFSET  a record a consumer could read at OFFSET is gone or changed
//	expect hw-back TOPIC           the consumer-visible HW went backwards
//	expect diverged TOPIC OFFSET   replicas done truncating differ at OFFSET below both HWs
//	expect duplicated TOPIC VALUE  a consumer reads VALUE more than once
//	expect wrong-offset TOPIC VALUE  an acknowledged VALUE is read at another offset
//	expect unreadable TOPIC VALUE  an acknowledged VALUE is not lost but cannot be
//	                               read (the partition offline, the HW below it)
//
// The runner watches the first four after every action; the chaos
// durability checker (server/chaos) judges all of them, except seen-gone
// and hw-back, at each expect line and at the end of the run. An expect
// line fails when its violation has not happened by then, and the run
// fails when one happened that no expect line names.

// Parts are the sections of the learning path, in order.
var Parts = []string{"storage", "replication", "failures", "delivery", "comparisons", "features"}

// Script is a parsed lesson file.
type Script struct {
	File     string
	ID       string
	Number   int
	Part     string
	BuildsOn []string
	Brokers  int
	Fencing  string
	Concepts []string
	Title    Text
	Summary  Text
	Setup    []Action
	Steps    []ScriptStep
	// Scenario: a test, not a lesson (see above).
	Scenario bool
	// Backends are where the file runs (BackendCluster, BackendRules).
	Backends []string
	// Fencings are a scenario's fencing rules, each run in turn.
	Fencings []string
	// CheckpointInterval is a scenario's HW checkpoint interval on the lab
	// (0: an hour).
	CheckpointInterval time.Duration
}

// RunsOn reports whether the file runs on back-end b.
func (s *Script) RunsOn(b string) bool {
	if len(s.Backends) == 0 {
		return b == BackendCluster
	}
	return slices.Contains(s.Backends, b)
}

// ScriptStep is one step of a Script.
type ScriptStep struct {
	Line     int
	Title    Text
	Explain  Text
	Question Text
	Choices  []ScriptChoice
	Items    []Item
}

// ScriptChoice is one answer with the condition that makes it right.
type ScriptChoice struct {
	Line int
	ID   string
	Text Text
	Why  Text
	When Cond
}

// Item is one thing a step does, in order: an action, a sentence, a check
// or (in a scenario) an expected violation.
type Item struct {
	Line   int
	Action *Action // do
	Say    *Text   // say
	Check  *Cond   // check, named by Name
	Name   Text
	Expect *Expect // expect
	Show   *Show   // show, with the block it keeps (transcript.go)
}

// Expect is a named violation a scenario expects: Kind (see violations),
// the topic, and the value or offset it concerns ("" for hw-back).
type Expect struct {
	Kind, Topic, Arg string
}

// Key is the violation as the runners name it: "lost m2", "hw-back".
func (x Expect) Key() string { return strings.TrimSpace(x.Kind + " " + x.Arg) }

// violations are the expect kinds and what each needs after the topic.
var violations = map[string]string{"lost": "word", "seen-gone": "int", "hw-back": "", "diverged": "int",
	"duplicated": "word", "wrong-offset": "word", "unreadable": "word"}

// Action is one operation with its arguments.
type Action struct {
	Line int
	Name string
	Args []string
}

// Cond is a conjunction of terms.
type Cond struct {
	Line  int
	Terms []Term
}

// Term compares a query's value with a literal or another query.
type Term struct {
	Q    Query
	Op   string
	Want string // the literal, when WantQ is nil
	// WantQ is the query on the right, written {QUERY}.
	WantQ *Query
}

// Query names a value of the real state.
type Query struct {
	Name string
	Args []string
}

func (q Query) String() string { return strings.TrimSpace(q.Name + " " + strings.Join(q.Args, " ")) }

var (
	idPattern     = regexp.MustCompile(`^(\d{2})-[a-z0-9][a-z0-9-]*$`)
	namePattern   = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)
	placeholderRe = regexp.MustCompile(`\{[^{}]*\}`)
	ops           = []string{"==", "!=", "<=", ">=", "<", ">", "has", "lacks"}
)

// MaxScriptBytes bounds a lesson file.
const MaxScriptBytes = 256 << 10

// textSlot is the text the next language lines fill.
type textSlot struct {
	line int
	what *Err // the text named in refusals (lesson.error.what-*)
	t    *Text
	seen map[i18n.Lang]bool
}

type parser struct {
	file  string
	s     *Script
	step  *ScriptStep
	inSet bool
	slot  *textSlot
	// topics created anywhere in the file, and where each topic is named:
	// a name no create-topic makes is refused at the end.
	topics    map[string]bool
	topicRefs []topicRef
	lineNo    int
	// A show line's block: after may open one on the next line; block is
	// being read until its closing "----".
	after, block *Show
	blockLines   []string
}

type topicRef struct {
	line int
	name string
}

// ParseScript reads one lesson file. A bad file gives a *ParseError with
// its line number and what is wrong.
func ParseScript(file string, src []byte) (*Script, error) {
	if len(src) > MaxScriptBytes {
		return nil, parseErr(file, 0, "lesson.error.too-big", len(src), MaxScriptBytes)
	}
	p := &parser{file: file, s: &Script{File: file}, topics: map[string]bool{}}
	sc := bufio.NewScanner(strings.NewReader(string(src)))
	sc.Buffer(make([]byte, 0, 4096), MaxScriptBytes+1)
	n := 0
	for sc.Scan() {
		n++
		if err := p.line(n, sc.Text()); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, parseErr(file, n, "lesson.error.wrapped", err)
	}
	if err := p.finish(n); err != nil {
		return nil, err
	}
	return p.s, nil
}

// errf is the refusal at line: a catalog key (lesson.error.*) and its
// arguments, *Err ones rendered in the reader's language too.
func (p *parser) errf(line int, key string, args ...any) error {
	return parseErr(p.file, line, key, args...)
}

// open starts a text; the previous one must be complete.
func (p *parser) open(line int, what *Err, t *Text) error {
	if err := p.closeSlot(); err != nil {
		return err
	}
	p.slot = &textSlot{line: line, what: what, t: t, seen: map[i18n.Lang]bool{}}
	return nil
}

func (p *parser) closeSlot() error {
	s := p.slot
	if s == nil {
		return nil
	}
	p.slot = nil
	if p.s.Scenario && len(s.seen) == 0 && s.t.En != "" {
		return nil // a scenario's check named by its condition
	}
	for _, l := range i18n.Languages() {
		if !s.seen[l] {
			return p.errf(s.line, "lesson.error.no-text", s.what, l, l)
		}
	}
	// Every language must use the same placeholders.
	want := placeholders(s.t.En)
	for _, l := range i18n.Languages()[1:] {
		if got := placeholders(s.t.In(l)); !slices.Equal(got, want) {
			return p.errf(s.line, "lesson.error.text-has-placeholders-english", s.what, l, got, want)
		}
	}
	for _, ph := range want {
		q, err := parseQuery(strings.Fields(ph[1 : len(ph)-1]))
		if err != nil {
			return p.errf(s.line, "lesson.error.placeholder", s.what, ph, err)
		}
		if err := p.checkQuery(q); err != nil {
			return p.errf(s.line, "lesson.error.placeholder", s.what, ph, err)
		}
	}
	return nil
}

func placeholders(s string) []string {
	out := placeholderRe.FindAllString(s, -1)
	slices.Sort(out)
	return slices.Compact(out)
}

func (p *parser) line(n int, raw string) error {
	p.lineNo = n
	if !strings.ContainsRune(raw, '\t') && strings.ContainsFunc(raw, func(r rune) bool { return r < ' ' }) {
		return p.errf(n, "lesson.error.control-character")
	}
	line := strings.TrimSpace(raw)
	if sh := p.block; sh != nil {
		if line != "----" {
			p.blockLines = append(p.blockLines, line)
			return nil
		}
		p.block, sh.End = nil, n
		want, err := parseShowBlock(p.blockLines)
		if err != nil {
			return p.errf(n, "lesson.error.show-block", err)
		}
		sh.Want = want
		return nil
	}
	if sh := p.after; sh != nil {
		p.after = nil
		if line == "----" {
			p.block, sh.Start, p.blockLines = sh, n, nil
			return nil
		}
	}
	if line == "" || strings.HasPrefix(line, "#") {
		return nil
	}
	kw, rest, _ := strings.Cut(line, " ")
	rest = strings.TrimSpace(rest)
	if lang, ok := strings.CutSuffix(kw, ":"); ok {
		l := i18n.Lang(lang)
		if !l.Valid() {
			return p.errf(n, "lesson.error.unknown-language", lang)
		}
		if p.slot == nil {
			return p.errf(n, "lesson.error.text-nothing-belong-put", lang)
		}
		if p.slot.seen[l] {
			return p.errf(n, "lesson.error.has-second-text", p.slot.what, lang)
		}
		if rest == "" {
			return p.errf(n, "lesson.error.empty-text", p.slot.what, lang)
		}
		if strings.Count(rest, "{") != strings.Count(rest, "}") {
			return p.errf(n, "lesson.error.unbalanced-text")
		}
		p.slot.seen[l] = true
		switch l {
		case i18n.SimplifiedChinese:
			p.slot.t.Hans = rest
		case i18n.TraditionalChinese:
			p.slot.t.Hant = rest
		default:
			p.slot.t.En = rest
		}
		return nil
	}
	if err := p.closeSlot(); err != nil {
		return err
	}
	header := p.step == nil && !p.inSet
	switch kw {
	case "lesson", "scenario", "part", "builds-on", "brokers", "fencing", "concepts", "summary", "backends", "hw-checkpoint-interval":
		if !header {
			return p.errf(n, "lesson.error.belongs-lesson-header-before", kw)
		}
		return p.header(n, kw, rest)
	case "title":
		if p.step != nil {
			return p.open(n, errk("lesson.error.what-step-title"), &p.step.Title)
		}
		if !header {
			return p.errf(n, "lesson.error.title-inside-setup-put")
		}
		return p.open(n, errk("lesson.error.what-lesson-title"), &p.s.Title)
	case "setup":
		if !header || p.inSet {
			return p.errf(n, "lesson.error.setup-must-come-once")
		}
		if p.s.ID == "" || p.s.Brokers == 0 {
			return p.errf(n, "lesson.error.setup-early")
		}
		p.inSet = true
		return nil
	case "step":
		if p.s.ID == "" || p.s.Brokers == 0 {
			return p.errf(n, "lesson.error.step-early")
		}
		if err := p.endStep(); err != nil {
			return err
		}
		p.inSet = false
		p.s.Steps = append(p.s.Steps, ScriptStep{Line: n})
		p.step = &p.s.Steps[len(p.s.Steps)-1]
		return nil
	case "do":
		a, err := p.action(n, rest)
		if err != nil {
			return err
		}
		if p.inSet {
			p.s.Setup = append(p.s.Setup, a)
			return nil
		}
		if p.step == nil {
			return p.errf(n, "lesson.error.do-outside")
		}
		p.step.Items = append(p.step.Items, Item{Line: n, Action: &a})
		return nil
	}
	if p.step == nil {
		return p.errf(n, "lesson.error.unknown-keyword-here", kw)
	}
	st := p.step
	switch kw {
	case "explain":
		return p.open(n, errk("lesson.error.what-explain"), &st.Explain)
	case "question":
		return p.open(n, errk("lesson.error.what-question"), &st.Question)
	case "choice":
		id, cond, ok := strings.Cut(rest, " when ")
		id = strings.TrimSpace(id)
		if !ok || id == "" || strings.ContainsAny(id, " \t") {
			return p.errf(n, "lesson.error.choice-syntax", "choice ID when CONDITION")
		}
		if slices.ContainsFunc(st.Choices, func(c ScriptChoice) bool { return c.ID == id }) {
			return p.errf(n, "lesson.error.choice-twice-step", id)
		}
		c, err := p.cond(n, cond)
		if err != nil {
			return err
		}
		st.Choices = append(st.Choices, ScriptChoice{Line: n, ID: id, When: c})
		ch := &st.Choices[len(st.Choices)-1]
		return p.open(n, errk("lesson.error.what-choice", id), &ch.Text)
	case "why":
		if len(st.Choices) == 0 {
			return p.errf(n, "lesson.error.why-before-any-choice")
		}
		ch := &st.Choices[len(st.Choices)-1]
		if ch.Why.En != "" {
			return p.errf(n, "lesson.error.choice-has-second-why", ch.ID)
		}
		return p.open(n, errk("lesson.error.what-why", ch.ID), &ch.Why)
	case "expect":
		f := strings.Fields(rest)
		if !p.s.Scenario {
			return p.errf(n, "lesson.error.expect-belongs-scenarios-lesson")
		}
		kind, ok := "", false
		if len(f) > 0 {
			kind = f[0]
			_, ok = violations[kind]
		}
		if !ok {
			return p.errf(n, "lesson.error.expect-want-one", kind, strings.Join(sortedKeys(violations), ", "))
		}
		if err := p.checkArgs(strings.TrimSpace("topic "+violations[kind]), nil, f[1:]); err != nil {
			return p.errf(n, "lesson.error.expect", kind, err)
		}
		x := &Expect{Kind: kind, Topic: f[1]}
		if len(f) > 2 {
			x.Arg = f[2]
		}
		st.Items = append(st.Items, Item{Line: n, Expect: x})
		return nil
	case "show":
		if !p.s.Scenario {
			return p.errf(n, "lesson.error.show-belongs-scenarios-lesson")
		}
		f := strings.Fields(rest)
		if err := p.checkArgs("topic", nil, f); err != nil {
			return p.errf(n, "lesson.error.show", err)
		}
		sh := &Show{Topic: f[0]}
		st.Items = append(st.Items, Item{Line: n, Show: sh})
		p.after = sh
		return nil
	case "say":
		st.Items = append(st.Items, Item{Line: n, Say: &Text{}})
		return p.open(n, errk("lesson.error.what-say"), st.Items[len(st.Items)-1].Say)
	case "check":
		c, err := p.cond(n, rest)
		if err != nil {
			return err
		}
		st.Items = append(st.Items, Item{Line: n, Check: &c})
		it := &st.Items[len(st.Items)-1]
		if err := p.open(n, errk("lesson.error.what-check"), &it.Name); err != nil {
			return err
		}
		if p.s.Scenario {
			it.Name = T(rest, rest, rest)
		}
		return nil
	}
	return p.errf(n, "lesson.error.unknown-keyword", kw)
}

func (p *parser) header(n int, kw, rest string) error {
	if rest == "" && kw != "summary" {
		return p.errf(n, "lesson.error.needs-value", kw)
	}
	switch kw {
	case "lesson":
		m := idPattern.FindStringSubmatch(rest)
		if m == nil {
			return p.errf(n, "lesson.error.bad-id", rest)
		}
		if p.s.ID != "" {
			return p.errf(n, "lesson.error.second-lesson-id")
		}
		p.s.ID = rest
		p.s.Number, _ = strconv.Atoi(m[1])
	case "scenario":
		if !namePattern.MatchString(rest) {
			return p.errf(n, "lesson.error.scenario-name-want-lowercase", rest)
		}
		if p.s.ID != "" {
			return p.errf(n, "lesson.error.second-id")
		}
		p.s.ID, p.s.Scenario = rest, true
	case "backends":
		for _, b := range strings.Fields(rest) {
			if b != BackendCluster && b != BackendRules {
				return p.errf(n, "lesson.error.backend-want", b, BackendCluster, BackendRules)
			}
			p.s.Backends = append(p.s.Backends, b)
		}
		if p.s.RunsOn(BackendRules) && (len(p.s.Setup) > 0 || len(p.s.Steps) > 0) {
			return p.errf(n, "lesson.error.backends-belongs-before-setup")
		}
	case "hw-checkpoint-interval":
		if !p.s.Scenario || p.s.RunsOn(BackendRules) {
			return p.errf(n, "lesson.error.hw-checkpoint-interval-belongs")
		}
		if err := p.checkArg("duration", rest); err != nil {
			return p.errf(n, "lesson.error.hw-checkpoint-interval", err)
		}
		p.s.CheckpointInterval, _ = time.ParseDuration(rest)
	case "part":
		if !slices.Contains(Parts, rest) {
			return p.errf(n, "lesson.error.bad-part", rest, strings.Join(Parts, ", "))
		}
		p.s.Part = rest
	case "builds-on":
		for _, id := range strings.Fields(rest) {
			if !idPattern.MatchString(id) {
				return p.errf(n, "lesson.error.builds-on-not-lesson", id)
			}
			p.s.BuildsOn = append(p.s.BuildsOn, id)
		}
	case "brokers":
		b, err := strconv.Atoi(rest)
		if err != nil || b < 1 || b > 7 {
			return p.errf(n, "lesson.error.bad-brokers", rest)
		}
		p.s.Brokers = b
	case "fencing":
		rules := strings.Fields(rest)
		if len(rules) > 1 && !p.s.Scenario {
			return p.errf(n, "lesson.error.lesson-has-one-fencing")
		}
		for _, r := range rules {
			if !slices.Contains(fencingRules, r) {
				return p.errf(n, "lesson.error.fencing-want-one", r, strings.Join(fencingRules, ", "))
			}
		}
		p.s.Fencing, p.s.Fencings = rules[0], rules
	case "concepts":
		for c := range strings.SplitSeq(rest, ",") {
			if c = strings.TrimSpace(c); c != "" {
				p.s.Concepts = append(p.s.Concepts, c)
			}
		}
	case "summary":
		return p.open(n, errk("lesson.error.what-summary"), &p.s.Summary)
	}
	return nil
}

var fencingRules = []string{"kraft-elr", "kraft", "zookeeper", "zookeeper-pre-2.2", "kraft-elr-recovery"}

// endStep checks the step just read is complete.
func (p *parser) endStep() error {
	st := p.step
	if st == nil {
		return nil
	}
	if p.s.Scenario {
		if len(st.Items) == 0 {
			return p.errf(st.Line, "lesson.error.step-does-nothing-add")
		}
		return nil
	}
	switch {
	case st.Title.En == "":
		return p.errf(st.Line, "lesson.error.step-has-no-title")
	case st.Explain.En == "":
		return p.errf(st.Line, "lesson.error.step-has-no-explain")
	case st.Question.En == "" && len(st.Choices) > 0:
		return p.errf(st.Choices[0].Line, "lesson.error.choices-without-question")
	case st.Question.En != "" && len(st.Choices) < 2:
		return p.errf(st.Line, "lesson.error.question-needs-at-least")
	case len(st.Items) == 0:
		return p.errf(st.Line, "lesson.error.step-does-nothing-add")
	}
	for _, c := range st.Choices {
		if c.Why.En == "" {
			return p.errf(c.Line, "lesson.error.choice-has-no-why", c.ID)
		}
	}
	return nil
}

func (p *parser) finish(n int) error {
	if p.block != nil {
		return p.errf(p.block.Start, "lesson.error.show-block-never-closed")
	}
	if err := p.closeSlot(); err != nil {
		return err
	}
	if err := p.endStep(); err != nil {
		return err
	}
	for _, r := range p.topicRefs {
		if !p.topics[r.name] {
			return p.errf(r.line, "lesson.error.topic-never-created-do", r.name, r.name)
		}
	}
	s := p.s
	switch {
	case s.ID == "":
		return p.errf(n, "lesson.error.no-lesson-line")
	case s.Brokers == 0:
		return p.errf(n, "lesson.error.no-brokers")
	case s.Scenario && len(s.Steps) == 0:
		return p.errf(n, "lesson.error.no-steps")
	case s.CheckpointInterval > 0 && s.RunsOn(BackendRules):
		return p.errf(n, "lesson.error.hw-checkpoint-interval-rules", BackendRules)
	case s.Scenario:
		return nil
	case s.Part == "":
		return p.errf(n, "lesson.error.no-part")
	case s.Title.En == "":
		return p.errf(n, "lesson.error.no-title")
	case s.Summary.En == "":
		return p.errf(n, "lesson.error.no-summary")
	case len(s.Steps) == 0:
		return p.errf(n, "lesson.error.no-steps")
	}
	return nil
}

func (p *parser) action(n int, rest string) (Action, error) {
	f := strings.Fields(rest)
	if len(f) == 0 {
		return Action{}, p.errf(n, "lesson.error.do-needs-action")
	}
	a := Action{Line: n, Name: f[0], Args: f[1:]}
	spec, ok := actions[a.Name]
	if !ok {
		return a, p.errf(n, "lesson.error.unknown-action", a.Name, strings.Join(actionNames(), ", "))
	}
	if p.s.RunsOn(BackendCluster) && rulesOnlyActions[a.Name] {
		return a, p.errf(n, "lesson.error.action-runs-only-on", a.Name)
	}
	if p.s.RunsOn(BackendRules) {
		be, err := backend(BackendRules)
		if err != nil {
			return a, p.errf(n, "lesson.error.wrapped", err)
		}
		if !be.Actions[a.Name] {
			return a, p.errf(n, "lesson.error.action-does-not-run", a.Name, strings.Join(sortedKeys(be.Actions), ", "), BackendRules)
		}
	}
	if err := p.checkArgs(spec.args, spec.keys, a.Args); err != nil {
		return a, p.errf(n, "lesson.error.usage-do", a.Name, err, a.Name, spec.args)
	}
	if a.Name == "create-topic" {
		p.topics[a.Args[0]] = true
	}
	return a, nil
}

func (p *parser) cond(n int, s string) (Cond, error) {
	c := Cond{Line: n}
	for _, part := range splitAnd(s) {
		f := strings.Fields(part)
		i := slices.IndexFunc(f, func(w string) bool { return slices.Contains(ops, w) })
		if i < 1 {
			return c, p.errf(n, "lesson.error.condition-syntax", strings.TrimSpace(part), "QUERY OP VALUE", strings.Join(ops, " "))
		}
		q, err := parseQuery(f[:i])
		if err == nil {
			err = p.checkQuery(q)
		}
		if err != nil {
			return c, p.errf(n, "lesson.error.condition", strings.TrimSpace(part), err)
		}
		t := Term{Q: q, Op: f[i], Want: strings.Join(f[i+1:], " ")}
		if t.Want == "" {
			return c, p.errf(n, "lesson.error.condition-nothing-compare", strings.TrimSpace(part))
		}
		if q, ok := strings.CutPrefix(t.Want, `"`); ok {
			if t.Want, ok = strings.CutSuffix(q, `"`); !ok || strings.Contains(t.Want, `"`) {
				return c, p.errf(n, "lesson.error.condition-unbalanced-quotes", strings.TrimSpace(part))
			}
		}
		if strings.HasPrefix(t.Want, "{") && strings.HasSuffix(t.Want, "}") {
			wq, err := parseQuery(strings.Fields(t.Want[1 : len(t.Want)-1]))
			if err == nil {
				err = p.checkQuery(wq)
			}
			if err != nil {
				return c, p.errf(n, "lesson.error.condition", strings.TrimSpace(part), err)
			}
			t.WantQ = &wq
		}
		c.Terms = append(c.Terms, t)
	}
	return c, nil
}

// splitAnd splits a condition at " and " outside double quotes: a quoted
// value ("truncate there and ask again") may hold the word.
func splitAnd(s string) []string {
	var out []string
	quoted, start := false, 0
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '"':
			quoted = !quoted
		case !quoted && strings.HasPrefix(s[i:], " and "):
			out = append(out, s[start:i])
			start = i + len(" and ")
			i += len(" and ") - 1
		}
	}
	return append(out, s[start:])
}

func parseQuery(f []string) (Query, error) {
	if len(f) == 0 {
		return Query{}, errk("lesson.error.empty-query")
	}
	return Query{Name: f[0], Args: f[1:]}, nil
}

func (p *parser) checkQuery(q Query) error {
	spec, ok := queries[q.Name]
	if !ok {
		return errk("lesson.error.unknown-query-known", q.Name, strings.Join(queryNames(), ", "))
	}
	if p.s.RunsOn(BackendCluster) && rulesOnlyQueries[q.Name] {
		return errk("lesson.error.query-runs-only-on", q.Name)
	}
	if p.s.RunsOn(BackendRules) {
		be, err := backend(BackendRules)
		if err != nil {
			return err
		}
		if !be.Queries[q.Name] {
			return errk("lesson.error.query-does-not-run", q.Name, strings.Join(sortedKeys(be.Queries), ", "), BackendRules)
		}
	}
	if err := p.checkArgs(spec.args, nil, q.Args); err != nil {
		return errk("lesson.error.usage", q.Name, err, q.Name, spec.args)
	}
	return nil
}

// checkArgs checks args against a spec: space-separated kinds, the last
// one may end in + (one or more) or * (zero or more), any may end in ?
// (optional, at the end). Kinds: broker (1..brokers), node (0..brokers),
// topic (created by an earlier create-topic), int, duration, word, and
// key=value options with a key from keys.
func (p *parser) checkArgs(spec string, keys []string, args []string) error {
	kinds := strings.Fields(spec)
	var opts []string
	for len(args) > 0 && strings.Contains(args[len(args)-1], "=") && len(keys) > 0 {
		opts = append([]string{args[len(args)-1]}, opts...)
		args = args[:len(args)-1]
	}
	i := 0
	for k, kind := range kinds {
		if kind == "key=value*" {
			continue
		}
		rep := strings.HasSuffix(kind, "+") || strings.HasSuffix(kind, "*")
		opt := strings.HasSuffix(kind, "?") || strings.HasSuffix(kind, "*")
		base := strings.TrimRight(kind, "+*?")
		if i >= len(args) {
			if opt {
				continue
			}
			return errk("lesson.error.missing-argument", base, k+1)
		}
		for first := true; i < len(args) && (first || rep); first = false {
			if err := p.checkArg(base, args[i]); err != nil {
				return err
			}
			i++
		}
	}
	if i < len(args) {
		return errk("lesson.error.too-many-arguments", strings.Join(args[i:], " "))
	}
	for _, o := range opts {
		k, v, _ := strings.Cut(o, "=")
		if !slices.Contains(keys, k) {
			return errk("lesson.error.unknown-option-known", k, strings.Join(keys, ", "))
		}
		if v == "" {
			return errk("lesson.error.option-has-no-value", k)
		}
		if k == "acks" && !slices.Contains([]string{"0", "1", "all", "-1"}, v) {
			return errk("lesson.error.acks-want-0-1", v)
		}
		if k == "isolation" && v != "read_committed" && v != "read_uncommitted" {
			return errk("lesson.error.isolation-want", v)
		}
		if d, err := time.ParseDuration(v); k == "timestamp" && (err != nil || d < -24*365*time.Hour || d > 24*365*time.Hour) {
			return errk("lesson.error.timestamp-want", v)
		}
	}
	return nil
}

func (p *parser) checkArg(kind, a string) error {
	switch kind {
	case "broker", "node":
		id, err := strconv.Atoi(a)
		lo := 1
		if kind == "node" {
			lo = 0
		}
		if err != nil || id < lo || id > p.s.Brokers {
			return errk("lesson.error.arg-range", kind, a, lo, p.s.Brokers)
		}
	case "topic":
		p.topicRefs = append(p.topicRefs, topicRef{p.lineNo, a})
	case "int":
		if _, err := strconv.ParseInt(a, 10, 64); err != nil {
			return errk("lesson.error.not-whole-number", a)
		}
	case "duration":
		d, err := time.ParseDuration(a)
		if err != nil || d <= 0 || d > 24*time.Hour {
			return errk("lesson.error.duration-want-e-g", a)
		}
	case "rule":
		if !slices.Contains(fencingRules, a) {
			return errk("lesson.error.fencing-rule-want-one", a, strings.Join(fencingRules, ", "))
		}
	case "word":
		if strings.ContainsAny(a, "{}") {
			return errk("lesson.error.braces-are-for-texts", a)
		}
	default:
		return errk("lesson.error.internal-unknown-argument-kind", kind)
	}
	return nil
}
