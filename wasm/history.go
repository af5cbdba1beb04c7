//go:build js && wasm

package main

import (
	"syscall/js"

	"tidemark/events"
)

// historyDOM is the panel's side of the lab's history on the server
// (GET /api/v1/history): static/panel.js's tidemarkHistory fetches the
// pages (it is not there for a lesson run's stream) and writes the
// timeline's data-first-seq and data-last-seq; asked says the newest page
// was asked for, busy that a request is on its way,
// seq is the live Seq at the last render (lower: another lab, after the
// server restarted), done the callback a request answers.
type historyDOM struct {
	asked, busy bool
	seq         uint64
	done        js.Value
}

// syncHistory runs after each render: once the stream is live it fetches
// the newest page of the history (the timeline learns the first event
// kept), then each page a move of the
// timeline waits for, one at a time.
func (a *app) syncHistory() {
	if a.state.Snap.Seq < a.hist.seq {
		a.hist.asked = false // a new lab: a new history
	}
	a.hist.seq = a.state.Snap.Seq
	before, ok := a.state.Wanted()
	if a.hist.busy || !a.state.Live || a.hist.asked && !ok {
		return
	}
	if !a.hist.asked {
		// One callback a lab the page streams (a.fn keeps it).
		a.hist.asked, before = true, 0
		a.hist.done = a.fn(func(_ js.Value, args []js.Value) any {
			a.historyPage(args[0], uint64(args[1].Float()))
			return nil
		}).Value
	}
	a.hist.busy = true
	if f := js.Global().Get("tidemarkHistory"); f.Truthy() {
		f.Invoke(before, a.hist.done)
	} else {
		a.hist.busy = false // a lesson run's stream: no history to page
	}
}

// historyPage takes a page (its text and first_seq; null when the request
// failed) for the timeline.
func (a *app) historyPage(text js.Value, first uint64) {
	a.hist.busy = false
	s := a.state
	var m events.Message
	if text.Type() == js.TypeString {
		m, _ = events.DecodeMessage(text.String()) // a bad page has no snapshot
	}
	s.AddPage(first, m) // no snapshot: the move waiting for it is dropped
	a.schedule()
}
