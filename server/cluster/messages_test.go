package cluster

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"tidemark/events"
)

// TestMessageEvents checks the stage's messages in flight on a paused
// cluster: a produce request to the leader, a follower's fetch carrying
// its offset and last fetched epoch, the response carrying the HW, a
// heartbeat per broker on a step, a lost fetch on a cut link, and none at
// all when the cluster was opened without MessageEvents.
func TestMessageEvents(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	c, err := Open(Options{DataDir: t.TempDir(), Brokers: 3, Paused: true, MessageEvents: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.CreateTopic("demo", 1, 3, nil); err != nil {
		t.Fatal(err)
	}
	snap := c.Snapshot()
	leader := snap.Partition("demo", 0).Leader
	follower, other := leader%3+1, (leader+1)%3+1
	from := c.Bus().LastSeq()
	if _, err := c.Produce(context.Background(), "demo", 0, 1, []Record{{Value: []byte("a")}, {Value: []byte("b")}}, time.Second); err != nil {
		t.Fatal(err)
	}
	stepFetchAll(t, c, follower, other, follower, other) // fetch a, b; then the HW moves
	if err := c.Step(10 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	c.Cut(follower, leader, true)
	if err := c.StepFetch(context.Background(), follower); err == nil {
		t.Fatal("a fetch round across a cut link succeeded")
	}

	evs, _ := c.Bus().Since(from, 0)
	var produce, heartbeats, lost int
	var fetches []events.Wire
	var hws []int64
	for _, e := range evs {
		if e.Kind.IsMessage() && e.Wire == nil {
			t.Fatalf("%s event without Wire", e.Kind)
		}
		switch e.Kind {
		case events.KindProduceRequest:
			if e.Wire.To != leader || e.Wire.Records != 2 || e.Acks != events.AcksLeader || e.Wire.Client != UIClientID {
				t.Errorf("produce request %+v acks %q", *e.Wire, e.Acks)
			}
			produce++
		case events.KindFetchRequest:
			if e.Broker == follower && e.Topic == "demo" {
				if e.Wire.Lost {
					lost++
				} else {
					fetches = append(fetches, *e.Wire)
				}
			}
		case events.KindFetchResponse:
			if e.Broker == other && e.Topic == "demo" {
				hws = append(hws, e.Wire.HW)
			}
		case events.KindHeartbeat:
			if e.Wire.To != ControllerNode {
				t.Errorf("heartbeat %+v not to the controller", *e.Wire)
			}
			heartbeats++
		}
	}
	if produce != 1 {
		t.Errorf("%d produce requests, want 1", produce)
	}
	if len(fetches) != 2 || fetches[0].FetchOffset != 0 || fetches[1].FetchOffset != 2 || fetches[1].LastFetchedEpoch < 0 ||
		fetches[0].From != follower || fetches[0].To != leader {
		t.Errorf("fetch requests %+v, want offsets 0 then 2 from %d to %d", fetches, follower, leader)
	}
	if len(hws) != 2 {
		t.Errorf("fetch responses carried HW %v, want two", hws)
	}
	if heartbeats < 3 {
		t.Errorf("%d heartbeats on a step, want one per broker at least", heartbeats)
	}
	if lost != 1 {
		t.Errorf("%d lost fetch requests on the cut link, want 1", lost)
	}

	plain := openPaused(t)
	if _, err := plain.CreateTopic("demo", 1, 3, nil); err != nil {
		t.Fatal(err)
	}
	stepFetchAll(t, plain, 2, 3)
	all, _ := plain.Bus().Since(0, 0)
	for _, e := range all {
		if e.Kind.IsMessage() {
			t.Fatalf("message event %s published without MessageEvents", e.Kind)
		}
	}
}
