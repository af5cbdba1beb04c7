//go:build js && wasm

package main

import (
	"strconv"
	"strings"

	"syscall/js"

	"tidemark/events"
	"tidemark/wasm/panel"
)

// setupStage shows the stage's JavaScript-only controls: one fetch round of
// every running broker, and the speed of the messages in flight.
func (a *app) setupStage() {
	if a.el("topo").IsNull() {
		return
	}
	a.stage = stageDOM{on: true, speed: 1, nodes: map[int32]panel.NodeView{}}
	if btn := a.el("stage-fetch"); !btn.IsNull() {
		btn.Set("hidden", false)
		a.on(btn, "click", func(js.Value) {
			for _, b := range a.state.Snap.Brokers {
				if b.State == events.BrokerUp {
					body := js.Global().Get("URLSearchParams").New()
					body.Call("set", "action", "fetch")
					body.Call("set", "broker", strconv.Itoa(int(b.ID)))
					a.send(body)
				}
			}
		})
	}
	speeds := a.el("stage-speeds")
	if speeds.IsNull() {
		return
	}
	speeds.Set("hidden", false)
	btns := speeds.Call("querySelectorAll", "button[data-speed]")
	for i := range btns.Length() {
		btn := btns.Index(i)
		a.on(btn, "click", func(js.Value) {
			v := speedOf(btn.Get("dataset").Get("speed").String())
			if v == 0 {
				return
			}
			a.stage.speed = v
			for j := range btns.Length() {
				btns.Index(j).Call("setAttribute", "aria-pressed", strconv.FormatBool(btns.Index(j).Equal(btn)))
			}
		})
	}
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
		a.el("topo-nodes").Set("innerHTML", panel.StageNodesHTML(v, a.cat, a.path()))
		a.el("topo-linkctl").Set("innerHTML", panel.StageLinkMenusHTML(v, a.cat, a.path()))
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
	a.setHTML("topo-links", panel.StageLinksSVG(v, a.cat))
	a.renderClockButton(v.Paused)
	evs := a.newEvents(st.flown)
	st.clients.Observe(evs)
	st.charts.Observe(&a.state.Snap, evs)
	if now := a.now(); now-st.chartsAt >= chartsEveryMs {
		a.setHTML("stage-charts", st.charts.HTML(a.cat))
		st.chartsAt = now
	}
	if h := st.clients.HTML(a.cat); h != "" {
		a.setHTML("stage-clients", h)
	}
	if a.state.Following {
		a.renderProducer(evs)
		a.fly(panel.Flights(v, evs, a.cat, maxFlights))
	}
	st.flown = a.state.Snap.Seq
}

// renderClockButton makes the clock's form pause a running clock and
// resume a paused one.
func (a *app) renderClockButton(paused bool) {
	want := "pause"
	if paused {
		want = "resume"
	}
	if a.stage.clock == want {
		return
	}
	form := a.doc.Call("querySelector", `.stage-time form[data-action="pause"], .stage-time form[data-action="resume"]`)
	if form.IsNull() {
		return
	}
	a.stage.clock = want
	form.Call("setAttribute", "data-action", want)
	form.Call("querySelector", `input[name="action"]`).Set("value", want)
	btn := form.Call("querySelector", "button")
	btn.Set("id", "stage-"+want)
	btn.Set("textContent", a.cat.T("stage.clock."+want))
}

// renderProducer shows what the UI's producer last did: waiting for its
// answer, acknowledged, or failed.
func (a *app) renderProducer(evs []events.Event) {
	text := ""
	for _, e := range evs {
		switch {
		case e.Kind == events.KindProduceRequest && e.Wire != nil && e.Wire.Client == "tidemark-ui":
			text = a.cat.T("stage.producer.waiting", string(e.Acks))
		case e.Kind == events.KindAck && e.Offsets != nil:
			text = a.cat.T("stage.producer.acked", e.Offsets.Base, e.Offsets.Last)
		case e.Kind == events.KindProduceError:
			text = a.cat.T("stage.producer.error", e.Error)
		}
	}
	if text == "" || text == a.stage.status {
		return
	}
	a.stage.status = text
	if el := a.el("stage-producer"); !el.IsNull() {
		el.Set("textContent", text)
	}
}

// fly puts messages in flight: each crosses its link in flightMs/speed
// (staggered, so a round's fetches are told apart) and is then removed; a
// lost one stops halfway and fades. With reduced motion each is shown
// still at the middle of its link for the same time. At most
// maxInFlight are on the stage at once (the newest are sent when there is
// room): under a stream of events hundreds crossed at once, which no one
// can follow and which cost Chromium more than the rest of the frame.
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
	var markup strings.Builder
	for i := range fs {
		markup.WriteString(fs[i].HTML())
	}
	dur := flightMs / a.stage.speed
	still := a.reducedMotion()
	a.stage.inFlight += len(fs)
	a.parseInto(g, false, markup.String(), func(els js.Value) {
		n := els.Length()
		batch := make([]js.Value, n)
		last := 0.0
		for i := range n {
			el, f := els.Index(i), fs[i]
			batch[i] = el
			mid := panel.Point{X: (f.From.X + f.To.X) / 2, Y: (f.From.Y + f.To.Y) / 2}
			var frames []any
			switch {
			case still:
				frames = []any{frame(mid, 1), frame(mid, 1)}
			case f.Lost:
				frames = []any{frame(f.From, 1), frame(mid, 1), frame(mid, 0)}
			default:
				frames = []any{frame(f.From, 1), frame(f.To, 1)}
			}
			delay := float64(i%6) * 150 / a.stage.speed
			last = max(last, delay)
			el.Call("animate", frames, map[string]any{"duration": dur, "delay": delay, "easing": "linear", "fill": "both"})
		}
		// One timer removes the frame's messages once the last has landed.
		a.after(dur+last+100, func() {
			for _, el := range batch {
				el.Call("remove")
			}
			a.stage.inFlight -= n
		})
	})
	a.flushParses()
}

// speedOf reads a speed button's data-speed (0 if it is none of them).
func speedOf(s string) float64 {
	switch s {
	case "0.25":
		return 0.25
	case "1":
		return 1
	case "4":
		return 4
	}
	return 0
}

func frame(p panel.Point, opacity float64) map[string]any {
	return map[string]any{"transform": "translate(" + panel.F1(p.X) + "px," + panel.F1(p.Y) + "px)", "opacity": opacity}
}

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
