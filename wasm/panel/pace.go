package panel

// StreamFrameMs is how often, at most, the panel renders while a stream of
// events arrives and the lanes follow it: every cell of a lane changes in
// every frame then, and each frame costs Chromium ~8 ms of its main thread
// (style, layout, paint, commit) and as much again in its other threads, a
// whole core at 60 frames a second. At 20 a second the page takes ~40 %
// less, which a machine busy with other work has to spare; a record waits
// ~25 ms longer for its frame, where hundreds a second arrive.
const StreamFrameMs = 50

// frameSlackMs is how early a frame may come and still be the one due:
// frames come at the display's rate, so at 60 Hz the third after a render,
// ~50 ms later, renders, whether its time says 49.9 or 50.1.
const frameSlackMs = 8

// Paced reports whether a frame at ms (requestAnimationFrame's time) passes
// without a render, the last render's frame having been at last: under a
// stream, frames keep to StreamFrameMs. A frame that changes nothing costs
// Chromium next to nothing, as it commits nothing.
func Paced(stream bool, at, last float64) bool {
	return stream && at-last < StreamFrameMs-frameSlackMs
}
