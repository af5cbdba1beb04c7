package cluster

import (
	"sort"
	"sync"
	"time"
)

// delayLine holds messages crossing a delayed link (Network.Delay) until
// lab time reaches their arrival, then delivers them in arrival order (in
// sending order for equal arrivals). While the clock runs a timer at the
// clock's rate delivers them; while it is paused, Step delivers those each
// of its grains reaches, so a paused lab's steps stay exact. A transport
// whose sender must not wait (Raft's, delivered in the sender's call) uses
// it where a fetcher, which has a goroutine of its own, sleeps; so does the
// pipeline's, whose writes and acks cross the same links.
//
// A message sent while one that arrived is being handled (a pipeline
// member forwarding what it received), or while a paused lab's Step ticks
// one of its grains (sendingAt), leaves at that time, not at the clock's:
// inside a Step the clock already reads the step's end, and the delay
// would otherwise start late.
type delayLine struct {
	clock *Clock

	mu      sync.Mutex // guards pending, timer and at
	pending []delayed
	timer   *time.Timer
	// at is the arrival time being delivered, or the Step grain being
	// ticked (zero when none): what a message sent meanwhile counts its
	// delay from.
	at time.Time
}

type delayed struct {
	due     time.Time
	link    Link
	deliver func()
}

// add delivers with deliver once d of lab time has passed from now; link
// is the one the message crosses.
func (l *delayLine) add(d time.Duration, link Link, deliver func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	from := l.clock.Now()
	if !l.at.IsZero() && l.at.Before(from) {
		from = l.at
	}
	due := from.Add(d)
	i := sort.Search(len(l.pending), func(i int) bool { return l.pending[i].due.After(due) })
	l.pending = append(l.pending, delayed{})
	copy(l.pending[i+1:], l.pending[i:])
	l.pending[i] = delayed{due, link, deliver}
	l.armLocked()
}

// deliverDue delivers, outside the lock, what has arrived by now, each at
// its arrival time (what a message it causes counts its delay from).
func (l *delayLine) deliverDue(now time.Time) {
	l.mu.Lock()
	n := sort.Search(len(l.pending), func(i int) bool { return l.pending[i].due.After(now) })
	due := append([]delayed(nil), l.pending[:n]...)
	l.pending = append(l.pending[:0], l.pending[n:]...)
	l.armLocked()
	l.mu.Unlock()
	for _, d := range due {
		l.setAt(d.due)
		d.deliver()
	}
	l.setAt(time.Time{})
}

// sendingAt runs fn with what it sends leaving at t (a paused lab's Step
// ticks each grain at its own time while the clock reads the step's end).
func (l *delayLine) sendingAt(t time.Time, fn func()) {
	l.setAt(t)
	defer l.setAt(time.Time{})
	fn()
}

func (l *delayLine) setAt(t time.Time) {
	l.mu.Lock()
	l.at = t
	l.mu.Unlock()
}

// armLocked sets the timer for the first arrival while the clock runs (a
// paused clock's Step delivers instead; the next add after a resume arms
// it again). Callers hold l.mu.
func (l *delayLine) armLocked() {
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
	if len(l.pending) == 0 || l.clock.Paused() {
		return
	}
	wait := l.clock.Real(l.pending[0].due.Sub(l.clock.Now()))
	l.timer = time.AfterFunc(max(wait, 0), func() { l.deliverDue(l.clock.Now()) })
}

// resume arms the timer for what waits (the clock was resumed).
func (l *delayLine) resume() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.armLocked()
}

// inFlight counts the messages on their way.
func (l *delayLine) inFlight() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.pending)
}

// between reports whether a message is on its way between a and b.
func (l *delayLine) between(a, b int32) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range l.pending {
		if m.link == (Link{a, b}) || m.link == (Link{b, a}) {
			return true
		}
	}
	return false
}

// stop drops every message in flight (the lab is closing).
func (l *delayLine) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.timer != nil {
		l.timer.Stop()
	}
	l.pending = nil
}
