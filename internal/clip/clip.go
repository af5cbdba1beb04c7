// Package clip shortens texts a person reads without breaking a character:
// a value sent in a request, quoted back in an error, or a record's value
// in a label.
package clip

import "unicode/utf8"

// Bytes is s cut to at most n bytes at a character boundary, with an
// ellipsis when cut: a cut inside a UTF-8 sequence would show as �.
func Bytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
