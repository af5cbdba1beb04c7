package i18n

import (
	"testing"

	"tidemark/events"
	"tidemark/internal/fact"
)

// TestFill: the reporter renders a fact's English text, as EventMessage
// did in the data path, and a Kafka error the catalog does not describe
// becomes errors.other.
func TestFill(t *testing.T) {
	e := fact.Say(events.Event{Kind: events.KindProduceError}, "event.produce-error", "NOT_ENOUGH_REPLICAS", fact.KafkaError("NOT_ENOUGH_REPLICAS"))
	want := EventMessage(events.Event{Kind: events.KindProduceError}, "event.produce-error", "NOT_ENOUGH_REPLICAS", KafkaError("NOT_ENOUGH_REPLICAS"))
	if e.Message != "" {
		t.Fatalf("a fact carries text: %q", e.Message)
	}
	Fill(&e)
	if e.Message != want.Message || e.Message == "" {
		t.Fatalf("Fill made %q, want %q", e.Message, want.Message)
	}
	u := fact.Say(events.Event{}, "event.produce-error", "NO_SUCH_CODE", fact.KafkaError("NO_SUCH_CODE"))
	Fill(&u)
	if u.MessageArgs[1] != "errors.other" {
		t.Fatalf("unknown Kafka error's word %q, want errors.other", u.MessageArgs[1])
	}
	done := events.Event{Message: "kept", MessageKey: "event.produce-error"}
	if Fill(&done); done.Message != "kept" {
		t.Fatalf("Fill replaced a rendered message: %q", done.Message)
	}
}
