//go:build !(js && wasm)

package events

import "time"

// Time is when an event happened: the time package's Time everywhere but in
// the WASM panel (time_js.go), whose budget the time package does not fit.
type Time = time.Time

// unixUTC is the instant sec seconds and nsec nanoseconds after the Unix
// epoch, in UTC.
func unixUTC(sec, nsec int64) Time { return time.Unix(sec, nsec).UTC() }
