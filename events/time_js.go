//go:build js && wasm

package events

// Time is when an event happened, in the WASM panel: nanoseconds since the
// Unix epoch. Linking the time package at all costs the panel ~10 KiB gzip
// (its init keeps internal/godebug, internal/bisect and syscall's file
// system), and the panel only carries event times, it does not compute with
// them; the server's Time is the time package's (time.go).
type Time struct{ ns int64 }

// unixUTC is the instant sec seconds and nsec nanoseconds after the Unix
// epoch.
func unixUTC(sec, nsec int64) Time { return Time{sec*1e9 + nsec} }

// IsZero says whether t is the zero Time (no time decoded).
func (t Time) IsZero() bool { return t.ns == 0 }

// UnixNano is t in nanoseconds since the Unix epoch.
func (t Time) UnixNano() int64 { return t.ns }
