package kafkaname

import (
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestOf(t *testing.T) {
	for ke, want := range map[*kerr.Error]string{
		nil:                          "",
		kerr.NotLeaderForPartition:   "NOT_LEADER_OR_FOLLOWER",
		kerr.UnknownTopicOrPartition: "UNKNOWN_TOPIC_OR_PARTITION",
	} {
		if got := Of(ke); got != want {
			t.Errorf("Of(%v) = %q, want %q", ke, got, want)
		}
	}
}

// TestErrAndText: a wrapped Kafka error is found and named as Kafka names
// it today; any other error keeps its text in Text and has no name in Err.
func TestErrAndText(t *testing.T) {
	wrapped := fmt.Errorf("fetch from broker 2: %w", kerr.NotLeaderForPartition)
	if name, ok := Err(wrapped); !ok || name != "NOT_LEADER_OR_FOLLOWER" {
		t.Errorf("Err(%v) = %q, %v", wrapped, name, ok)
	}
	if got := Text(wrapped); got != "NOT_LEADER_OR_FOLLOWER" {
		t.Errorf("Text(%v) = %q", wrapped, got)
	}
	other := errors.New("disk on fire")
	if name, ok := Err(other); ok || name != "" {
		t.Errorf("Err(%v) = %q, %v", other, name, ok)
	}
	if got := Text(other); got != "disk on fire" {
		t.Errorf("Text(%v) = %q", other, got)
	}
	if Text(nil) != "" {
		t.Error("Text(nil) is not empty")
	}
}
