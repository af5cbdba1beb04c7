package i18n

import (
	"strings"
	"testing"
)

// TestGlossary: the glossary parses, every concept has a rendering in
// every language, and no language's rendering of one concept is deprecated
// by another.
func TestGlossary(t *testing.T) {
	terms, err := Glossary()
	if err != nil {
		t.Fatal(err)
	}
	if len(terms) < 20 {
		t.Fatalf("%d terms, want the lessons' concepts", len(terms))
	}
	for _, term := range terms {
		for _, l := range Languages() {
			use := term.Use[l]
			if strings.TrimSpace(use) == "" {
				t.Errorf("%s: no %s rendering", term.Concept, l)
			}
			if ps := GlossaryProblems(l, use); len(ps) > 0 {
				t.Errorf("%s: the %s rendering is deprecated: %v", term.Concept, l, ps)
			}
		}
	}
	if _, err := parseGlossary("concept\ten\n" + "a\tb\tc\n"); err == nil {
		t.Error("a short row parses")
	}
}

// TestCatalogsFollowGlossary: no text of any catalog holds a rendering the
// glossary deprecates in its language.
func TestCatalogsFollowGlossary(t *testing.T) {
	if len(GlossaryProblems(TraditionalChinese, "時鐘正在運行")) == 0 || len(GlossaryProblems(SimplifiedChinese, "时钟正在运行")) != 0 {
		t.Fatal("the check tells 運行 from 运行 wrongly")
	}
	for _, l := range Languages() {
		for key, v := range Catalog(l) {
			for _, p := range GlossaryProblems(l, v) {
				t.Errorf("%s %s: %s", l, key, p)
			}
		}
	}
}
