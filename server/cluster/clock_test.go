package cluster

import (
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/events"
)

// fakeReal is real time a test moves by hand.
type fakeReal struct{ t time.Time }

func (f *fakeReal) now() time.Time          { return f.t }
func (f *fakeReal) advance(d time.Duration) { f.t = f.t.Add(d) }

// TestClockRate drives the clock with injected real time: running time is
// scaled by the rate from the moment it changes, paused time stands
// still at every rate, and Step moves exactly its duration.
func TestClockRate(t *testing.T) {
	real := &fakeReal{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	c := newClockAt(real.now)
	start := c.Now()
	lab := func() time.Duration { return c.Now().Sub(start) }

	real.advance(time.Second)
	if got := lab(); got != time.Second {
		t.Fatalf("at 1× one real second is %v of lab time", got)
	}
	waiting := c.RateChanged()
	if changed, err := c.SetRate(RateQuarter); err != nil || !changed {
		t.Fatalf("SetRate(¼) = %v, %v", changed, err)
	}
	select {
	case <-waiting:
	default:
		t.Fatal("a rate change did not close RateChanged's channel")
	}
	if got := lab(); got != time.Second {
		t.Fatalf("changing the rate moved the lab time to %v", got)
	}
	real.advance(4 * time.Second)
	if got := lab(); got != 2*time.Second {
		t.Fatalf("at ¼× four real seconds took the lab to %v, want 2s", got)
	}
	if got := c.Real(100 * time.Millisecond); got != 400*time.Millisecond {
		t.Errorf("at ¼× 100ms of lab time lasts %v of real time, want 400ms", got)
	}

	c.Pause()
	real.advance(time.Hour)
	if got := lab(); got != 2*time.Second {
		t.Fatalf("paused, the lab time moved to %v", got)
	}
	if !c.Step(250 * time.Millisecond) {
		t.Fatal("Step on a paused clock refused")
	}
	if got := lab(); got != 2250*time.Millisecond {
		t.Fatalf("a 250ms step at ¼× took the lab to %v, want exactly 2.25s", got)
	}
	if _, err := c.SetRate(RateFour); err != nil {
		t.Fatal(err)
	}
	real.advance(time.Hour)
	if got := lab(); got != 2250*time.Millisecond || !c.Paused() {
		t.Fatalf("a rate change while paused ran the clock: %v, paused %v", got, c.Paused())
	}
	c.Resume()
	real.advance(time.Second)
	if got := lab(); got != 6250*time.Millisecond {
		t.Fatalf("at 4× one real second took the lab to %v, want 6.25s", got)
	}
	if c.Step(time.Second) {
		t.Error("Step on a running clock was taken")
	}
	if got := c.Real(time.Second); got != 250*time.Millisecond {
		t.Errorf("at 4× a lab second lasts %v of real time, want 250ms", got)
	}
	waiting = c.RateChanged()
	if changed, err := c.SetRate(RateFour); err != nil || changed {
		t.Errorf("SetRate to the rate it has = %v, %v; want false, nil", changed, err)
	}
	select {
	case <-waiting:
		t.Error("setting the rate it had closed RateChanged's channel")
	default:
	}
	for _, bad := range []float64{0, -1, 0.5, 2, 1e9} {
		if _, err := c.SetRate(bad); !errors.Is(err, kerr.InvalidRequest) {
			t.Errorf("SetRate(%g) = %v, want INVALID_REQUEST", bad, err)
		}
	}
	if c.Rate() != RateFour {
		t.Errorf("a refused rate changed it to %g", c.Rate())
	}
}

// TestStepToEvent steps a paused lab to its next event: the followers of
// a new partition never fetch, so after replica.lag.time.max.ms its leader
// shrinks the ISR, and StepToEvent stops exactly there with that one
// event, the messages that led to it (AlterPartition) and none of the
// heartbeats of the steps before. With nothing more to happen it gives up
// after its limit and says so with one clock event.
func TestStepToEvent(t *testing.T) {
	c, err := Open(Options{DataDir: t.TempDir(), Brokers: 3, Paused: true, MessageEvents: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.CreateTopic("demo", 1, 3, nil); err != nil {
		t.Fatal(err)
	}
	seq, at := c.Bus().LastSeq(), c.Clock().Now()
	moved, evs, err := c.StepToEvent(0)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].Kind != events.KindISR || len(evs[0].ISR) != 1 {
		t.Fatalf("reached %d events %+v, want the one ISR shrink", len(evs), evs)
	}
	if moved <= 0 || moved >= MaxStepToEvent || moved%stepToEventGrain != 0 || c.Clock().Now().Sub(at) != moved {
		t.Errorf("moved %v (clock moved %v), want a whole number of %v steps below the limit", moved, c.Clock().Now().Sub(at), stepToEventGrain)
	}
	all, _ := c.Bus().Since(seq, 0)
	heartbeats, alters := 0, 0
	for _, e := range all {
		switch {
		case e.Kind == events.KindClock:
			t.Errorf("a clock event %+v: the event reached is the step's record", e.Clock)
		case e.Kind == events.KindHeartbeat:
			heartbeats++
		case e.Kind == events.KindAlterPartition:
			alters++
			if e.Seq < evs[0].Seq {
				t.Errorf("the AlterPartition message came before the event it led to")
			}
		}
	}
	if alters == 0 || heartbeats > 6 {
		t.Errorf("%d AlterPartition and %d heartbeat messages published; want the last step's only (≤ 6 heartbeats)", alters, heartbeats)
	}

	// Nothing more happens in this lab: the limit, then one clock event.
	seq = c.Bus().LastSeq()
	moved, evs, err = c.StepToEvent(2 * time.Second)
	if err != nil || moved != 2*time.Second || len(evs) != 0 {
		t.Fatalf("StepToEvent(2s) = %v, %v, %v; want 2s, no event", moved, evs, err)
	}
	if listed := listedSince(c.Bus(), seq); len(listed) != 1 || listed[0].Clock == nil || listed[0].Clock.StepMs != 2000 {
		t.Errorf("after an empty search the list got %+v, want one clock step of 2000 ms", listed)
	}

	c.Resume()
	if _, _, err := c.StepToEvent(0); !errors.Is(err, kerr.InvalidRequest) {
		t.Errorf("StepToEvent on a running clock: %v, want INVALID_REQUEST", err)
	}
	c.Pause()
}

// TestSetRate: a rate change is one clock event and lands in the
// snapshot; the same rate again changes nothing; another rate is refused.
func TestSetRate(t *testing.T) {
	c := openPaused(t)
	if got := c.Snapshot().Rate; got != RateOne {
		t.Fatalf("a new lab's snapshot has rate %v, want 1", got)
	}
	seq := c.Bus().LastSeq()
	if err := c.SetRate(RateQuarter); err != nil {
		t.Fatal(err)
	}
	if err := c.SetRate(RateQuarter); err != nil {
		t.Fatal(err)
	}
	if err := c.SetRate(2); !errors.Is(err, kerr.InvalidRequest) {
		t.Errorf("SetRate(2) = %v, want INVALID_REQUEST", err)
	}
	evs, _ := c.Bus().Since(seq, 0)
	if len(evs) != 1 || evs[0].Clock == nil || evs[0].Clock.Action != events.ClockRate || evs[0].Clock.Rate != RateQuarter {
		t.Fatalf("events %+v, want one rate change to 0.25", evs)
	}
	if s := c.Snapshot(); s.Rate != RateQuarter || !s.Paused || c.Clock().Rate() != RateQuarter {
		t.Errorf("snapshot rate %v paused %v, clock rate %v", s.Rate, s.Paused, c.Clock().Rate())
	}
}

// TestClockResumed: Resumed is closed while the clock runs, open while it
// is paused (steps included), and closed by Resume, so a paused lab's
// fetchers sleep until then instead of polling.
func TestClockResumed(t *testing.T) {
	c := newClockAt((&fakeReal{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}).now)
	isClosed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	if !isClosed(c.Resumed()) {
		t.Fatal("Resumed is open while the clock runs")
	}
	c.Pause()
	waiting := c.Resumed()
	c.Step(time.Second)
	if isClosed(waiting) || isClosed(c.Resumed()) {
		t.Fatal("Resumed is closed while the clock is paused")
	}
	c.Resume()
	if !isClosed(waiting) || !isClosed(c.Resumed()) {
		t.Fatal("Resume did not close Resumed")
	}
	c.Pause()
	if isClosed(c.Resumed()) {
		t.Fatal("a second pause reuses the closed channel")
	}
}
