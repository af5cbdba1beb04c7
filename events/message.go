package events

import "strings"

// Render returns the message key formatted with args in the language of t,
// a catalog lookup such as i18n.T or the panel's Catalog.T bound to one
// language. An argument that is itself a catalog key (a reason, a
// direction, a count, Kafka's error description: see IsWordKey) is
// translated first, so the whole sentence reads in one language; names and
// values a learner types (topics, rule names, configs) stay as they are.
// An empty key renders as "".
func Render(t func(key string, args ...any) string, key string, args []string) string {
	if key == "" {
		return ""
	}
	a := make([]any, len(args))
	for i, s := range args {
		if IsWordKey(s) {
			word, rest, more := strings.Cut(s, WordArgSep)
			var w []any
			for more {
				var arg string
				arg, rest, more = strings.Cut(rest, WordArgSep)
				w = append(w, arg)
			}
			s = t(word, w...)
		}
		a[i] = s
	}
	return t(key, a...)
}

// WordArgSep separates a word's key from its own arguments in a message
// argument ("event.word.reason.fenced:2": broker 2 fenced); i18n.Word
// builds them.
const WordArgSep = ":"

// IsWordKey reports whether a message argument is a catalog key to
// translate rather than text to show as is: an event text or word
// ("event.…", possibly with its own arguments after WordArgSep) or Kafka's
// error description ("errors.<CODE>"). A topic named like a key that the
// catalog lacks still shows as itself: a missing key renders as the key.
func IsWordKey(arg string) bool {
	return strings.HasPrefix(arg, "event.") || strings.HasPrefix(arg, "errors.")
}
