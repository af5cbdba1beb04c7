package cluster

import (
	"sync"
	"time"
)

// Clock is the lab clock. Running, it follows real time; paused, it stands
// still until Step moves it. Every broker and the controller read it, so a
// paused lab has no timeouts, no ISR shrinks and no fencing until a step says so.
type Clock struct {
	mu     sync.Mutex
	paused bool
	base   time.Time // lab time when the clock last paused or resumed
	real   time.Time // real time at that moment
	now    func() time.Time
}

// NewClock returns a running clock that starts at the current real time.
func NewClock() *Clock {
	t := time.Now()
	return &Clock{base: t, real: t, now: time.Now}
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
	return c.base.Add(c.now().Sub(c.real))
}

// Paused reports whether the clock is paused.
func (c *Clock) Paused() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.paused
}

// Pause stops the clock; it reports false if it was already paused.
func (c *Clock) Pause() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.paused {
		return false
	}
	c.base, c.paused = c.nowLocked(), true
	return true
}

// Resume lets the clock follow real time again from where it stood; it
// reports false if it was running.
func (c *Clock) Resume() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.paused {
		return false
	}
	c.real, c.paused = c.now(), false
	return true
}

// Step moves a paused clock forward by d; it reports false (and does
// nothing) if the clock is running or d is not positive.
func (c *Clock) Step(d time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.paused || d <= 0 {
		return false
	}
	c.base = c.base.Add(d)
	return true
}

// Until returns how much real time passes before the lab clock shows t, 0
// if it already has; ok is false while the clock is paused (then only Step
// moves it). Loops that wait for a lab deadline sleep this long.
func (c *Clock) Until(t time.Time) (d time.Duration, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.paused {
		return 0, false
	}
	return max(t.Sub(c.nowLocked()), 0), true
}
