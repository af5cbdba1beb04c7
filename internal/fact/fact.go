// Package fact builds the facts the data path reports (the replication
// rules, the brokers, the controller): an event's message as a catalog key
// and its arguments, never rendered text. The reporter renders them
// (i18n.Fill) off every broker and controller lock, and each page renders
// them again in its reader's language; nothing here knows a language.
package fact

import (
	"fmt"
	"strings"

	"tidemark/events"
)

// Say returns e with MessageKey set to key and MessageArgs to args as
// text; Message, the English text, is left for the reporter to fill.
func Say(e events.Event, key string, args ...any) events.Event {
	e.Message, e.MessageKey, e.MessageArgs = "", key, Args(args...)
	return e
}

// Args returns message arguments as the text an event carries them in.
func Args(args ...any) []string {
	if len(args) == 0 {
		return nil
	}
	text := make([]string, len(args))
	for i, a := range args {
		text[i] = fmt.Sprint(a)
	}
	return text
}

// Word returns a message argument that is itself a catalog key (a reason,
// a direction, a count: "event.word.…") with arguments of its own, for
// events.Render to translate. Its arguments must hold no ':' (ids, numbers
// and lists do not).
func Word(key string, args ...any) string {
	var b strings.Builder
	b.WriteString(key)
	for _, a := range args {
		b.WriteString(events.WordArgSep)
		fmt.Fprint(&b, a)
	}
	return b.String()
}

// Nested returns e's message as a word, to say it inside another message
// ("%s (the broker is not running)"). Its arguments must be plain text, not
// words themselves.
func Nested(e events.Event) string {
	if len(e.MessageArgs) == 0 {
		return e.MessageKey
	}
	return e.MessageKey + events.WordArgSep + strings.Join(e.MessageArgs, events.WordArgSep)
}

// Plural returns key.one for n = 1 and key.other otherwise: the catalog
// holds both, so English says "1 segment" and "2 segments" (Chinese texts
// are the same in both).
func Plural(key string, n int) string {
	if n == 1 {
		return key + ".one"
	}
	return key + ".other"
}

// Count is Word for a counted noun, "event.word.segments" with n.
func Count(key string, n int) string { return Word(Plural(key, n), n) }

// KafkaError returns the message argument for Kafka's error named code
// (NOT_ENOUGH_REPLICAS): the key of its description, errors.<CODE>. The
// reporter (i18n.Fill) makes it errors.other when the catalog has none.
func KafkaError(code string) string { return KafkaErrorPrefix + code }

// KafkaErrorPrefix starts the key of a Kafka error's description.
const KafkaErrorPrefix = "errors."
