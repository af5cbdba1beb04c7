package broker

import (
	"context"
	"sync"
	"testing"
	"time"
)

// rateClock runs, and turns every lab duration into a 1 ms real wait (a
// very fast rate), recording the durations it was asked for.
type rateClock struct {
	mu    sync.Mutex
	asked []time.Duration
}

func (c *rateClock) Now() time.Time { return time.Time{} }
func (c *rateClock) Paused() bool   { return false }
func (c *rateClock) Real(d time.Duration) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked = append(c.asked, d)
	return time.Millisecond
}

// TestEveryWaitsAtTheClocksRate: a broker loop's interval is lab time, and
// each wait is what the clock's Real makes of it at its rate.
func TestEveryWaitsAtTheClocksRate(t *testing.T) {
	clk := &rateClock{}
	ctx, cancel := context.WithCancel(context.Background())
	b := &Broker{ctx: ctx, cfg: Config{Clock: clk}}
	ran := make(chan struct{}, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.every(200*time.Millisecond, func() { ran <- struct{}{} })
	}()
	for i := range 3 {
		select {
		case <-ran:
		case <-time.After(5 * time.Second):
			t.Fatalf("run %d never came", i+1)
		}
	}
	cancel()
	<-done
	clk.mu.Lock()
	defer clk.mu.Unlock()
	if len(clk.asked) < 3 {
		t.Fatalf("the clock was asked %d times for a wait, want one per run", len(clk.asked))
	}
	for _, d := range clk.asked {
		if d != 200*time.Millisecond {
			t.Errorf("asked the clock for %v, want the loop's 200ms of lab time", d)
		}
	}
}
