package cluster

import (
	"testing"

	"tidemark/events"
)

// TestStartingBrokerIsNotCrashed: a broker registers with the controller
// (fenced until its first heartbeat) while it starts; that registration is
// a fenced broker's, not a crashed one's "not running", at the lab's start
// and at a restart.
func TestStartingBrokerIsNotCrashed(t *testing.T) {
	c := openPaused(t)
	if err := c.Crash(2); err != nil {
		t.Fatal(err)
	}
	after := c.Bus().LastSeq()
	if err := c.Restart(2); err != nil {
		t.Fatal(err)
	}
	evs, _ := c.Bus().Since(0, 0)
	registered := 0
	for _, e := range evs {
		if e.Kind != events.KindBroker {
			continue
		}
		if e.MessageKey == "event.broker.not-running" {
			t.Errorf("event %d: broker %d %s: %s", e.Seq, e.Broker, e.BrokerState, e.Message)
		}
		if e.BrokerState == events.BrokerFenced {
			registered++
		}
		if e.BrokerState == events.BrokerCrashed && (e.Broker != 2 || e.Seq > after) {
			t.Errorf("event %d: broker %d crashed: %s", e.Seq, e.Broker, e.Message)
		}
	}
	if registered != 4 {
		t.Errorf("%d fenced registrations, want 4 (three brokers started, one restarted)", registered)
	}
}
