package cluster

import (
	"testing"
	"time"
)

// TestStepTimesRaftFromItsGrain: a Raft message a paused lab's Step sends
// while ticking one of its grains (a leader's heartbeat) leaves at that
// grain's lab time, not at the step's end, where the clock already stands:
// one 1 s step over links delayed 200 ms delivers the heartbeats of its
// first 800 ms within the step, and those of its last grains are due
// before 200 ms past its end.
func TestStepTimesRaftFromItsGrain(t *testing.T) {
	const delay = 200 * time.Millisecond
	c := openPausedN(t, 3)
	if _, err := c.CreateTopic("q", 1, 3, map[string]string{"replication.protocol": "quorum"}); err != nil {
		t.Fatal(err)
	}
	leader, _ := quorumLeader(t, c, "q")
	for _, id := range c.BrokerIDs() {
		if id != leader {
			c.network.SetDelay(leader, id, delay)
		}
	}
	if err := c.Step(time.Second); err != nil {
		t.Fatal(err)
	}
	end := c.clock.Now()
	c.linkDelays.mu.Lock()
	pending := append([]delayed(nil), c.linkDelays.pending...)
	c.linkDelays.mu.Unlock()
	// Heartbeats go every 100 ms: the last grains' are still on their way,
	// each due its grain + 200 ms; everything sent earlier has arrived.
	early := 0
	for _, m := range pending {
		if !m.due.After(end) || m.due.After(end.Add(delay)) {
			t.Fatalf("a message due at step end %+v still waits", m.due.Sub(end))
		}
		if m.due.Before(end.Add(delay)) {
			early++
		}
	}
	if early == 0 {
		t.Fatalf("%d messages in flight, all due %v after the step's end: timed from the end, not from their grains", len(pending), delay)
	}
}
