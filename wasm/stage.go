//go:build js && wasm

package main

import (
	"math"
	"strconv"
	"strings"

	"syscall/js"

	"tidemark/events"
	"tidemark/wasm/panel"
)

// setupStage shows the stage's JavaScript-only control: one fetch round
// of every running broker. Its other time controls are forms.
func (a *app) setupStage() {
	if a.el("topo").IsNull() {
		return
	}
	// A lesson's stage opens no menus: the lesson drives its cluster.
	menus := a.root.Call("getAttribute", "data-menus")
	a.stage = stageDOM{on: true, nodes: map[int32]panel.NodeView{}, menus: menus.Type() != js.TypeString || menus.String() != "false"}
	a.setupPlay()
	// The topology's scale (its SVG's viewBox is topoWidth wide), for the
	// messages in flight, which are drawn outside that SVG: kept from the
	// resize observer, so no frame asks for a layout to read it.
	a.observeSize(a.el("topo"), func(width float64) { a.stage.scale = width / topoWidth })
	if btn := a.el("stage-fetch"); !btn.IsNull() {
		btn.Set("hidden", false)
		a.on(btn, "click", func(js.Value) {
			for _, b := range a.state.Snap.Brokers {
				if b.State == events.BrokerUp {
					body := js.Global().Get("URLSearchParams").New()
					body.Call("set", "action", "fetch")
					body.Call("set", "broker", strconv.Itoa(int(b.ID)))
					a.send(body, "stage-flash")
				}
			}
		})
	}
}

// playback is a lesson step played on the stage once the page has it:
// the stream opens on the lanes before the step and brings the step's
// events (server/web's stepReplayer); the timeline then steps through them
// one by one at the lesson's pace, each message flying along its link,
// and ends live, where the card's answer describes it.
type playback struct {
	to      uint64  // the Seq the page's step reached (#panel's data-play-to); 0: none to play
	totalMs float64 // how long a whole step plays (by the lesson's speed)
	started bool    // played once on its own
	at      int     // the position the playback last set (-1: not playing)
}

// playTotalMs is how long a step's playback lasts at each lesson speed
// ("instant" plays none); "run" is a recorded chaos run or comparison,
// thousands of events.
var playTotalMs = map[string]float64{"fast": 3000, "normal": 6000, "slow": 12000, "run": 30000}

// setupPlay reads the step to play from #panel and wires the stage's
// "watch again" button.
func (a *app) setupPlay() {
	a.stage.play.at = -1
	to, ok := panel.Atoi(a.root.Call("getAttribute", "data-play-to").String())
	total := playTotalMs[a.root.Call("getAttribute", "data-play-speed").String()]
	if !ok || to <= 0 || total == 0 {
		return
	}
	a.stage.play.to, a.stage.play.totalMs = uint64(to), total
	if btn := a.el("stage-play"); !btn.IsNull() {
		a.on(btn, "click", func(js.Value) { a.startPlay() })
	}
}

// maybePlay starts the step's playback once the stream has brought it.
func (a *app) maybePlay() {
	p := &a.stage.play
	if p.to == 0 || p.started || a.state.Snap.Seq < p.to || len(a.state.Hist) == 0 {
		return
	}
	p.started = true
	if btn := a.el("stage-play"); !btn.IsNull() {
		btn.Set("hidden", false)
	}
	a.startPlay()
}

// startPlay plays the timeline from its start to the live state: one event
// per tick, its message (if it is one) flown. Moving the timeline by hand
// stops it.
func (a *app) startPlay() {
	p := &a.stage.play
	n := len(a.state.Hist)
	if n == 0 {
		return
	}
	// A lesson step's few events at a readable pace; a recorded run's
	// thousands in its total time (several per frame).
	pace := min(max(p.totalMs/float64(n), 4), 600)
	a.state.Seek(0)
	p.at = 0
	a.schedule()
	var tick func()
	tick = func() {
		pos, end := a.state.Position()
		if p.at != pos || a.state.Following { // the learner took the timeline
			p.at = -1
			return
		}
		if pos < end {
			e := a.state.Hist[pos]
			a.state.Seek(pos + 1)
			if !a.reducedMotion() {
				a.fly(panel.Flights(a.state.View(), []events.Event{e}, a.cat, maxFlights))
			}
		}
		a.schedule()
		if a.state.Following {
			p.at = -1
			return
		}
		p.at = pos + 1
		a.after(pace, tick)
	}
	a.after(pace, tick)
}

// renderStage brings the topology up to v: nodes (rebuilt when the brokers
// change, else updated in place so an open menu stays open), links, the
// clock's button, the producer's status and the messages since the last
// render, put in flight.
func (a *app) renderStage(v *events.Snapshot) {
	st := &a.stage
	if !st.on {
		return
	}
	if shape := panel.StageShape(v); shape != st.shape {
		a.el("topo-nodes").Set("innerHTML", panel.StageNodesHTML(v, a.cat, a.path(), a.stage.menus))
		a.el("topo-linkctl").Set("innerHTML", panel.StageLinkMenusHTML(v, a.cat, a.path(), a.stage.menus))
		a.place()
		st.shape = shape
		clear(st.nodes)
		for _, nv := range panel.StageNodes(v, a.cat) {
			st.nodes[nv.ID] = nv
		}
	} else {
		for _, nv := range panel.StageNodes(v, a.cat) {
			if st.nodes[nv.ID] == nv {
				continue
			}
			st.nodes[nv.ID] = nv
			el := a.doc.Call("querySelector", `#topo-nodes [data-testid="node-`+strconv.Itoa(int(nv.ID))+`"]`)
			if el.IsNull() {
				continue
			}
			el.Call("setAttribute", "class", "node broker state-"+nv.State)
			el.Call("setAttribute", "data-state", nv.State)
			el.Call("querySelector", ".node-state").Set("textContent", nv.Text)
			el.Call("querySelector", ".node-role").Set("textContent", nv.Role)
		}
	}
	if key := panel.StageLinksKey(v); key != st.links { // not built in every frame
		a.setHTML("topo-links", panel.StageLinksSVG(v, a.cat))
		st.links = key
	}
	a.renderClock(&a.state.Snap) // the live clock, also while the timeline shows the past
	evs := a.newEvents(st.flown)
	st.clients.Observe(evs)
	if h := st.clients.HTML(a.cat); h != "" {
		a.setHTML("stage-clients", h)
	}
	if a.state.Following {
		a.renderProducer()
		a.fly(panel.Flights(v, evs, a.cat, maxFlights))
	}
	st.flown = a.state.Snap.Seq
}

// renderClock shows what the live clock does: its status line, the
// clock's form (pause a running clock, resume a paused one) and which rate
// button is pressed.
func (a *app) renderClock(live *events.Snapshot) {
	paused, rate := live.Paused, live.ClockRate()
	if a.stage.clockShown && a.stage.paused == paused && a.stage.rate == rate {
		return
	}
	a.stage.clockShown, a.stage.paused, a.stage.rate = true, paused, rate
	if st := a.el("stage-clock-state"); !st.IsNull() {
		st.Set("textContent", panel.ClockStateText(a.cat, paused, rate))
		st.Call("setAttribute", "data-paused", strconv.FormatBool(paused))
		st.Call("setAttribute", "data-rate", panel.RateValue(rate))
	}
	if st := a.el("clock-state"); !st.IsNull() { // the controls' badge, as the server draws it
		badge, word := `<span class="badge ok"><span aria-hidden="true">▶</span> `, "stage.clock.running"
		if paused {
			badge, word = `<span class="badge warn"><span aria-hidden="true">❚❚</span> `, "stage.clock.paused"
		}
		st.Set("innerHTML", badge+htmlEscape(a.cat.T(word))+`</span> `+htmlEscape(panel.RateLabel(a.cat, rate)))
	}
	if sel := a.el("clock-rate"); !sel.IsNull() {
		sel.Set("value", panel.RateValue(rate))
	}
	btns := a.doc.Call("querySelectorAll", "#stage-speeds button[data-rate]")
	for i := range btns.Length() {
		btn := btns.Index(i)
		btn.Call("setAttribute", "aria-pressed", strconv.FormatBool(btn.Get("dataset").Get("rate").String() == panel.RateValue(rate)))
	}
	want := "pause"
	if paused {
		want = "resume"
	}
	form := a.doc.Call("querySelector", `.stage-time form[data-action="pause"], .stage-time form[data-action="resume"]`)
	if form.IsNull() || form.Call("getAttribute", "data-action").String() == want {
		return
	}
	form.Call("setAttribute", "data-action", want)
	form.Call("querySelector", `input[name="action"]`).Set("value", want)
	btn := form.Call("querySelector", "button")
	btn.Set("id", "stage-"+want)
	btn.Set("textContent", a.cat.T("stage.clock."+want))
}

// renderProducer shows what the UI's producer last did: waiting for its
// answer, acknowledged, or failed. Under a stream of events it changes at
// most every readEveryMs, as the event list (in every frame it made the
// page repaint the topology's layer).
func (a *app) renderProducer() {
	evs := a.newEvents(a.stage.statusSeq)
	text := ""
	for i := len(evs) - 1; i >= 0 && text == ""; i-- { // the last one says it
		switch e := &evs[i]; {
		case e.Kind == events.KindProduceRequest && e.Wire != nil && e.Wire.Client == "tidemark-ui":
			text = a.cat.T("stage.producer.waiting", string(e.Acks))
		case e.Kind == events.KindAck && e.Acks == events.AcksNone:
			text = a.cat.T("stage.producer.sent0") // no answer: no offsets
		case e.Kind == events.KindAck && e.Offsets != nil:
			text = a.cat.T("stage.producer.acked", e.Offsets.Base, e.Offsets.Last)
		case e.Kind == events.KindProduceError:
			text = a.cat.T("stage.producer.error", e.Error)
		}
	}
	if text != "" {
		a.stage.next = text
	}
	if a.stage.next == a.stage.status {
		return
	}
	now := a.now()
	if a.stream {
		if wait := readEveryMs - (now - a.stage.statusAt); wait > 0 {
			a.renderIn(wait)
			return
		}
		if !a.turn(true) {
			return
		}
	}
	text = a.stage.next
	a.stage.status, a.stage.statusAt, a.stage.statusSeq = text, now, a.state.Snap.Seq
	a.parts |= partProducer
	if el := a.el("stage-producer"); !el.IsNull() {
		el.Set("textContent", text)
	}
}

// fly puts messages in flight: each crosses its link in flightMs divided
// by the lab clock's rate (4× as long at ¼×)
// (staggered, so a round's fetches are told apart); a lost one stops
// halfway and fades. With reduced motion each is shown still at the middle
// of its link for the same time. They are drawn on one canvas over the
// topology, by the page in the frames it draws anyway (an M op each in the
// frame's batch, panel.Painter.Fly): a composited element each kept
// Chromium's compositors drawing 60 times a second. #topo-msgs lists them
// (Flight.HTML) until they land. At most maxInFlight are on the stage at
// once (the newest are sent when there is room): under a stream of events
// hundreds crossed at once, which no one can follow.
func (a *app) fly(fs []panel.Flight) {
	room := maxInFlight - a.stage.inFlight
	if len(fs) == 0 || room <= 0 {
		return
	}
	if len(fs) > room {
		fs = fs[len(fs)-room:]
	}
	g := a.el("topo-msgs")
	if g.IsNull() {
		return
	}
	scale := a.stage.scale
	if scale == 0 { // not observed yet
		scale = a.el("topo").Get("clientWidth").Float() / topoWidth
	}
	var markup strings.Builder
	dur := flightMs / a.state.Snap.ClockRate()
	still := a.reducedMotion()
	last := 0.0
	for i := range fs {
		markup.WriteString(fs[i].HTML(dur))
		delay := float64(i%6) * 150 / a.state.Snap.ClockRate()
		last = max(last, delay)
		a.dom.Fly(&fs[i], scale, delay, dur, still)
	}
	a.stage.inFlight += len(fs)
	a.parseInto(g, false, markup.String(), func(els js.Value) {
		n := els.Length()
		batch := make([]js.Value, n)
		for i := range n {
			batch[i] = els.Index(i)
		}
		// One timer takes the frame's messages off the list once the
		// last has landed.
		a.after(dur+last+100, func() {
			for _, el := range batch {
				el.Call("remove")
			}
			a.stage.inFlight -= n
		})
	})
	a.flushParses()
}

// milli formats v ≥ 0 with three decimals (see panel.F1: no float
// formatting in the panel).
func milli(v float64) string {
	n := int64(math.Round(v * 1000))
	return strconv.FormatInt(n/1000, 10) + "." + strconv.FormatInt(1000+n%1000, 10)[1:]
}

// topoWidth is the width of the viewBox of the topology's SVG
// (views/stage.templ).
const topoWidth = 600

// path is the page's path, where the stage's forms return without the panel.
func (a *app) path() string { return js.Global().Get("location").Get("pathname").String() }

// place puts the stage's nodes and link menus where their data-pos says,
// through the CSSOM (the page's policy forbids inline style attributes),
// and marks the topology placed, which switches the CSS from a list to
// the picture.
func (a *app) place() {
	els := a.doc.Call("querySelectorAll", "#topo [data-pos]")
	for i := range els.Length() {
		el := els.Index(i)
		x, y, ok := strings.Cut(el.Call("getAttribute", "data-pos").String(), ",")
		if !ok {
			continue
		}
		st := el.Get("style")
		st.Set("left", x+"%")
		st.Set("top", y+"%")
	}
	a.el("topo").Get("classList").Call("add", "placed")
}
