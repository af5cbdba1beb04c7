package i18n

import (
	"regexp"
	"slices"
	"testing"
)

var verb = regexp.MustCompile(`%[-+# 0-9.]*[a-zA-Z%]`)

// TestCataloguesMatch: every language has exactly the English keys, no empty
// text, and the same fmt verbs in the same order.
func TestCataloguesMatch(t *testing.T) {
	en := Keys(English)
	if len(en) == 0 {
		t.Fatal("empty English catalog")
	}
	for _, l := range Languages()[1:] {
		if got := Keys(l); !slices.Equal(got, en) {
			missing, extra := diff(en, got), diff(got, en)
			t.Errorf("%s: missing %v, extra %v", l, missing, extra)
		}
		for _, k := range en {
			text := T(l, k)
			if text == "" {
				t.Errorf("%s: %s is empty", l, k)
			}
			if a, b := verb.FindAllString(T(English, k), -1), verb.FindAllString(catalogs[l][k], -1); !slices.Equal(a, b) {
				t.Errorf("%s: %s has verbs %v, English %v", l, k, b, a)
			}
		}
	}
}

func diff(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

func TestPick(t *testing.T) {
	cases := []struct {
		cookie, header string
		want           Lang
	}{
		{"", "", English},
		{"", "zh-CN,zh;q=0.9,en;q=0.8", SimplifiedChinese},
		{"", "zh-TW", TraditionalChinese},
		{"", "zh-Hant-HK;q=0.9, en;q=0.5", TraditionalChinese},
		{"", "fr-FR, en;q=0.3", English},
		{"", "fr-FR;q=0.9, zh-HK;q=0.8, en;q=0.7", TraditionalChinese},
		{"", "en;q=0.2, zh;q=0.9", SimplifiedChinese},
		{"zh-Hant", "en", TraditionalChinese},
		{"klingon", "zh", SimplifiedChinese},
		{"", ";;;,,q=", English},
	}
	for _, c := range cases {
		if got := Pick(c.cookie, c.header); got != c.want {
			t.Errorf("Pick(%q, %q) = %s, want %s", c.cookie, c.header, got, c.want)
		}
	}
}

func TestT(t *testing.T) {
	if got := T(SimplifiedChinese, "lang.switch"); got != "语言" {
		t.Fatalf("T = %q", got)
	}
	if got := T(English, "no.such.key"); got != "no.such.key" {
		t.Fatalf("missing key gives %q", got)
	}
}
