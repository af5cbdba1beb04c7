//go:build js && wasm

package main

import (
	"strconv"
	"syscall/js"

	"tidemark/events"
	"tidemark/wasm/panel"
)

// historyDOM is what the panel knows of the lab's history on the server
// (GET /api/v1/history): whether the newest page was asked for on load,
// whether a request is on its way, and the timeline's data-first-seq and
// data-last-seq as last written.
type historyDOM struct {
	on          bool // the page streams the main lab (a lesson run's stream keeps no history)
	loaded      bool
	busy        bool
	first, last string
}

// setupHistory names the timeline for tests (data-testid="timeline") and
// turns paging on for the main lab's stream.
func (a *app) setupHistory() {
	if tl := a.el("timeline"); !tl.IsNull() {
		tl.Call("setAttribute", "data-testid", "timeline")
	}
	ws := a.root.Get("dataset").Get("ws")
	a.hist.on = ws.Type() != js.TypeString || ws.String() == "/ws"
}

// syncHistory runs after each render: once the stream is live it fetches
// the newest page of history (the charts are drawn from it, and the
// timeline learns where the history starts), then any page the timeline
// waits for, one request at a time; and it writes the timeline's bounds.
func (a *app) syncHistory() {
	s := a.state
	if tl := a.tlRange; tl.Truthy() {
		if first, last := s.TimelineAttrs(); first != a.hist.first || last != a.hist.last {
			el := a.el("timeline")
			el.Call("setAttribute", "data-first-seq", first)
			el.Call("setAttribute", "data-last-seq", last)
			a.hist.first, a.hist.last = first, last
		}
	}
	if !a.hist.on || a.hist.busy || !s.Live {
		return
	}
	if !a.hist.loaded {
		a.hist.loaded = true
		a.fetchHistory(0, a.seedHistory)
		return
	}
	if before, ok := s.Wanted(); ok {
		a.fetchHistory(before, func(p events.HistoryPage) { s.AddPage(p) })
	}
}

// seedHistory takes the newest page of history fetched on load: the
// charts are replayed from it and from the events the stage has drawn
// since, instead of starting empty.
func (a *app) seedHistory(p events.HistoryPage) {
	a.state.AddPage(p)
	if p.Snapshot == nil {
		return
	}
	var since []events.Event
	for _, e := range a.newEvents(p.LastSeq) {
		if e.Seq > a.stage.flown {
			break
		}
		since = append(since, e)
	}
	ch := panel.Charts{Topic: a.stage.charts.Topic, Partition: a.stage.charts.Partition}
	ch.Replay(*p.Snapshot, p.Events, since)
	a.stage.charts, a.stage.chartsAt = ch, 0
}

// historyPageLen is panel.HistoryPageLen in the request's words.
const historyPageLen = "1000"

// fetchHistory gets the page of history before seq before (0: the newest)
// and hands it to done; a failure drops the move that waited for it.
func (a *app) fetchHistory(before uint64, done func(events.HistoryPage)) {
	a.hist.busy = true
	url := "/api/v1/history?limit=" + historyPageLen
	if before > 0 {
		url += "&before=" + strconv.FormatUint(before, 10)
	}
	var onResp, onText, onErr js.Func
	release := func() { onResp.Release(); onText.Release(); onErr.Release() }
	finish := func() {
		a.hist.busy = false
		release()
		a.schedule()
	}
	onResp = js.FuncOf(func(_ js.Value, args []js.Value) any {
		if !args[0].Get("ok").Bool() {
			return js.Global().Get("Promise").Call("reject") // 501: the lab keeps no history
		}
		return args[0].Call("text")
	})
	onText = js.FuncOf(func(_ js.Value, args []js.Value) any {
		p, err := events.DecodeHistoryPage(args[0].String())
		if err != nil {
			a.state.PageFailed()
			js.Global().Get("console").Call("warn", "tidemark panel: bad history page: "+err.Error())
		} else {
			done(p)
		}
		finish()
		return nil
	})
	onErr = js.FuncOf(func(_ js.Value, args []js.Value) any {
		// A lab without a history (501) or a failed request: the
		// timeline keeps to what the panel holds.
		a.state.PageFailed()
		finish()
		return nil
	})
	// fetch's defaults (same-origin credentials, any type) are what the
	// API wants; options would cost the panel's size.
	js.Global().Call("fetch", url).Call("then", onResp).Call("then", onText).Call("catch", onErr)
}
