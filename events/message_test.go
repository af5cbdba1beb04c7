package events

import (
	"fmt"
	"testing"
)

func TestRender(t *testing.T) {
	cat := map[string]string{
		"event.x":           "%s: %s, %s",
		"event.word.fenced": "broker %s fenced",
		"event.word.clean":  "clean",
		"errors.X":          "it failed",
	}
	tr := func(key string, args ...any) string {
		s, ok := cat[key]
		if !ok {
			s = key
		}
		if len(args) > 0 {
			return fmt.Sprintf(s, args...)
		}
		return s
	}
	cases := []struct {
		key  string
		args []string
		want string
	}{
		{"event.x", []string{"event.word.fenced:2", "event.word.clean", "errors.X"}, "broker 2 fenced: clean, it failed"},
		// Topic names and values are shown as they are, even one named
		// like a key the catalog lacks.
		{"event.x", []string{"demo", "event.unknown", "a.b:c"}, "demo: event.unknown, a.b:c"},
		{"", []string{"x"}, ""},
	}
	for _, c := range cases {
		if got := Render(tr, c.key, c.args); got != c.want {
			t.Errorf("Render(%s, %q) = %q, want %q", c.key, c.args, got, c.want)
		}
	}
}
