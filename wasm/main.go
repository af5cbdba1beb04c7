//go:build js && wasm

// Command wasm is Tidemark's live panel, compiled with GOOS=js GOARCH=wasm and
// loaded by static/panel.js into the page's #panel element. It connects to /ws,
// keeps the lab's state and its history (package panel), re-renders at most
// once per frame (under a stream of events at most every
// panel.StreamFrameMs), drives the timeline and sends the page's control forms
// without reloading. Its words come from the catalogue the page embeds as
// JSON in #tm-i18n.
//
// #panel's data-status says "connecting" or "live"; data-seq is the last
// event applied, data-view-seq the event whose state the lanes show and
// data-mode "live" or "past" (browser tests wait on them). The page may set
// data-ws (the stream's path, default /ws), data-topic and data-partition
// (show only that topic or partition). The page's
// window.tidemarkRenders() returns, and forgets, [seq, time in ms since the
// Unix epoch, ms spent rendering, ms spent decoding and applying messages
// since the previous render, ms of the rendering spent on the lanes, the
// parts that do not run every frame (frameParts' bits), messages decoded
// since the previous render] for each render since the last call: the
// benchmark reads when an event reached the DOM and where the time went.
package main

import (
	"slices"
	"strconv"
	"strings"
	"syscall/js"

	"tidemark/events"
	"tidemark/wasm/panel"
)

// maxRenderLog bounds the render log the benchmark reads.
const maxRenderLog = 8192

// maxAnimated is the most events one frame animates; more arrive only under
// load (a benchmark, a producer loop), where animations would only flicker.
const maxAnimated = 40

type app struct {
	doc       js.Value
	root      js.Value // #panel
	cat       panel.Catalog
	state     *panel.State
	rendered  uint64 // live Seq at the last render (what is "new")
	scheduled bool
	paused    bool     // the event list is frozen (state keeps updating)
	backoffMs int      // before the next reconnection
	reduce    js.Value // matchMedia("(prefers-reduced-motion: reduce)")
	renderLog []any
	handleMs  float64           // time spent decoding and applying messages since the last render
	parts     frameParts        // the parts this frame ran that do not run in every frame
	drained   int               // messages decoded since the last render
	shown     map[string]string // innerHTML last set per element id: unchanged parts are not touched
	listAt    float64           // when the event list was last rendered (ms)
	tlAt      float64           // when the timeline's status and slider last changed (ms)
	listed    uint64            // live Seq when the event list was last rendered
	renderDue bool              // a render is due for the list's or the timeline's next turn
	topic     string            // #panel's data-topic: show only this topic ("" all)
	partition int32             // #panel's data-partition: only this partition (-1 all)
	funcs     []js.Func         // kept alive for the page's lifetime
	laneShape string            // the shapes of the figures in #lanes, in order
	inbox     js.Value          // the current connection's queued messages (undefined: none)
	listen    func()            // wakes Go at the connection's next message
	figs      []figDOM          // #lanes' figures as last rendered
	lanes     panel.Lanes       // draws the figures, remembering cell texts
	tlRange   js.Value          // the timeline's slider, status line and live button (undefined: no timeline)
	tlStatus  js.Value
	tlLive    js.Value
	tlShown   timelineShown // what the timeline and #panel's data show
	parses    []parseJob    // markup to parse at the end of the frame
	scratch   js.Value      // a detached SVG group to parse it in
	appendFn  js.Value      // Element.prototype.append
	replaceFn js.Value      // Element.prototype.replaceChildren
	stage     stageDOM      // the stage's topology (#topo), when the page has one
	dom       domBatch      // the lanes' slots, markers and canvases are written through it, once per frame
	measured  bool          // figs' vis0 and vis1 are up to date
	listsAt   float64       // when the lanes' accessible lists were last brought up to date (ms)
	listsSeq  uint64        // live Seq then
	evTail    string        // the events the page listed before the stream's, until the panel lists a full list of its own
	frameAt   float64       // requestAnimationFrame's time of the last render (performance.now())
	perf      js.Value      // window.performance
	paceMs    int           // the pace of messages in flight the page was last given (panel.StreamFrameMs under a stream, else 0)
	stream    bool          // a stream of events is arriving (observeStream)
	window    streamAt      // where the window observeStream counts in opened
	hist      historyDOM    // the lab's history on the server (history.go)

	// The network controls' list of cuts as last drawn (renderCuts).
	cuts      []events.Fault
	cutsShown bool
}

// stageDOM is the stage as last rendered: its shape (the brokers), each
// node's view and the message speed.
type stageDOM struct {
	on       bool
	menus    bool     // nodes and links open fault menus (not on a lesson's stage)
	play     playback // a lesson step played back on the stage
	shape    string
	nodes    map[int32]panel.NodeView
	flown    uint64 // the newest event drawn in flight
	inFlight int    // messages on the stage now
	// clockShown, paused and rate are what the clock's controls show.
	clockShown, paused bool
	rate               float64
	status, next       string        // the producer's status shown, and to show at its next turn
	statusAt           float64       // when status last changed (ms)
	statusSeq          uint64        // the live Seq then
	links              string        // panel.StageLinksKey of the links drawn
	clients            panel.Clients // the external Kafka clients seen
	scale              float64       // px per unit of the topology's SVG (0 not known yet)
}

// maxFlights is the most messages one frame puts in flight.
const maxFlights = 24

// maxInFlight is the most messages on the stage at once.
const maxInFlight = 48

// flightMs is how long a message takes to cross a link at 1×.
const flightMs = 1600

// figDOM is a figure of #lanes as last rendered: its elements and the parts
// they show, so a frame writes only the parts that changed. Replacing the
// whole SVG every frame made Chromium re-parse, restyle and lay out every
// record's text, which cost more than the frame.
type figDOM struct {
	el, caption, meta, arrows, list js.Value
	svg, canvas                     int // handles (domBatch) of the SVG and the canvas of its cells
	part                            panel.Figure
	lanes                           []laneDOM
	drawn                           []byte // the canvas's last drawing (nil: to draw)
	// vis0 and vis1 are the x range of the SVG the figure shows (it
	// scrolls sideways), read when a scroll or a resize may have moved it
	// (measureLanes); 0 and 1<<40 (all of it) when the figure has no width.
	vis0, vis1 int64
	listed     string // the accessible list's markup
}

// timelineShown is what the timeline and #panel's data-* show.
type timelineShown struct {
	set          bool // anything was shown yet
	pos, end     int
	text         string
	following    bool
	seq, viewSeq uint64
}

// laneDOM is a lane of a figure as last rendered: the handles (domBatch)
// of its elements and the parts they show.
type laneDOM struct {
	el, title, id, nums, slots, marks int
	hw, leo                           int // the markers in marks (0 when not shown)
	part                              panel.Lane
	slotXs                            []int64 // the empty slots' x
}

func main() {
	doc := js.Global().Get("document")
	root := doc.Call("getElementById", "panel")
	if root.IsNull() {
		return
	}
	a := &app{doc: doc, root: root, state: panel.NewState(), backoffMs: 1000, cat: panel.Catalog{}, partition: -1, inbox: js.Undefined(), scratch: js.Undefined(), perf: js.Global().Get("performance")}
	if t := root.Get("dataset").Get("topic"); t.Type() == js.TypeString {
		a.topic = t.String()
		if p, ok := panel.Atoi(root.Get("dataset").Get("partition").String()); ok {
			a.partition = int32(p)
		}
	}
	if el := doc.Call("getElementById", "panel-events"); !el.IsNull() {
		a.evTail = el.Get("innerHTML").String()
	}
	if el := doc.Call("getElementById", "tm-i18n"); !el.IsNull() {
		if m, err := events.DecodeStrings(el.Get("textContent").String()); err == nil {
			a.cat = m
		}
	}
	if mm := js.Global().Get("matchMedia"); mm.Type() == js.TypeFunction {
		a.reduce = js.Global().Call("matchMedia", "(prefers-reduced-motion: reduce)")
	}
	js.Global().Set("tidemarkRenders", a.fn(func(js.Value, []js.Value) any {
		out := js.Global().Get("Array").New(len(a.renderLog))
		for i, v := range a.renderLog {
			out.SetIndex(i, v)
		}
		a.renderLog = a.renderLog[:0]
		return out
	}))
	a.setupPause()
	a.setupStage()
	a.setupTimeline()
	a.setupForms()
	// A figure coming into view, or a new devicePixelRatio, needs its
	// canvas drawn again (static/panel.js calls this).
	redraw := func() {
		a.measured = false
		a.schedule()
	}
	js.Global().Set("tidemarkRedraw", a.fn(func(js.Value, []js.Value) any {
		redraw()
		return nil
	}))
	// A canvas draws only the cells in view (and a cell either side): a
	// scroll or a resize draws the others.
	if lanes := a.el("lanes"); !lanes.IsNull() {
		lanes.Call("addEventListener", "scroll", a.fn(func(js.Value, []js.Value) any {
			redraw()
			return nil
		}), js.ValueOf(map[string]any{"capture": true, "passive": true}))
		a.observeSize(lanes, func(float64) { redraw() })
	}
	// A hidden page gets no frames: handle what is queued, and each
	// message as it comes until the page shows again.
	a.on(doc, "visibilitychange", func(js.Value) {
		if doc.Get("hidden").Bool() && a.listen != nil {
			a.drain()
			a.listen()
		}
	})
	a.connect()
	select {}
}

// observeSize calls f with el's content width whenever its size changes
// (and once when it is first laid out), from a ResizeObserver: Chromium
// reports it after its own layout, so reading it costs no extra one.
// Nothing happens without ResizeObserver or el.
func (a *app) observeSize(el js.Value, f func(width float64)) {
	ro := js.Global().Get("ResizeObserver")
	if el.IsNull() || ro.Type() != js.TypeFunction {
		return
	}
	ro.New(a.fn(func(_ js.Value, args []js.Value) any {
		entries := args[0]
		if n := entries.Length(); n > 0 {
			f(entries.Index(n - 1).Get("contentRect").Get("width").Float())
		}
		return nil
	})).Call("observe", el)
}

// after calls f in ms milliseconds, from the page's event loop (the time
// package's timers would bring its scheduler code into the panel).
func (a *app) after(ms float64, f func()) {
	var cb js.Func
	cb = js.FuncOf(func(js.Value, []js.Value) any {
		cb.Release()
		f()
		return nil
	})
	js.Global().Call("setTimeout", cb, ms)
}

func (a *app) el(id string) js.Value { return a.doc.Call("getElementById", id) }

func (a *app) fn(f func(this js.Value, args []js.Value) any) js.Func {
	jf := js.FuncOf(f)
	a.funcs = append(a.funcs, jf)
	return jf
}

func (a *app) on(el js.Value, event string, f func(ev js.Value)) {
	if el.IsNull() || el.IsUndefined() {
		return
	}
	el.Call("addEventListener", event, a.fn(func(_ js.Value, args []js.Value) any {
		f(args[0])
		return nil
	}))
}

func (a *app) reducedMotion() bool {
	return a.reduce.Truthy() && a.reduce.Get("matches").Bool()
}

// setupPause shows the pause button: a native <button>, so keyboard operable.
func (a *app) setupPause() {
	btn := a.el("panel-pause")
	if btn.IsNull() {
		return
	}
	btn.Set("hidden", false)
	btn.Set("textContent", a.cat.T("panel.pause"))
	a.on(btn, "click", func(js.Value) {
		a.paused = !a.paused
		pressed, label := "false", a.cat.T("panel.pause")
		if a.paused {
			pressed, label = "true", a.cat.T("panel.resume")
		}
		btn.Call("setAttribute", "aria-pressed", pressed)
		btn.Set("textContent", label)
		a.schedule()
	})
}

// setupTimeline builds the timeline's controls: native buttons and a range
// input, so arrows, Home/End, Enter and Space all work from the keyboard.
func (a *app) setupTimeline() {
	tl := a.el("timeline")
	if tl.IsNull() {
		return
	}
	esc := func(k string) string { return htmlEscape(a.cat.T(k)) }
	tl.Set("innerHTML", `<h3 id="tl-h">`+esc("panel.timeline")+`</h3><div class="tl-controls">`+
		`<button type="button" id="tl-back">`+esc("panel.tl.back")+`</button>`+
		`<input type="range" id="tl-range" min="0" max="0" value="0" step="1" aria-label="`+esc("panel.tl.slider")+`">`+
		`<button type="button" id="tl-fwd">`+esc("panel.tl.fwd")+`</button>`+
		`<button type="button" id="tl-live" aria-pressed="true">`+esc("panel.tl.live")+`</button></div>`+
		`<p id="tl-status" class="tl-status" aria-live="polite"></p>`)
	tl.Set("hidden", false)
	a.tlRange, a.tlStatus, a.tlLive = a.el("tl-range"), a.el("tl-status"), a.el("tl-live")
	a.on(a.el("tl-back"), "click", func(js.Value) { a.state.Back(); a.schedule() })
	a.on(a.el("tl-fwd"), "click", func(js.Value) { a.state.Forward(); a.schedule() })
	a.on(a.el("tl-live"), "click", func(js.Value) { a.state.GoLive(); a.schedule() })
	a.on(a.el("tl-range"), "input", func(ev js.Value) {
		a.tlShown.pos = -1 // the slider moved: set its value again
		pos, _ := panel.Atoi(ev.Get("target").Get("value").String())
		a.state.Seek(pos)
		a.schedule()
	})
}

// setupForms sends the page's control forms (action /ui/action) with fetch
// and says the outcome where the control is: a stage control's in the
// stage's own line (#stage-flash, over the topology), another's in #flash;
// the menu the form was in closes, so it no longer covers the picture.
// The page, its panel and the timeline stay; without the panel the same
// forms post and reload.
func (a *app) setupForms() {
	a.on(a.doc, "submit", func(ev js.Value) {
		form := ev.Get("target")
		if form.Get("tagName").String() != "FORM" || form.Call("getAttribute", "action").String() != "/ui/action" {
			return
		}
		ev.Call("preventDefault")
		if d := form.Call("closest", "details"); !d.IsNull() {
			d.Call("removeAttribute", "open")
		}
		where := "flash"
		if !form.Call("closest", "#panel").IsNull() && !a.el("stage-flash").IsNull() {
			where = "stage-flash"
		}
		a.send(js.Global().Get("URLSearchParams").New(js.Global().Get("FormData").New(form)), where)
	})
}

// send posts a control (URLSearchParams) to /ui/action and shows the
// outcome in the element with id where. static/panel.js's tidemarkSend
// makes the request: the promise chain written in Go cost the panel's size
// budget 1 KiB.
func (a *app) send(body js.Value, where string) {
	a.showFlash(where, "flash pending", "… ", a.cat.T("panel.sending")) // not a success yet
	var done js.Func
	done = js.FuncOf(func(_ js.Value, args []js.Value) any {
		done.Release()
		a.flash(where, args[0].Bool(), args[1].String())
		return nil
	})
	js.Global().Call("tidemarkSend", body, done)
}

func (a *app) flash(where string, ok bool, text string) {
	if ok {
		a.showFlash(where, "flash ok", "✓ ", text)
	} else {
		a.showFlash(where, "flash bad", "✕ ", text)
	}
}

// showFlash shows text in the element with id where, with a class and a
// mark that says what it is (success, failure, or a request still on its
// way).
func (a *app) showFlash(where, cls, mark, text string) {
	f := a.el(where)
	if f.IsNull() {
		return
	}
	f.Set("hidden", false)
	f.Set("innerHTML", `<span class="`+cls+`"><span aria-hidden="true">`+mark+`</span>`+htmlEscape(text)+`</span>`)
}

func (a *app) setStatus(status, text string) {
	a.root.Get("dataset").Set("status", status)
	if st := a.el("panel-status"); !st.IsNull() {
		st.Set("textContent", text)
	}
}

func (a *app) connect() {
	loc := js.Global().Get("location")
	scheme := "ws:"
	if loc.Get("protocol").String() == "https:" {
		scheme = "wss:"
	}
	a.setStatus("connecting", a.cat.T("panel.connecting"))
	path := "/ws"
	if p := a.root.Get("dataset").Get("ws"); p.Type() == js.TypeString && strings.HasPrefix(p.String(), "/") {
		path = p.String() // e.g. a lesson run's stream: /ws?run=…
	}
	ws := js.Global().Get("WebSocket").New(scheme + "//" + loc.Get("host").String() + path)
	// Messages queue up in a JS array (the listener is the array's own
	// push, so no Go runs per message) and are handled once per frame:
	// calling into Go for each of hundreds of messages a second cost the
	// page more than decoding them. Go is woken by the first message after
	// a frame only; while the page is hidden (no frames) each message is
	// handled as it comes, so the queue stays short.
	inbox := js.Global().Get("Array").New()
	a.inbox = inbox
	ws.Call("addEventListener", "message", inbox.Get("push").Call("bind", inbox))
	var onWake, onClose js.Func
	a.listen = func() { ws.Call("addEventListener", "message", onWake) }
	onWake = js.FuncOf(func(js.Value, []js.Value) any {
		if a.doc.Get("hidden").Bool() {
			a.drain()
			return nil
		}
		ws.Call("removeEventListener", "message", onWake)
		a.schedule()
		return nil
	})
	a.listen()
	onClose = js.FuncOf(func(js.Value, []js.Value) any {
		a.drain()
		a.inbox, a.listen = js.Undefined(), nil
		onWake.Release()
		onClose.Release()
		a.state.Disconnected()
		a.setStatus("connecting", a.cat.T("panel.reconnect", strconv.Itoa(a.backoffMs/1000)+"s"))
		wait := a.backoffMs
		a.backoffMs = min(2*a.backoffMs, 30_000)
		a.after(float64(wait), a.connect)
		return nil
	})
	ws.Call("addEventListener", "close", onClose)
}

// drain handles the queued messages, in order.
func (a *app) drain() {
	if a.inbox.IsUndefined() {
		return
	}
	n := a.inbox.Length()
	if n == 0 {
		return
	}
	t0 := a.now()
	snaps := a.state.Snapshots
	for i := range n {
		a.handle(a.inbox.Index(i).Get("data").String())
	}
	a.drained += n
	if a.state.Snapshots != snaps {
		a.parts |= partSnapshot
	}
	a.inbox.Set("length", 0)
	a.handleMs += a.now() - t0
}

// handle decodes and applies one message.
func (a *app) handle(data string) {
	m, err := events.DecodeMessage(data)
	if err != nil {
		js.Global().Get("console").Call("warn", "tidemark panel: bad message: "+err.Error())
		return
	}
	if a.state.Handle(m) {
		if m.Type == events.MessageSnapshot {
			a.backoffMs = 1000
			// A recorded run's stream is a playback, not the lab live.
			label := "panel.live"
			if a.root.Call("hasAttribute", "data-recorded").Bool() {
				label = "panel.recorded"
			}
			a.setStatus("live", a.cat.T(label))
			// The server-rendered tables would go stale: the panel shows
			// the same facts live.
			statics := a.doc.Call("querySelectorAll", ".static-view")
			for i := range statics.Length() {
				statics.Index(i).Set("hidden", true)
			}
			a.rendered, a.listed = a.state.Snap.Seq, a.state.Snap.Seq
		}
		a.maybePlay()
		a.schedule()
	}
}

// schedule renders on the next animation frame, once however many messages
// arrive before it. The frame first handles the queued messages, then
// listens for the next one.
func (a *app) schedule() {
	if a.scheduled {
		return
	}
	a.scheduled = true
	var frame js.Func
	frame = js.FuncOf(func(_ js.Value, args []js.Value) any {
		a.frameAt = args[0].Float()
		frame.Release()
		a.drain()
		a.scheduled = false
		a.render()
		if a.listen != nil {
			a.listen()
		}
		return nil
	})
	// Under a stream of events, while the lanes follow it, frames keep to
	// panel.StreamFrameMs.
	if wait := panel.PaceWait(a.paced(), a.perf.Call("now").Float(), a.frameAt); wait > 0 {
		a.after(wait, func() { js.Global().Call("requestAnimationFrame", frame) })
		return
	}
	js.Global().Call("requestAnimationFrame", frame)
}

// newEvents returns the recorded events after seq (for animation).
func (a *app) newEvents(seq uint64) []events.Event {
	h := a.state.Hist
	i := len(h)
	for i > 0 && h[i-1].Seq > seq {
		i--
	}
	return h[i:]
}

// now is the page's clock in milliseconds since the Unix epoch.
func (a *app) now() float64 {
	return a.perf.Get("timeOrigin").Float() + a.perf.Call("now").Float()
}

func (a *app) render() {
	t0 := a.now()
	s := a.state
	view := s.View()
	a.measureLanes()
	a.observeStream(t0)
	if a.paced() {
		a.parts |= partStream
	}
	if pace := a.flightPace(); pace != a.paceMs {
		a.paceMs = pace
		a.dom.pace(pace, panel.FrameSlackMs)
	}
	var motion panel.Motion
	if s.Following && !a.reducedMotion() {
		// Under a stream of events motion would only flicker: animate what
		// a learner can follow.
		if evs := a.newEvents(a.rendered); len(evs) <= maxAnimated {
			motion = panel.MotionOf(evs)
		}
	}
	a.setHTML("panel-brokers", panel.RenderBrokers(view, a.cat))
	a.renderStage(view)
	a.renderCuts()
	tl0 := a.now()
	a.renderLanes(a.lanes.Figures(view, motion, a.cat, a.topic, a.partition), t0)
	a.flushLanes() // the messages in flight, on a page without lanes
	lanesMs := a.now() - tl0
	var cursor uint64
	if !s.Following {
		cursor = view.Seq
	}
	// The list is for reading: under a stream of events it is redrawn at
	// most every readEveryMs, which leaves the frame to the lanes.
	if !a.paused || !s.Following {
		if wait := readEveryMs - (t0 - a.listAt); (wait <= 0 || !s.Following) && a.turn(s.Following) {
			// Like the lanes, highlight what a learner can follow: under
			// a stream every item would flash, and keep the page busy.
			newSince := a.listed
			if len(a.newEvents(a.listed)) > maxAnimated {
				newSince = s.Snap.Seq
			}
			if len(s.Recent) == panel.MaxRecent {
				a.evTail = ""
			}
			a.setHTML("panel-events", s.RenderEvents(newSince, cursor, a.cat)+a.evTail)
			a.parts |= partList
			a.listed, a.listAt = s.Snap.Seq, t0
		} else if a.listed != s.Snap.Seq && wait > 0 {
			a.renderIn(wait)
		}
	}
	a.rendered = s.Snap.Seq
	// The timeline and #panel's data: only what changed is written.
	pos, end := s.Position()
	tl := timelineShown{pos: pos, end: end, text: s.TimelineText(a.cat), following: s.Following, seq: s.Snap.Seq, viewSeq: view.Seq}
	old := a.tlShown
	// Under a stream of events the status line and the slider change at
	// most every readEveryMs too: the page repainted them (and what
	// shares their layer) in every frame, for a number no one can read.
	changed := tl.pos != old.pos || tl.end != old.end || tl.text != old.text
	if changed && s.Following && old.following && a.stream {
		if wait := readEveryMs - (t0 - a.tlAt); wait > 0 || !a.turn(true) {
			tl.pos, tl.end, tl.text = old.pos, old.end, old.text
			changed = false
			if wait > 0 {
				a.renderIn(wait)
			}
		}
	}
	if changed {
		a.tlAt = t0
		a.parts |= partTimeline
	}
	a.tlShown = tl
	if r := a.tlRange; r.Truthy() {
		if tl.end != old.end {
			r.Set("max", tl.end)
		}
		if tl.pos != old.pos || tl.end != old.end {
			r.Set("value", tl.pos)
		}
	}
	if st := a.tlStatus; st.Truthy() && tl.text != old.text {
		st.Set("textContent", tl.text)
	}
	ds := a.root.Get("dataset")
	if tl.following != old.following || !old.set {
		if b := a.tlLive; b.Truthy() {
			b.Call("setAttribute", "aria-pressed", strconv.FormatBool(tl.following))
		}
		mode := "past"
		if tl.following {
			mode = "live"
		}
		ds.Set("mode", mode)
	}
	a.tlShown.set = true
	if tl.seq != old.seq || !old.set {
		ds.Set("seq", tl.seq)
	}
	if tl.viewSeq != old.viewSeq || !old.set {
		ds.Set("viewSeq", tl.viewSeq)
	}
	if len(a.renderLog) < maxRenderLog {
		t1 := a.now()
		a.renderLog = append(a.renderLog, []any{float64(s.Snap.Seq), t1, t1 - t0, a.handleMs, lanesMs, float64(a.parts), float64(a.drained)})
	}
	a.handleMs, a.parts, a.drained = 0, 0, 0
	a.syncHistory()
}

// frameParts are the parts of the panel that do not run in every frame,
// as bits: the render log says which ran in each frame, so a long frame
// can be told apart.
type frameParts int

const (
	partList      frameParts = 1 << iota // the event list
	partLaneLists                        // the lanes' accessible lists
	partTimeline                         // the timeline's status line or slider
	partProducer                         // the producer's status
	partCharts                           // the charts (drawn by the server since; never set, the log's bits keep their places)
	partReshape                          // the lane figures built anew
	partSnapshot                         // a snapshot arrived (while decoding)
	partMeasure                          // the lane figures were measured and their canvases drawn whole
	partStream                           // rendered under a stream of events, so paced at panel.StreamFrameMs
)

// readEveryMs is how often, at most, the parts of the panel made for
// reading (the event list, the timeline's status line) change under a
// stream of events.
const readEveryMs = 250

// readParts are the parts made for reading that change at most every
// readEveryMs under a stream of events.
const readParts = partList | partLaneLists | partTimeline | partProducer | partCharts

// turn reports whether a part made for reading whose time has come may
// change in this frame. Under a stream of events (stream) only one does a
// frame, the others in the frames after (a render is asked for): when
// several landed in one frame, with the layout of what they rewrote, that
// frame was several times as long as the others.
func (a *app) turn(stream bool) bool {
	if !stream || !a.stream || a.parts&readParts == 0 {
		return true
	}
	a.schedule()
	return false
}

// streamAt is the live Seq at a render and when it was (ms).
type streamAt struct {
	at  float64
	seq uint64
}

// observeStream sets a.stream at a render (t0): whether more than
// maxAnimated events came in the window of readEveryMs now open or in the
// last one. Counted over that time, not since the last render: at 1,000
// records/s most frames bring fewer than maxAnimated.
func (a *app) observeStream(t0 float64) {
	n := len(a.newEvents(a.window.seq))
	if t0-a.window.at >= readEveryMs {
		// The window closes: it says whether the stream goes on until
		// the next one closes, or more than maxAnimated come in that.
		a.stream = n > maxAnimated
		a.window = streamAt{t0, a.state.Snap.Seq}
	} else if n > maxAnimated {
		a.stream = true
	}
}

// paced reports whether the panel's frames keep to panel.StreamFrameMs:
// under a stream of events, while the lanes follow it.
func (a *app) paced() bool { return a.stream && a.state.Following }

// flightPace is how often the page draws the messages in flight (0: in
// every frame): when paced, in the panel's frames only, as their own
// frames would cost as much as the panel's.
func (a *app) flightPace() int {
	if a.paced() {
		return panel.StreamFrameMs
	}
	return 0
}

// renderIn renders again in ms milliseconds (once, however often asked
// before then), for a part whose turn comes then.
func (a *app) renderIn(ms float64) {
	if a.renderDue {
		return
	}
	a.renderDue = true
	a.after(ms, func() {
		a.renderDue = false
		a.schedule()
	})
}

// renderLanes shows figs in #lanes. While the figures keep their shape it
// updates the changed attributes and parts in place; the cells are drawn
// on each figure's canvas (panel.Painter), only for figures in view and
// only when the drawing changed. Each figure's accessible list of records
// follows at most every readEveryMs under a stream of events (rewriting
// its hundreds of items in every frame would cost more than drawing them),
// at once otherwise.
func (a *app) renderLanes(figs []panel.Figure, t0 float64) {
	root := a.el("lanes")
	if root.IsNull() {
		return
	}
	var shape strings.Builder
	for i := range figs {
		shape.WriteString(figs[i].Key + "\x01" + figs[i].Shape + "\x02")
	}
	if shape.String() != a.laneShape {
		for i := range a.figs {
			for j := range a.figs[i].lanes {
				a.forgetLane(&a.figs[i].lanes[j])
			}
			a.dom.forget(a.figs[i].svg)
			a.dom.forget(a.figs[i].canvas)
		}
		var b strings.Builder
		for i := range figs {
			b.WriteString(figs[i].HTML())
		}
		root.Set("innerHTML", b.String())
		a.parts |= partReshape
		a.laneShape = shape.String()
		a.bindLanes(root, figs)
		a.dom.Palette()
		a.measured = false
		a.listsAt, a.listsSeq = t0, a.state.Snap.Seq
	} else {
		for i := range figs {
			f, d := &figs[i], &a.figs[i]
			setAttrs(d.el, d.part.Attrs, f.Attrs)
			if f.Caption != d.part.Caption {
				d.caption.Set("innerHTML", f.Caption+`<span class="meta">`+htmlEscape(f.Meta)+`</span>`)
				d.meta = d.caption.Get("lastElementChild")
			} else if f.Meta != d.part.Meta {
				d.meta.Set("textContent", f.Meta)
			}
			if f.Arrows != d.part.Arrows {
				a.parseInto(d.arrows, true, f.Arrows, nil)
			}
			for j := range f.Lanes {
				a.updateLane(&d.lanes[j], &f.Lanes[j])
			}
			d.part = *f
			d.part.Lanes = nil
		}
		if a.state.Snap.Seq != a.listsSeq || !a.state.Following {
			stream := a.stream || len(a.newEvents(a.listsSeq)) > maxAnimated
			if wait := readEveryMs - (t0 - a.listsAt); wait <= 0 && a.turn(a.state.Following) || !stream {
				for i := range figs {
					if l := figs[i].ListHTML(); l != a.figs[i].listed {
						a.figs[i].list.Set("innerHTML", l)
						a.figs[i].listed = l
						a.parts |= partLaneLists
					}
				}
				a.listsAt, a.listsSeq = t0, a.state.Snap.Seq
			} else if wait > 0 {
				a.renderIn(wait)
			}
		}
	}
	for i := range figs {
		d := &a.figs[i]
		if d.el.Get("dataset").Get("offscreen").Type() == js.TypeString {
			d.drawn = nil // drawn when it comes into view (tidemarkRedraw)
			continue
		}
		at := len(a.dom.Buf)
		a.dom.Paint(d.canvas, &figs[i], d.vis0-laneMargin, d.vis1+laneMargin)
		if drawn := a.dom.Buf[at:]; string(drawn) != string(d.drawn) {
			d.drawn = append(d.drawn[:0], drawn...)
		} else {
			a.dom.Buf = a.dom.Buf[:at]
		}
	}
	a.flushLanes()
	a.flushParses()
}

// laneMargin is how far (SVG units, a cell) beyond the part of a figure on
// screen its canvas is drawn, so a short scroll finds cells there.
const laneMargin = 40

// measureLanes reads which part of each figure is on screen, when a
// scroll, a resize or new figures may have changed it, and has their
// canvases drawn again. It runs first in a frame, before the frame's
// writes: reading the scroll position in every frame made Chromium lay
// out the page twice a frame.
func (a *app) measureLanes() {
	if a.measured {
		return
	}
	a.measured = true
	a.parts |= partMeasure
	for i := range a.figs {
		d := &a.figs[i]
		d.vis0, d.vis1, d.drawn = 0, 1<<40, nil
		if w := d.el.Get("clientWidth").Int(); w > 0 {
			d.vis0 = int64(d.el.Get("scrollLeft").Int())
			d.vis1 = d.vis0 + int64(w)
		}
	}
}

// flushLanes sends the frame's writes to the lanes. Should one fail (a
// bug), the next frame draws the lanes afresh, with new elements: a page
// that stayed wrong, or a panel stopped by the error, would be worse.
func (a *app) flushLanes() {
	if a.dom.flush() {
		return
	}
	a.laneShape, a.figs = "", nil // nothing to forget: a new batch numbers afresh
	a.dom = domBatch{}
	a.schedule()
}

// parseJob is markup to parse into an element of the lanes.
type parseJob struct {
	into    js.Value
	replace bool // replace the element's children (else append to them)
	markup  string
	bind    func(els js.Value) // if set, is given the parsed elements (an HTMLCollection)
}

// parseInto queues markup to parse into el at the end of the frame.
func (a *app) parseInto(el js.Value, replace bool, markup string, bind func(js.Value)) {
	a.parses = append(a.parses, parseJob{el, replace, markup, bind})
}

// flushParses parses the queued markup in one go, in a detached SVG group,
// and moves each part where it goes: starting the HTML parser costs more
// than most of the parts it parses.
func (a *app) flushParses() {
	if len(a.parses) == 0 {
		return
	}
	if a.scratch.IsUndefined() {
		a.scratch = a.doc.Call("createElementNS", "http://www.w3.org/2000/svg", "g")
		proto := js.Global().Get("Element").Get("prototype")
		a.appendFn, a.replaceFn = proto.Get("append"), proto.Get("replaceChildren")
	}
	var b strings.Builder
	for _, j := range a.parses {
		b.WriteString("<g>" + j.markup + "</g>")
	}
	a.scratch.Set("innerHTML", b.String())
	groups := a.scratch.Get("children")
	for k, j := range a.parses {
		els := groups.Index(k).Get("children")
		if j.bind != nil {
			j.bind(els)
		}
		fn := a.appendFn
		if j.replace {
			fn = a.replaceFn
		}
		fn.Call("apply", j.into, els)
	}
	clear(a.parses)
	a.parses = a.parses[:0]
}

// bindLanes finds the elements of the figures #lanes was just set to.
func (a *app) bindLanes(root js.Value, figs []panel.Figure) {
	a.figs = make([]figDOM, len(figs))
	fe := root.Get("children")
	for i := range figs {
		f := &figs[i]
		// A figure is figcaption, div.lane-list, canvas, the SVG and its
		// legend if it has one (panel.Figure.HTML).
		el := fe.Index(i)
		list := el.Get("children").Index(1)
		svg := list.Get("nextElementSibling").Get("nextElementSibling")
		// Not measured yet (measureLanes, next frame): drawn whole.
		d := figDOM{el: el, caption: el.Get("firstElementChild"), arrows: svg.Get("lastElementChild"), list: list, part: *f,
			listed: list.Get("innerHTML").String(), vis1: 1 << 40}
		d.meta = d.caption.Get("lastElementChild")
		d.part.Lanes = nil
		d.svg = a.dom.adopt(svg)
		d.canvas = a.dom.adopt(list.Get("nextElementSibling"))
		for j := range f.Lanes {
			l := &f.Lanes[j]
			// A lane is g.lane-head (title, g.lane-id, text.lane-nums,
			// g.slots) and g.marks (see panel.Lane.HTML).
			ld := laneDOM{el: a.dom.child(d.svg, j), part: *l}
			head := a.dom.child(ld.el, 0)
			ld.title, ld.id, ld.nums, ld.slots = a.dom.child(head, 0), a.dom.child(head, 1), a.dom.child(head, 2), a.dom.child(head, 3)
			ld.marks = a.dom.child(ld.el, 1)
			a.dom.forget(head)
			ld.part.Cells, ld.part.Slots = nil, nil
			a.bindMarks(&ld)
			ld.slotXs = append(ld.slotXs, l.Slots...)
			d.lanes = append(d.lanes, ld)
		}
		a.figs[i] = d
	}
}

// bindMarks finds the markers d.marks was just set to.
func (a *app) bindMarks(d *laneDOM) {
	a.dom.forget(d.hw)
	a.dom.forget(d.leo)
	d.hw, d.leo = 0, 0
	i := 0
	if d.part.HWX >= 0 {
		d.hw = a.dom.child(d.marks, i)
		i++
	}
	if d.part.LEOX >= 0 {
		d.leo = a.dom.child(d.marks, i)
	}
}

// updateLane brings d up to l (its cells are on the canvas).
func (a *app) updateLane(d *laneDOM, l *panel.Lane) {
	old := d.part
	for i, at := range l.Attrs {
		if i >= len(old.Attrs) || old.Attrs[i] != at {
			a.dom.setAttr(d.el, at.Name, at.Value)
		}
	}
	if l.Title != old.Title {
		a.dom.setText(d.title, l.Title)
	}
	if l.Head != old.Head {
		a.dom.setHTML(d.id, l.Head)
	}
	if l.Nums != old.Nums {
		a.dom.setText(d.nums, l.Nums)
	}
	a.updateSlots(d, l.Slots)
	d.part = *l
	d.part.Cells, d.part.Slots = nil, nil
	// Markers: moved by their transform while the same ones are shown.
	if (l.HWX >= 0) != (old.HWX >= 0) || (l.LEOX >= 0) != (old.LEOX >= 0) || !panel.SameSegs(l.Segs, old.Segs) || l.Extra != old.Extra {
		a.dom.setHTML(d.marks, l.Marks())
		a.bindMarks(d)
	} else {
		if l.HWX >= 0 && l.HWX != old.HWX {
			a.dom.setAttr(d.hw, "transform", panel.MarkAt(l.HWX))
		}
		if l.HWX >= 0 && l.HWMoved != old.HWMoved {
			a.dom.setAttr(d.hw, "class", l.HWClass())
		}
		if l.LEOX >= 0 && l.LEOX != old.LEOX {
			a.dom.setAttr(d.leo, "transform", panel.MarkAt(l.LEOX))
		}
	}
}

// updateSlots shows the lane's empty slots at xs, if they moved.
func (a *app) updateSlots(d *laneDOM, xs []int64) {
	same := len(xs) == len(d.slotXs)
	for i := 0; same && i < len(xs); i++ {
		same = xs[i] == d.slotXs[i]
	}
	if same {
		return
	}
	var b strings.Builder
	for _, x := range xs {
		b.WriteString(panel.SlotAt(x))
	}
	a.dom.setHTML(d.slots, b.String())
	d.slotXs = append(d.slotXs[:0], xs...)
}

// forgetLane lets go of the handles of a lane (its figure is being
// replaced).
func (a *app) forgetLane(d *laneDOM) {
	for _, h := range [...]int{d.el, d.title, d.id, d.nums, d.slots, d.marks, d.hw, d.leo} {
		a.dom.forget(h)
	}
}

// setAttrs sets the attributes of el that differ from old (same names, in
// the same order: the shape of the element is unchanged).
func setAttrs(el js.Value, old, attrs []panel.Attr) {
	for i, at := range attrs {
		if i >= len(old) || old[i] != at {
			el.Call("setAttribute", at.Name, at.Value)
		}
	}
}

// renderCuts redraws the network controls' list of cut links
// (#network-cuts) from the live snapshot when its cuts changed: the
// controls act on the lab as it is now, as the stage's clock does, and the
// list the server drew with the page would otherwise stay as it was when
// the page loaded (a cut made or healed since through the panel's forms
// never showed).
func (a *app) renderCuts() {
	live := &a.state.Snap
	if a.cutsShown && slices.Equal(a.cuts, live.Cuts) {
		return
	}
	a.setHTML("network-cuts", panel.NetworkCutsHTML(live, a.cat))
	a.cuts, a.cutsShown = slices.Clone(live.Cuts), true
}

// setHTML replaces the content of element id unless it is already html.
func (a *app) setHTML(id, html string) {
	if a.shown[id] == html {
		return
	}
	if el := a.el(id); !el.IsNull() {
		el.Set("innerHTML", html)
		if a.shown == nil {
			a.shown = map[string]string{}
		}
		a.shown[id] = html
	}
}

func htmlEscape(s string) string { return panel.Esc(s) }
