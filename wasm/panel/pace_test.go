package panel

import "testing"

// TestPaced: under a stream a display's frames render at most every
// StreamFrameMs (every third at 60 Hz, every seventh at 144 Hz, every
// second at 30 Hz); without a stream every frame does.
func TestPaced(t *testing.T) {
	for _, c := range []struct {
		hz     float64
		stream bool
		want   int // renders in a second of frames
	}{
		{60, true, 20}, {144, true, 21}, {30, true, 15}, {60, false, 60},
	} {
		renders, last := 0, -1e9
		for i := range int(c.hz) {
			at := 1000 + float64(i)*1000/c.hz
			if !Paced(c.stream, at, last) {
				renders++
				last = at
			}
		}
		if renders != c.want {
			t.Errorf("%v Hz, stream %v: %d renders a second, want %d", c.hz, c.stream, renders, c.want)
		}
	}
}
