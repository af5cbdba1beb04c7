package chaos

import (
	"testing"

	"tidemark/events"
)

// TestRecordingBounded: a recording keeps the first MaxRecorded events and
// says it left the rest out.
func TestRecordingBounded(t *testing.T) {
	var rec Recording
	evs := make([]events.Event, 3000)
	for range 2 {
		rec.add(evs)
	}
	if len(rec.Events) != MaxRecorded || !rec.Truncated {
		t.Fatalf("%d events recorded, truncated %v", len(rec.Events), rec.Truncated)
	}
	var short Recording
	short.add(evs)
	if len(short.Events) != 3000 || short.Truncated {
		t.Fatalf("%d events recorded, truncated %v", len(short.Events), short.Truncated)
	}
}
