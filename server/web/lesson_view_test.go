package web

import (
	"testing"

	"tidemark/i18n"
	"tidemark/lessons"
)

// TestPointerText: a "look at" pointer to a truncated record names the
// broker, the partition, the offset, the value (shortened) and its note.
func TestPointerText(t *testing.T) {
	got := pointerText(i18n.English, lessons.Pointer{Kind: "truncated", Broker: 2, Topic: "hw", Offset: 1, Value: "m2", Note: "e0"})
	if want := "broker 2 · hw-0 · offset 1 · m2 · (e0)"; got != want {
		t.Errorf("pointer %q, want %q", got, want)
	}
}
