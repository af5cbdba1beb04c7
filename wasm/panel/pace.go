package panel

// StreamFrameMs is how often, at most, the panel renders while a stream of
// events arrives and the lanes follow it: every cell of a lane changes in
// every frame then, and each frame costs Chromium ~8 ms of its main thread
// (style, layout, paint, commit) and as much again in its other threads, a
// whole core at 60 frames a second. At 20 a second the page takes ~40 %
// less, which a machine busy with other work has to spare; a record waits
// ~25 ms longer for its frame, where hundreds a second arrive.
const StreamFrameMs = 50

// FrameSlackMs is how early a frame is asked for: frames come at the
// display's rate, and one asked for 42 ms after the last comes with the
// next tick of the display, 42–59 ms after it at 60 Hz.
const FrameSlackMs = 8

// PaceWait returns how long (ms) to wait before asking for the next frame
// at now, the last render's frame having been at last (both on the
// page's performance.now() clock): under a stream frames keep to
// StreamFrameMs, else ≤ 0, at once. Waiting for the time, rather than
// asking for every frame and passing most, spares Chromium the frames: one
// asked for commits even when nothing changed.
func PaceWait(stream bool, now, last float64) float64 {
	if !stream {
		return 0
	}
	return last + StreamFrameMs - FrameSlackMs - now
}
