package panel

import (
	"math"
	"testing"
)

// TestPaceWait: under a stream, frames asked for after PaceWait come at
// most every StreamFrameMs on a display of any rate (20 a second at
// 60 Hz, 15 at 30 Hz, 21 at 144 Hz: the tick after 42 ms); without a
// stream every frame of the display renders.
func TestPaceWait(t *testing.T) {
	for _, c := range []struct {
		hz     float64
		stream bool
		want   int // renders in a second
	}{
		{60, true, 20}, {30, true, 15}, {144, true, 21}, {60, false, 60},
	} {
		tick := 1000 / c.hz
		renders, last := 0, math.Inf(-1)
		// Events arrive all the time: each render asks for the next frame
		// at once, after PaceWait's wait; it comes at the display's next
		// tick.
		for now := 0.0; ; {
			if w := PaceWait(c.stream, now, last); w > 0 {
				now += w
			}
			at := math.Ceil(now/tick-1e-9) * tick
			if at >= 1000 {
				break
			}
			renders++
			last, now = at, at+tick/2 // the render takes half a tick
			if !c.stream {
				now = at + 1e-6
			}
		}
		if renders != c.want {
			t.Errorf("%v Hz, stream %v: %d renders a second, want %d", c.hz, c.stream, renders, c.want)
		}
	}
}
