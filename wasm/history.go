//go:build js && wasm

package main

import (
	"syscall/js"

	"tidemark/events"
)

// historyDOM is the panel's side of the lab's history on the server
// (GET /api/v1/history): static/panel.js's tidemarkHistory fetches the
// pages (it is not there for a lesson run's stream) and writes the
// timeline's data-first-seq and data-last-seq; asked and seeded say the
// newest page was asked for and came, busy that a request is on its way,
// seq is the live Seq at the last render (lower: another lab, after the
// server restarted), done the callback a request answers.
type historyDOM struct {
	asked, seeded, busy bool
	seq                 uint64
	done                js.Value
}

// syncHistory runs after each render: once the stream is live it fetches
// the newest page of the history (the charts are replayed from it, the
// timeline learns the first event kept), then each page a move of the
// timeline waits for, one at a time.
func (a *app) syncHistory() {
	if a.state.Snap.Seq < a.hist.seq {
		a.hist.asked, a.hist.seeded = false, false // a new lab: a new history
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
// failed) and draws the charts from the first one, so they show the last
// minute instead of starting empty.
func (a *app) historyPage(text js.Value, first uint64) {
	a.hist.busy = false
	s := a.state
	var m events.Message
	if text.Type() == js.TypeString {
		m, _ = events.DecodeMessage(text.String()) // a bad page has no snapshot
	}
	if !a.hist.seeded && m.Snapshot != nil {
		a.hist.seeded = true
		// The page, then the events the stage drew since (it observes
		// the rest).
		a.stage.charts.Replay(m.Snapshot, m.Events, s.Hist, a.stage.flown)
		a.stage.chartsAt = 0
	}
	s.AddPage(first, m) // no snapshot: the move waiting for it is dropped
	a.schedule()
}
