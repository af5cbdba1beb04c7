package panel

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
	"testing"

	"tidemark/i18n"
)

// TestSprintfMatchesFmt formats every panel, stage and event text (and
// the Kafka error descriptions events quote) of every catalogue with
// Sprintf and with fmt.Sprintf: they must agree.
func TestSprintfMatchesFmt(t *testing.T) {
	for _, lang := range i18n.Languages() {
		for k, text := range i18n.Catalog(lang) {
			if !strings.HasPrefix(k, "panel.") && !strings.HasPrefix(k, "stage.") &&
				!strings.HasPrefix(k, "event.") && !strings.HasPrefix(k, "errors.") {
				continue
			}
			var args []any
			for i := 0; i+1 < len(text); i++ {
				if text[i] != '%' {
					continue
				}
				i++
				switch text[i] {
				case 'd':
					args = append(args, int64(-12345678901)+int64(len(args)))
				case 's', 'v':
					args = append(args, "<x&"+strconv.Itoa(len(args))+">")
				case '%':
				default:
					t.Errorf("%s %s: verb %%%c: Sprintf formats only %%d, %%s, %%v", lang, k, text[i])
				}
			}
			if got, want := Sprintf(text, args...), fmt.Sprintf(text, args...); got != want {
				t.Errorf("%s %s: Sprintf gives %q, fmt %q", lang, k, got, want)
			}
		}
	}
	for _, c := range []struct {
		format string
		args   []any
	}{
		{"%d %d %d %d %d %v", []any{1, int32(-2), uint32(3), uint64(4), int64(5), true}},
		{"100%% %s", []any{"x"}},
		{"%d %s", []any{7}},
	} {
		if got, want := Sprintf(c.format, c.args...), fmt.Sprintf(c.format, c.args...); got != want {
			t.Errorf("Sprintf(%q) = %q, fmt gives %q", c.format, got, want)
		}
	}
}

func TestSprintfMarksUnknownVerbs(t *testing.T) {
	if got := Sprintf("%z", "y"); got != "%!z(y)" {
		t.Errorf("Sprintf(%%z) = %q", got)
	}
}

func TestF1AndEscAndAtoi(t *testing.T) {
	// Ties (1.25) may round either way.
	for _, v := range []float64{0, 0.04, 0.06, 1.26, -1.24, -0.04, 123.456, -99.94, 1e6} {
		if got, want := F1(v), strconv.FormatFloat(v, 'f', 1, 64); got != want && !(want == "-0.0" && got == "0.0") {
			t.Errorf("F1(%v) = %s, want %s", v, got, want)
		}
	}
	if F1(math.Copysign(0, -1)) != "0.0" {
		t.Error("F1(-0)")
	}
	for _, s := range []string{"", "plain", `<a href="x">'&'</a>`, "中文 & 文"} {
		if got, want := esc(s), html.EscapeString(s); got != want {
			t.Errorf("esc(%q) = %q, want %q", s, got, want)
		}
	}
	for s, want := range map[string]int{"0": 0, "42": 42, "999999999": 999999999} {
		if got, ok := Atoi(s); !ok || got != want {
			t.Errorf("Atoi(%q) = %d, %v", s, got, ok)
		}
	}
	for _, s := range []string{"", "-1", "1x", "1234567890"} {
		if _, ok := Atoi(s); ok {
			t.Errorf("Atoi(%q) succeeded", s)
		}
	}
}
