package clip

import (
	"testing"
	"unicode/utf8"
)

func TestBytes(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"abcdef", 3, "abc…"},
		{"订单订单", 4, "订…"}, // 4 bytes fall inside the second character
		{"订单", 2, "…"},
	} {
		got := Bytes(c.s, c.n)
		if got != c.want || !utf8.ValidString(got) {
			t.Errorf("Bytes(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}
