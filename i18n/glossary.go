package i18n

import (
	_ "embed"
	"fmt"
	"regexp"
	"strings"
	"sync"
)

//go:embed glossary.tsv
var glossaryTSV string

// Term is one concept of the glossary: the rendering each language uses
// and the renderings it must not (see glossary.tsv).
type Term struct {
	Concept    string
	Use        map[Lang]string
	Deprecated map[Lang][]string
}

var (
	glossaryOnce  sync.Once
	glossaryTerms []Term
	glossaryErr   error
)

// Glossary returns the glossary's terms in file order; an error if
// glossary.tsv is malformed (a row without its seven columns).
func Glossary() ([]Term, error) {
	glossaryOnce.Do(func() { glossaryTerms, glossaryErr = parseGlossary(glossaryTSV) })
	return glossaryTerms, glossaryErr
}

func parseGlossary(src string) ([]Term, error) {
	langs := Languages()
	var out []Term
	header := true
	for i, line := range strings.Split(src, "\n") {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if header {
			header = false
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 1+2*len(langs) {
			return nil, fmt.Errorf("glossary.tsv:%d: %d columns, want %d", i+1, len(f), 1+2*len(langs))
		}
		t := Term{Concept: f[0], Use: map[Lang]string{}, Deprecated: map[Lang][]string{}}
		for j, l := range langs {
			t.Use[l] = f[1+j]
			if d := f[1+len(langs)+j]; d != "-" {
				t.Deprecated[l] = strings.Split(d, "|")
			}
		}
		out = append(out, t)
	}
	return out, nil
}

// GlossaryProblems lists the deprecated renderings text, in language l,
// holds, each with the rendering the glossary uses instead; nil for none.
// English matches ignore case and need word boundaries.
func GlossaryProblems(l Lang, text string) []string {
	terms, err := Glossary()
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, t := range terms {
		for _, bad := range t.Deprecated[l] {
			if deprecatedIn(l, bad, text) {
				out = append(out, fmt.Sprintf("%q says %s, the glossary %s (%s)", text, bad, t.Use[l], t.Concept))
			}
		}
	}
	return out
}

var englishWord sync.Map // deprecated English rendering → *regexp.Regexp

func deprecatedIn(l Lang, bad, text string) bool {
	if l != English {
		return strings.Contains(text, bad)
	}
	re, ok := englishWord.Load(bad)
	if !ok {
		re, _ = englishWord.LoadOrStore(bad, regexp.MustCompile(`(?i)\b`+regexp.QuoteMeta(bad)+`\b`))
	}
	return re.(*regexp.Regexp).MatchString(text)
}
