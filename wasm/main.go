//go:build js && wasm

// Command wasm is Tidemark's live panel, compiled with GOOS=js GOARCH=wasm and
// loaded by static/panel.js into the page's #panel element. It connects to /ws,
// keeps the lab's state (package panel) and re-renders at most once per frame.
// #panel's data-status says "connecting" or "live"; data-seq is the last
// event applied (browser tests wait on both).
package main

import (
	"encoding/json"
	"syscall/js"
	"time"

	"tidemark/events"
	"tidemark/wasm/panel"
)

type app struct {
	doc       js.Value
	root      js.Value // #panel
	state     panel.State
	rendered  uint64 // Seq shown by the last render (for "new" marking)
	scheduled bool
	paused    bool // the event list is frozen (state keeps updating)
	backoff   time.Duration
	funcs     []js.Func // kept alive for the page's lifetime
}

func main() {
	doc := js.Global().Get("document")
	root := doc.Call("getElementById", "panel")
	if root.IsNull() {
		return
	}
	a := &app{doc: doc, root: root, backoff: time.Second}
	a.setupPause()
	a.connect()
	select {}
}

func (a *app) el(id string) js.Value { return a.doc.Call("getElementById", id) }

func (a *app) fn(f func(this js.Value, args []js.Value) any) js.Func {
	jf := js.FuncOf(f)
	a.funcs = append(a.funcs, jf)
	return jf
}

// setupPause shows the pause button: a native <button>, so keyboard operable.
func (a *app) setupPause() {
	btn := a.el("panel-pause")
	if btn.IsNull() {
		return
	}
	btn.Set("hidden", false)
	btn.Call("addEventListener", "click", a.fn(func(js.Value, []js.Value) any {
		a.paused = !a.paused
		pressed, label := "false", "Pause list"
		if a.paused {
			pressed, label = "true", "Resume list"
		}
		btn.Call("setAttribute", "aria-pressed", pressed)
		btn.Set("textContent", label)
		a.schedule()
		return nil
	}))
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
	a.setStatus("connecting", "connecting…")
	ws := js.Global().Get("WebSocket").New(scheme + "//" + loc.Get("host").String() + "/ws")
	var onMessage, onClose js.Func
	onMessage = js.FuncOf(func(_ js.Value, args []js.Value) any {
		var m events.Message
		if err := json.Unmarshal([]byte(args[0].Get("data").String()), &m); err != nil {
			js.Global().Get("console").Call("warn", "tidemark panel: bad message: "+err.Error())
			return nil
		}
		if a.state.Handle(m) {
			if m.Type == events.MessageSnapshot {
				a.backoff = time.Second
				a.setStatus("live", "live")
			}
			a.schedule()
		}
		return nil
	})
	onClose = js.FuncOf(func(js.Value, []js.Value) any {
		onMessage.Release()
		onClose.Release()
		a.state.Disconnected()
		a.setStatus("connecting", "disconnected; reconnecting in "+a.backoff.String()+"…")
		wait := a.backoff
		a.backoff = min(2*a.backoff, 30*time.Second)
		time.AfterFunc(wait, a.connect)
		return nil
	})
	ws.Call("addEventListener", "message", onMessage)
	ws.Call("addEventListener", "close", onClose)
}

// schedule renders on the next animation frame, once however many messages
// arrive before it.
func (a *app) schedule() {
	if a.scheduled {
		return
	}
	a.scheduled = true
	var frame js.Func
	frame = js.FuncOf(func(js.Value, []js.Value) any {
		frame.Release()
		a.scheduled = false
		a.render()
		return nil
	})
	js.Global().Call("requestAnimationFrame", frame)
}

func (a *app) render() {
	if b := a.el("panel-brokers"); !b.IsNull() {
		b.Set("innerHTML", a.state.RenderBrokers())
	}
	if l := a.el("lanes"); !l.IsNull() {
		l.Set("innerHTML", a.state.RenderLanes())
	}
	if !a.paused {
		if l := a.el("panel-events"); !l.IsNull() {
			l.Set("innerHTML", a.state.RenderEvents(a.rendered))
		}
		a.rendered = a.state.Snap.Seq
	}
	a.root.Get("dataset").Set("seq", a.state.Snap.Seq)
}
