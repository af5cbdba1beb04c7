package class

import (
	"context"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"tidemark/events"
	"tidemark/server/cluster"
)

// TestGraderLiveExercises feeds the grader the events of both live
// exercises' stories and of near misses.
func TestGraderLiveExercises(t *testing.T) {
	bus := events.NewBus(events.BusOptions{History: 64})
	g := newGrader(bus, events.Snapshot{Brokers: []events.Broker{{ID: 1, State: events.BrokerUp}, {ID: 2, State: events.BrokerUp}}})
	ack := func(acks events.Acks, first, last int64) events.Event {
		return events.Event{Kind: events.KindAck, Topic: "demo", Acks: acks, Offsets: &events.Offsets{Base: first, Last: last}}
	}
	// acks=all with every broker up, acks=1 with one down: no pass.
	bus.Publish(ack(events.AcksAll, 0, 0))
	bus.Publish(events.Event{Kind: events.KindBroker, Broker: 2, BrokerState: events.BrokerCrashed})
	bus.Publish(ack(events.AcksLeader, 1, 3))
	// A truncation of acknowledged offsets without an unclean election: no pass.
	bus.Publish(events.Event{Kind: events.KindTruncation, Topic: "demo", Truncated: []events.TruncatedRecord{{Offset: 2}}})
	if got := g.advance(); len(got) != 0 {
		t.Fatalf("near misses passed %v", got)
	}
	// Broker 2 restarts; broker 1 is crashed by the lab and then unfenced
	// by a heartbeat it sent before: still down.
	bus.Publish(events.Event{Kind: events.KindFault, Broker: 2, Fault: &events.Fault{Kind: events.FaultRestart}})
	bus.Publish(ack(events.AcksAll, 4, 4))
	if got := g.advance(); len(got) != 0 {
		t.Fatalf("acks=all with every broker up again passed %v", got)
	}
	bus.Publish(events.Event{Kind: events.KindFault, Broker: 1, Fault: &events.Fault{Kind: events.FaultCrash}})
	bus.Publish(events.Event{Kind: events.KindBroker, Broker: 1, BrokerState: events.BrokerUp})
	bus.Publish(ack(events.AcksAll, 5, 5))
	if got := g.advance(); len(got) != 1 || got[0] != ExerciseAcksAllOneDown {
		t.Fatalf("acks=all with broker 1 crashed: %v", got)
	}
	bus.Publish(events.Event{Kind: events.KindElection, Topic: "demo", Leader: &events.Leadership{Leader: 2, Unclean: true}})
	bus.Publish(events.Event{Kind: events.KindTruncation, Topic: "demo", Partition: 1, Truncated: []events.TruncatedRecord{{Offset: 3}}})
	if got := g.advance(); len(got) != 0 {
		t.Fatalf("a truncation on another partition passed %v", got)
	}
	bus.Publish(events.Event{Kind: events.KindTruncation, Topic: "demo", Truncated: []events.TruncatedRecord{{Offset: 3}, {Offset: 9}}})
	if got := g.advance(); len(got) != 1 || got[0] != ExerciseLostAck {
		t.Fatalf("acknowledged offset 3 truncated after an unclean election: %v", got)
	}
}

// TestCheckFindOffset: the answer is checked against broker 1's own lookup
// of offset 5 in demo-0; a pass is kept in the roster.
func TestCheckFindOffset(t *testing.T) {
	clk := &clock{now: time.Unix(1000, 0)}
	c := openClass(t, t.TempDir(), 2, clk, nil)
	res, err := c.Check(1, ExerciseFindOffset, Answer{})
	if err != nil || res.Passed || res.Key != "exercise.find-offset.no-offset" {
		t.Fatalf("before any record: %+v, %v", res, err)
	}
	cl, done, err := c.Cluster(1)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{3, 3, 2} { // batches 0–2, 3–5, 6–7
		recs := make([]cluster.Record, n)
		for i := range recs {
			recs[i] = cluster.Record{Value: []byte("v")}
		}
		if _, err := cl.Produce(context.Background(), "demo", 0, 1, recs, 5*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := cl.Broker(1).Replica("demo", 0).Log().Lookup(FindOffset)
	done()
	if err != nil || tr.Position == 0 {
		t.Fatalf("lookup: %+v, %v", tr, err)
	}
	wrong := tr.Position + 1
	if res, _ := c.Check(1, ExerciseFindOffset, Answer{Segment: "00000000000000000000.log", Position: &wrong}); res.Passed || res.Key != "exercise.find-offset.wrong" {
		t.Fatalf("a wrong position: %+v", res)
	}
	for _, seg := range []string{"00000000000000000003.log", "banana"} {
		if res, _ := c.Check(1, ExerciseFindOffset, Answer{Segment: seg, Position: &tr.Position}); res.Passed || res.Key != "exercise.find-offset.wrong-segment" {
			t.Fatalf("a wrong segment %q: %+v", seg, res)
		}
	}
	if res, _ := c.Check(1, ExerciseFindOffset, Answer{Segment: "00000000000000000000.log", Position: &tr.Position}); !res.Passed {
		t.Fatalf("the right answer: %+v", res)
	}
	if r, _ := c.Result(1, ExerciseFindOffset); !r.Passed {
		t.Fatalf("the pass is not in the roster: %+v", r)
	}
	if r, _ := c.Result(2, ExerciseFindOffset); r.Passed {
		t.Fatal("seat 2 passed seat 1's exercise")
	}
	if _, err := c.Check(1, "nope", Answer{}); err == nil {
		t.Fatal("an unknown exercise: no error")
	}
}

// TestGradeAfterTheRequest: an acknowledgement the leader publishes after
// the request that caused it has been graded is graded by Grade (the
// exercise list and the dashboard call it before reading), not only at the
// learner's next request.
func TestGradeAfterTheRequest(t *testing.T) {
	c := openClass(t, t.TempDir(), 1, &clock{now: time.Unix(1000, 0)}, nil)
	if _, err := serve(t, c, 1, "/"); err != nil { // wakes seat 1 and grades it
		t.Fatal(err)
	}
	st, err := c.run(1)
	if err != nil {
		t.Fatal(err)
	}
	st.mu.Lock()
	bus := st.lab.Cluster().Bus()
	st.mu.Unlock()
	bus.Publish(events.Event{Kind: events.KindFault, Broker: 1, Fault: &events.Fault{Kind: events.FaultCrash}})
	bus.Publish(events.Event{Kind: events.KindAck, Topic: "demo", Acks: events.AcksAll, Offsets: &events.Offsets{Base: 0, Last: 0}})
	if r, _ := c.Result(1, ExerciseAcksAllOneDown); r.Passed {
		t.Fatal("passed before any grading saw the acknowledgement")
	}
	c.Grade(1)
	if r, _ := c.Result(1, ExerciseAcksAllOneDown); !r.Passed {
		t.Fatalf("Grade did not see the acknowledgement published after the request: %+v", r)
	}
	c.Grade(2) // a seat never woken: nothing to grade, nothing woken
	if c.Awake(2) {
		t.Fatal("Grade woke seat 2")
	}
}

// TestTryKeepsFailedChecks: a learner's checks are kept with the last
// failed answer and its reason (the teacher's dashboard shows them), a
// long answer is cut, a pass does not erase the failures, the teacher's
// Check is not a try, and a reset forgets them.
func TestTryKeepsFailedChecks(t *testing.T) {
	c := openClass(t, t.TempDir(), 1, &clock{now: time.Unix(1000, 0)}, nil)
	pos := int64(70)
	long := strings.Repeat("9", 5000)
	if _, err := c.Try(1, ExerciseFindOffset, Answer{Segment: "00000000000000000000.log", Position: &pos}); err != nil {
		t.Fatal(err)
	}
	r, err := c.Try(1, ExerciseFindOffset, Answer{Segment: long, Position: &pos})
	if err != nil || r.Passed || r.Tries.Checks != 2 || r.Tries.Failed != 2 || r.Tries.LastFailed == nil {
		t.Fatalf("two failed tries: %+v, %v", r, err)
	}
	f := r.Tries.LastFailed
	if f.Key != "exercise.find-offset.no-offset" || f.Answer == nil || *f.Answer.Position != 70 ||
		utf8.RuneCountInString(f.Answer.Segment) > maxAnswerRunes+1 || f.At.IsZero() {
		t.Fatalf("the last failed check: %+v %+v", f, f.Answer)
	}
	if _, err := c.Check(1, ExerciseFindOffset, Answer{}); err != nil {
		t.Fatal(err)
	}
	if r, _ := c.Result(1, ExerciseFindOffset); r.Tries.Checks != 2 {
		t.Fatalf("the teacher's check counted as a try: %+v", r.Tries)
	}
	if r, _ := c.Try(1, ExerciseLostAck, Answer{}); r.Tries.Failed != 1 || r.Tries.LastFailed.Key != "exercise.lost-ack.pending" || r.Tries.LastFailed.Answer != nil {
		t.Fatalf("a live exercise's failed try: %+v", r.Tries)
	}
	if _, err := c.ResetSeat(1); err != nil {
		t.Fatal(err)
	}
	if r, _ := c.Result(1, ExerciseFindOffset); r.Tries.Checks != 0 {
		t.Fatalf("a reset seat kept its tries: %+v", r.Tries)
	}
}
