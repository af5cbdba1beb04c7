package class

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"tidemark/events"
	"tidemark/server/cluster"
)

// TestGraderLiveExercises feeds the grader the learner's actions and the
// cluster's events of both live exercises' stories and of near misses:
// only what the learner did counts.
func TestGraderLiveExercises(t *testing.T) {
	bus := events.NewBus(events.BusOptions{History: 64})
	l := new(Learner)
	g := newGrader(bus, events.Snapshot{Brokers: []events.Broker{{ID: 1, State: events.BrokerUp}, {ID: 2, State: events.BrokerUp}}}, l)
	produce := func(acks int16, first, last int64) {
		l.Did(Action{Kind: ActionProduce, Began: l.Begin(), Topic: "demo", Acks: acks, First: first, Last: last})
	}
	// acks=all with every broker up, acks=1 with one down: no pass.
	produce(-1, 0, 0)
	l.Did(Action{Kind: ActionDown, Began: l.Begin(), Broker: 2})
	produce(1, 1, 3)
	// A truncation of acknowledged offsets without an unclean election: no pass.
	bus.Publish(events.Event{Kind: events.KindTruncation, Topic: "demo", Truncated: []events.TruncatedRecord{{Offset: 2}}})
	if got := g.advance(); len(got) != 0 {
		t.Fatalf("near misses passed %v", got)
	}
	// Broker 2 restarts; broker 1 halts on its own (not the learner's
	// doing), and an acks=all write nobody sent through a page or the API
	// is acknowledged: the event alone passes nothing.
	l.Did(Action{Kind: ActionUp, Began: l.Begin(), Broker: 2})
	bus.Publish(events.Event{Kind: events.KindBroker, Broker: 1, BrokerState: events.BrokerCrashed})
	bus.Publish(events.Event{Kind: events.KindAck, Topic: "demo", Acks: events.AcksAll, Offsets: &events.Offsets{Base: 4, Last: 4}})
	produce(-1, 5, 5)
	if got := g.advance(); len(got) != 0 {
		t.Fatalf("acks=all with no broker the learner stopped passed %v", got)
	}
	// An acks=all write sent before the learner's crash and acknowledged
	// after it does not count; a refused one neither.
	began := l.Begin()
	l.Did(Action{Kind: ActionDown, Began: l.Begin(), Broker: 1})
	l.Did(Action{Kind: ActionProduce, Began: began, Topic: "demo", Acks: -1, First: 6, Last: 6})
	l.Did(Action{Kind: ActionProduce, Began: l.Begin(), Topic: "demo", Acks: -1, First: -1, Last: -1, Err: errors.New("NOT_ENOUGH_REPLICAS")})
	if got := g.advance(); len(got) != 0 {
		t.Fatalf("a write sent before the crash passed %v", got)
	}
	produce(-1, 7, 7)
	if got := g.advance(); len(got) != 1 || got[0] != ExerciseAcksAllOneDown {
		t.Fatalf("acks=all sent with broker 1 crashed by the learner: %v", got)
	}
	bus.Publish(events.Event{Kind: events.KindElection, Topic: "demo", Leader: &events.Leadership{Leader: 2, Unclean: true}})
	bus.Publish(events.Event{Kind: events.KindTruncation, Topic: "demo", Partition: 1, Truncated: []events.TruncatedRecord{{Offset: 3}}})
	if got := g.advance(); len(got) != 0 {
		t.Fatalf("a truncation on another partition passed %v", got)
	}
	// Offset 4 was acknowledged to somebody else: its truncation is not
	// the learner's lost write.
	bus.Publish(events.Event{Kind: events.KindTruncation, Topic: "demo", Truncated: []events.TruncatedRecord{{Offset: 4}}})
	if got := g.advance(); len(got) != 0 {
		t.Fatalf("a write the learner did not send, truncated, passed %v", got)
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

// TestGradeAfterTheRequest: what the learner did since the seat was last
// graded is graded by Grade (the exercise list and the dashboard call it
// before reading), not only at the learner's next request; and a produce
// the seat's handler did not report (somebody else's write on the seat's
// cluster) passes nothing.
func TestGradeAfterTheRequest(t *testing.T) {
	var learner *Learner
	c := openClassWith(t, t.TempDir(), 1, &clock{now: time.Unix(1000, 0)}, nil, func(env Env) { learner = env.Learner })
	if _, err := serve(t, c, 1, "/"); err != nil { // wakes seat 1 and grades it
		t.Fatal(err)
	}
	cl, done, err := c.Cluster(1)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	learner.Did(Action{Kind: ActionDown, Began: learner.Begin(), Broker: 2})
	if _, err := cl.Produce(context.Background(), "demo", 0, -1, []cluster.Record{{Value: []byte("x")}}, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	c.Grade(1)
	if r, _ := c.Result(1, ExerciseAcksAllOneDown); r.Passed {
		t.Fatal("an acks=all write the learner did not send passed")
	}
	learner.Did(Action{Kind: ActionProduce, Began: learner.Begin(), Topic: "demo", Acks: -1, First: 1, Last: 1})
	if r, _ := c.Result(1, ExerciseAcksAllOneDown); r.Passed {
		t.Fatal("passed before any grading saw the learner's produce")
	}
	c.Grade(1)
	if r, _ := c.Result(1, ExerciseAcksAllOneDown); !r.Passed {
		t.Fatalf("Grade did not see the learner's produce: %+v", r)
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

// TestGraderISRRejoin: a follower that leaves an ISR after a fault of the
// learner's and joins again is a rejoin with the cause it left for; one
// that leaves before any fault of theirs is not; an answer passes only
// with that cause.
func TestGraderISRRejoin(t *testing.T) {
	bus := events.NewBus(events.BusOptions{History: 64})
	l := new(Learner)
	g := newGrader(bus, events.Snapshot{}, l)
	isr := func(broker int32, joined bool, cause events.ISRCause) {
		bus.Publish(events.Event{Kind: events.KindISR, Topic: "demo", ISRChanges: []events.ISRChange{{Broker: broker, Joined: joined, Cause: cause}}})
	}
	isr(2, false, events.ISRLagged) // before any fault of the learner's
	isr(2, true, events.ISRCaughtUp)
	g.advance()
	if got := checkISRRejoin(g.rejoined(), Answer{Cause: events.ISRLagged}); got != "exercise.isr-rejoin.none" {
		t.Fatalf("a rejoin the learner did not cause: %q", got)
	}
	l.Did(Action{Kind: ActionDown, Began: l.Begin(), Broker: 3})
	isr(3, false, events.ISRFenced)
	isr(3, false, events.ISRSessionExpired) // the first reason counts
	g.advance()
	if got := checkISRRejoin(g.rejoined(), Answer{Cause: events.ISRFenced}); got != "exercise.isr-rejoin.none" {
		t.Fatalf("before the follower joined again: %q", got)
	}
	isr(3, true, events.ISRCaughtUp)
	g.advance()
	for cause, want := range map[events.ISRCause]string{events.ISRFenced: "", events.ISRSessionExpired: "exercise.isr-rejoin.wrong",
		events.ISRLagged: "exercise.isr-rejoin.wrong", "": "exercise.isr-rejoin.answer", "banana": "exercise.isr-rejoin.answer"} {
		if got := checkISRRejoin(g.rejoined(), Answer{Cause: cause}); got != want {
			t.Errorf("answer %q: %q, want %q", cause, got, want)
		}
	}
}
