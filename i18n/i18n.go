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
	"sort"
	"strconv"
	"strings"
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
