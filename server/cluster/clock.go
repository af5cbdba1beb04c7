package cluster

import (
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The rates the lab clock runs at: lab seconds per real second. A quarter
// slows the lab (and the messages the stage draws) so a learner can follow
// each fetch; four times speeds up waiting for timeouts.
const (
	RateQuarter = 0.25
	RateOne     = 1.0
	RateFour    = 4.0
)

// Clock is the lab clock. Running, it follows real time scaled by its rate;
// paused, it stands still until Step moves it. Every broker and the
// controller read it, so a paused lab has no timeouts, no ISR shrinks and no
// fencing until a step says so, and at ¼× every timeout takes four times as
// long in real time.
type Clock struct {
	mu     sync.Mutex
	paused bool
	rate   float64   // lab time per real time while running
	base   time.Time // lab time when the clock last paused, resumed or changed rate
	real   time.Time // real time at that moment
	now    func() time.Time
	// changed is closed, and replaced, when the rate changes (RateChanged).
	changed chan struct{}
	// resumed is made by Pause and closed by Resume (Resumed).
	resumed chan struct{}
}

// running is the channel Resumed returns while the clock runs.
var running = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// NewClock returns a running clock at 1× that starts at the current real
// time cut to the whole second. The timers on a grid of lab time (a quorum
// replica's Raft ticks every 50 ms, retention checks) then fall at the same
// offsets from the lab's start in every run: started mid-grain, a step
// covered one Raft tick more or less from run to run, and a paused lab's
// replays of one schedule differed (a leader's CheckQuorum a grain apart).
func NewClock() *Clock {
	c := newClockAt(time.Now)
	c.base = c.base.Truncate(time.Second)
	return c
}

// newClockAt returns a running clock at 1× whose real time is now (tests
// inject one they move by hand).
func newClockAt(now func() time.Time) *Clock {
	t := now()
	return &Clock{base: t, real: t, rate: RateOne, now: now, changed: make(chan struct{})}
}

// Now returns the lab time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nowLocked()
}

func (c *Clock) nowLocked() time.Time {
	if c.paused {
		return c.base
	}
	return c.base.Add(time.Duration(float64(c.now().Sub(c.real)) * c.rate))
}

// Paused reports whether the clock is paused.
func (c *Clock) Paused() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.paused
}

// Rate returns how many seconds of lab time pass per real second while the
// clock runs: RateQuarter, RateOne or RateFour.
func (c *Clock) Rate() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rate
}

// SetRate makes the clock run at rate (RateQuarter, RateOne or RateFour;
// INVALID_REQUEST otherwise) from now on; lab time already passed stays.
// It reports false if the clock already ran at rate.
func (c *Clock) SetRate(rate float64) (bool, error) {
	if rate != RateQuarter && rate != RateOne && rate != RateFour {
		return false, fmt.Errorf("%w: rate %g: the lab clock runs at 0.25, 1 or 4", kerr.InvalidRequest, rate)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if rate == c.rate {
		return false, nil
	}
	c.base, c.real, c.rate = c.nowLocked(), c.now(), rate
	close(c.changed)
	c.changed = make(chan struct{})
	return true, nil
}

// RateChanged returns a channel closed when the rate next changes. A wait
// taken at the old rate (Real) then starts again at the new one: from ¼×
// to 4× a heartbeat wait of 800ms real time would otherwise last 3.2 s of
// lab time, past the session timeout.
func (c *Clock) RateChanged() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

// Real returns how long d of lab time lasts in real time at the current
// rate (4d at ¼×). The lab's timers and tickers wait this long, so their
// lab-time intervals hold at every rate.
func (c *Clock) Real(d time.Duration) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Duration(float64(d) / c.rate)
}

// Pause stops the clock; it reports false if it was already paused.
func (c *Clock) Pause() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.paused {
		return false
	}
	c.base, c.paused = c.nowLocked(), true
	c.resumed = make(chan struct{})
	return true
}

// Resume lets the clock follow real time (at its rate) again from where it
// stood; it reports false if it was running.
func (c *Clock) Resume() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.paused {
		return false
	}
	c.real, c.paused = c.now(), false
	close(c.resumed)
	return true
}

// Resumed returns a channel closed when the paused clock next resumes
// (already closed while it runs). A loop with nothing to do while the lab is
// stepped by hand waits on it instead of polling: three brokers' followers
// polling every 20 ms woke a paused lab ~300 times a second.
func (c *Clock) Resumed() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.paused {
		return running
	}
	return c.resumed
}

// Step moves a paused clock forward by exactly d, whatever the rate; it
// reports false (and does nothing) if the clock is running or d is not
// positive.
func (c *Clock) Step(d time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.paused || d <= 0 {
		return false
	}
	c.base = c.base.Add(d)
	return true
}
