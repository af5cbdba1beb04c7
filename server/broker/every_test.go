package broker

import (
	"context"
	"sync"
	"testing"
	"time"
)

// rateClock runs and turns every lab duration into the real wait it is
// set to (its rate), recording the durations it was asked for.
type rateClock struct {
	mu      sync.Mutex
	wait    time.Duration
	changed chan struct{}
	asked   []time.Duration
}

func (c *rateClock) Now() time.Time { return time.Time{} }
func (c *rateClock) Paused() bool   { return false }

// Resumed is closed: the clock never pauses.
func (c *rateClock) Resumed() <-chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}
func (c *rateClock) Real(d time.Duration) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked = append(c.asked, d)
	return c.wait
}
func (c *rateClock) RateChanged() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

// setWait changes the rate: every lab duration now waits w.
func (c *rateClock) setWait(w time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wait = w
	close(c.changed)
	c.changed = make(chan struct{})
}

// TestEveryWaitsAtTheClocksRate: a broker loop's interval is lab time,
// each wait is what the clock's Real makes of it, and a rate change starts
// the wait again at the new rate: a loop whose first wait is an hour runs
// as soon as the rate makes its interval a millisecond.
func TestEveryWaitsAtTheClocksRate(t *testing.T) {
	clk := &rateClock{wait: time.Hour, changed: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	b := &Broker{ctx: ctx, cfg: Config{Clock: clk}}
	ran := make(chan struct{}, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.every(200*time.Millisecond, func() { ran <- struct{}{} })
	}()
	clk.setWait(time.Millisecond)
	for i := range 3 {
		select {
		case <-ran:
		case <-time.After(5 * time.Second):
			t.Fatalf("run %d never came after the rate change", i+1)
		}
	}
	cancel()
	<-done
	clk.mu.Lock()
	defer clk.mu.Unlock()
	if len(clk.asked) < 4 {
		t.Fatalf("the clock was asked %d times for a wait, want one per run and one at the change", len(clk.asked))
	}
	for _, d := range clk.asked {
		if d != 200*time.Millisecond {
			t.Errorf("asked the clock for %v, want the loop's 200ms of lab time", d)
		}
	}
}
