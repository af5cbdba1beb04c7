// Package i18n holds every user-visible string of Tidemark's UI in English,
// Simplified Chinese and Traditional Chinese, and picks a learner's
// language. Kafka's own terms (ISR, HW, LEO, acks, leader epoch,
// min.insync.replicas) stay as they are in every language: they are what a
// learner will meet in Kafka's documentation and logs.
//
// Strings live in catalogs/<lang>.json as flat key → text maps; texts may
// hold fmt verbs. A test checks that every catalog has exactly the same keys
// and the same verbs, so no language can miss a string.
package i18n

import (
	"embed"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"tidemark/events"
	"tidemark/internal/fact"
)

// Lang is a language tag as used in HTML lang attributes.
type Lang string

// The languages Tidemark speaks.
const (
	English            Lang = "en"
	SimplifiedChinese  Lang = "zh-Hans"
	TraditionalChinese Lang = "zh-Hant"
)

// Default is the language used when nothing else matches.
const Default = English

// CookieName is the cookie that remembers a learner's choice.
const CookieName = "tidemark_lang"

// Languages returns every supported language, English first.
func Languages() []Lang { return []Lang{English, SimplifiedChinese, TraditionalChinese} }

// Name returns a language's own name for itself (for the language switch).
func (l Lang) Name() string {
	switch l {
	case SimplifiedChinese:
		return "简体中文"
	case TraditionalChinese:
		return "繁體中文"
	}
	return "English"
}

// Valid reports whether l is a supported language.
func (l Lang) Valid() bool {
	for _, x := range Languages() {
		if l == x {
			return true
		}
	}
	return false
}

//go:embed catalogs/*.json
var files embed.FS

var catalogs = mustLoad()

func mustLoad() map[Lang]map[string]string {
	out := map[Lang]map[string]string{}
	for _, l := range Languages() {
		b, err := files.ReadFile("catalogs/" + string(l) + ".json")
		if err != nil {
			panic(fmt.Sprintf("i18n: catalog %s missing: %v", l, err))
		}
		m := map[string]string{}
		if err := json.Unmarshal(b, &m); err != nil {
			panic(fmt.Sprintf("i18n: catalog %s: %v", l, err))
		}
		out[l] = m
	}
	return out
}

// T returns the text for key in lang, formatted with args when given. A key
// missing from lang falls back to English, and a key missing everywhere is
// returned as is (the catalog test makes both impossible in a build).
func T(lang Lang, key string, args ...any) string {
	s, ok := catalogs[lang][key]
	if !ok {
		if s, ok = catalogs[Default][key]; !ok {
			s = key
		}
	}
	if len(args) > 0 {
		return fmt.Sprintf(s, args...)
	}
	return s
}

// Keys returns every key of lang's catalog, sorted.
func Keys(lang Lang) []string {
	keys := make([]string, 0, len(catalogs[lang]))
	for k := range catalogs[lang] {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Catalog returns a copy of lang's catalog (the WASM panel gets it as JSON).
func Catalog(lang Lang) map[string]string {
	out := make(map[string]string, len(catalogs[lang]))
	for k, v := range catalogs[lang] {
		out[k] = v
	}
	return out
}

// Pick chooses the language: a valid cookie value first, then the first
// Accept-Language entry (by q-value) Tidemark speaks, else Default. Chinese
// tags map by script or region: zh-Hant, zh-TW, zh-HK and zh-MO are
// Traditional; other zh tags are Simplified.
func Pick(cookie, acceptLanguage string) Lang {
	if l := Lang(cookie); l.Valid() {
		return l
	}
	type cand struct {
		tag string
		q   float64
		i   int
	}
	var cs []cand
	for i, part := range strings.Split(acceptLanguage, ",") {
		fields := strings.Split(strings.TrimSpace(part), ";")
		tag := strings.TrimSpace(fields[0])
		if tag == "" {
			continue
		}
		q := 1.0
		for _, f := range fields[1:] {
			f = strings.TrimSpace(f)
			if v, ok := strings.CutPrefix(f, "q="); ok {
				if x, err := strconv.ParseFloat(v, 64); err == nil {
					q = x
				}
			}
		}
		cs = append(cs, cand{tag, q, i})
	}
	sort.SliceStable(cs, func(a, b int) bool { return cs[a].q > cs[b].q })
	for _, c := range cs {
		if l, ok := match(c.tag); ok && c.q > 0 {
			return l
		}
	}
	return Default
}

func match(tag string) (Lang, bool) {
	t := strings.ToLower(tag)
	switch {
	case t == "en" || strings.HasPrefix(t, "en-"):
		return English, true
	case strings.HasPrefix(t, "zh-hant") || t == "zh-tw" || t == "zh-hk" || t == "zh-mo":
		return TraditionalChinese, true
	case t == "zh" || strings.HasPrefix(t, "zh-"):
		return SimplifiedChinese, true
	}
	return "", false
}

// Text returns what an event carries for the message key with args: its
// English text (the catalog's English, never a second copy of the
// sentence) and the arguments as text. Event texts use only %s: the
// arguments travel as strings and are formatted again in the reader's
// language. An argument made by Word or Count is a key, translated too.
func Text(key string, args ...any) (english string, text []string) {
	text = make([]string, len(args))
	for i, a := range args {
		text[i] = fmt.Sprint(a)
	}
	return Message(English, "", key, text), text
}

// Message renders an event message, its key and args, in lang (see
// events.Render); english (the event's Message) when it has no key, as
// events from before keys had none.
func Message(lang Lang, english, key string, args []string) string {
	if key == "" {
		return english
	}
	return events.Render(func(k string, a ...any) string { return T(lang, k, a...) }, key, args)
}

// EventMessage returns e with Message, MessageKey and MessageArgs set to
// the message key with args (see Text).
func EventMessage(e events.Event, key string, args ...any) events.Event {
	e.Message, e.MessageArgs = Text(key, args...)
	e.MessageKey = key
	return e
}

// Word, Nested, Plural and Count are fact's (the data path builds its
// facts without this package).
var (
	Word   = fact.Word
	Nested = fact.Nested
	Plural = fact.Plural
	Count  = fact.Count
	// ISRCause and ISRToELR say why an ISR changed (fact.ISRCause).
	ISRCause = fact.ISRCause
	ISRToELR = fact.ISRToELR
)

// Fill renders what a fact (package fact) leaves to the reporter: an
// argument naming a Kafka error the catalog has no description of becomes
// errors.other, and Message gets the English text of MessageKey with
// MessageArgs. An event with no key, or with its Message, is left as it is.
func Fill(e *events.Event) {
	if e.MessageKey == "" || e.Message != "" {
		return
	}
	for i, a := range e.MessageArgs {
		if code, ok := strings.CutPrefix(a, fact.KafkaErrorPrefix); ok && kafkaCode(code) {
			if _, known := catalogs[English][a]; !known {
				e.MessageArgs = slices.Clone(e.MessageArgs)
				e.MessageArgs[i] = "errors.other"
			}
		}
	}
	e.Message = Message(English, "", e.MessageKey, e.MessageArgs)
}

// kafkaCode reports whether s is spelt as Kafka's error names are
// (NOT_ENOUGH_REPLICAS), not as a topic that happens to start with errors.
func kafkaCode(s string) bool {
	for _, c := range s {
		if (c < 'A' || c > 'Z') && c != '_' {
			return false
		}
	}
	return s != ""
}

// KafkaError returns the message argument for Kafka's error named code
// (NOT_ENOUGH_REPLICAS): the key of its description, errors.<CODE>, which
// renders in the reader's language, or errors.other when the catalog has
// none. The code itself is the event's Error field.
func KafkaError(code string) string {
	if _, ok := catalogs[English]["errors."+code]; ok {
		return "errors." + code
	}
	return "errors.other"
}
