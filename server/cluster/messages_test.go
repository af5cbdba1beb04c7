package cluster

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"tidemark/events"

	"github.com/twmb/franz-go/pkg/kgo"
)

// openWithMessages opens a paused 3-broker cluster that publishes message
// events, with a one-partition RF 3 topic demo.
func openWithMessages(t *testing.T) *Cluster {
	t.Helper()
	c, err := Open(Options{DataDir: t.TempDir(), Brokers: 3, Paused: true, MessageEvents: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.CreateTopic("demo", 1, 3, nil); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestMessageEvents checks the stage's messages in flight on a paused
// cluster: a produce request to the leader, a follower's fetch carrying
// its offset and last fetched epoch, the response carrying the HW, a
// heartbeat per broker on a step, a lost fetch on a cut link, and none at
// all when the cluster was opened without MessageEvents.
func TestMessageEvents(t *testing.T) {
	c := openWithMessages(t)
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

// TestClientMessageEvents checks that external Kafka clients show on the
// stage: a franz-go producer's Produce (client id, records, acks) and a
// consumer's answered Fetch (its position and the HW it reads up to).
func TestClientMessageEvents(t *testing.T) {
	c := openWithMessages(t)
	snap := c.Snapshot()
	leader := snap.Partition("demo", 0).Leader
	from := c.Bus().LastSeq()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds(c)...), kgo.ClientID("stage-producer"), kgo.DefaultProduceTopic("demo"),
		kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("a")}, &kgo.Record{Value: []byte("b")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for _, id := range []int32{1, 2, 3} {
		if id != leader {
			stepFetchAll(t, c, id, id) // fetch a, b; then learn the HW
		}
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(seeds(c)...), kgo.ClientID("stage-consumer"), kgo.ConsumeTopics("demo"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	for got := 0; got < 2; {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of 2 records: %v", got, err)
		}
		got += fs.NumRecords()
	}

	evs, _ := c.Bus().Since(from, 0)
	var produced, fetched bool
	for _, e := range evs {
		switch {
		case e.Kind == events.KindProduceRequest && e.Wire.Client == "stage-producer":
			if e.Broker != leader || e.Wire.To != leader || e.Wire.From != events.NoBroker || e.Wire.Records != 2 || e.Acks != events.AcksLeader || e.Topic != "demo" {
				t.Errorf("produce request %+v acks %q", *e.Wire, e.Acks)
			}
			produced = true
		case e.Kind == events.KindClientFetch && e.Wire.Client == "stage-consumer":
			if e.Wire.From != leader || e.Wire.To != events.NoBroker || e.Wire.HW != 2 || e.Topic != "demo" ||
				e.Wire.Records != int(2-e.Wire.FetchOffset) {
				t.Errorf("client fetch %+v", *e.Wire)
			}
			fetched = true
		case e.Kind == events.KindClientFetch && e.Wire.Client != "stage-consumer":
			t.Errorf("client fetch from %q", e.Wire.Client)
		}
	}
	if !produced || !fetched {
		t.Errorf("produce request seen %v, client fetch seen %v", produced, fetched)
	}
}

// TestMessageGateDue: a fetch round asks the gate how many of its
// per-partition message events to build. While the clock runs that is the
// one the gate will keep (none within a second of the last on that link),
// while it is paused every one.
func TestMessageGateDue(t *testing.T) {
	wall := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := newClockAt(func() time.Time { return wall })
	g := messageGate{on: true, clock: clk}
	msg := events.Event{Kind: events.KindFetchRequest, Wire: &events.Wire{From: 2, To: 1}}
	if n := g.due(events.KindFetchRequest, 2, 1, 600); n != 1 {
		t.Fatalf("running clock, nothing sent yet: %d due, want 1", n)
	}
	if kept := g.keep([]events.Event{msg, msg}); len(kept) != 1 {
		t.Fatalf("the gate kept %d of 2, want 1", len(kept))
	}
	if n := g.due(events.KindFetchRequest, 2, 1, 600); n != 0 {
		t.Fatalf("just after one was kept: %d due, want 0", n)
	}
	if n := g.due(events.KindFetchResponse, 1, 2, 600); n != 1 {
		t.Fatalf("another kind: %d due, want 1", n)
	}
	wall = wall.Add(messageSample)
	if n := g.due(events.KindFetchRequest, 2, 1, 600); n != 1 {
		t.Fatalf("a second later: %d due, want 1", n)
	}
	clk.Pause()
	if n := g.due(events.KindFetchRequest, 2, 1, 600); n != 600 {
		t.Fatalf("paused: %d due, want all 600", n)
	}
	if n := (&messageGate{clock: clk}).due(events.KindFetchRequest, 2, 1, 600); n != 0 {
		t.Fatalf("a lab without message events: %d due, want 0", n)
	}
}
