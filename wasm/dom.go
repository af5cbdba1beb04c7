//go:build js && wasm

package main

import (
	"syscall/js"

	"tidemark/wasm/panel"
)

// domBatch collects a frame's writes to the lanes' elements and the
// drawing of their canvases (panel.Painter) and sends them to the page's
// tidemarkDOM (static/panel.js) as one string: a call from Go into JS
// costs microseconds, and a frame under a stream of records draws
// hundreds of cells (every cell of every lane changes when more records
// arrive than a lane shows). Elements are named
// by handles (> 0) that the batch hands out; the page keeps the element of
// each until it is forgotten. Writes take effect at flush, in order.
type domBatch struct {
	panel.Painter
	page js.Value // tidemarkDOM (undefined until first used)
	next int      // the next new handle
	free []int    // forgotten handles, for reuse
}

// handle returns a new handle.
func (d *domBatch) handle() int {
	if n := len(d.free); n > 0 {
		h := d.free[n-1]
		d.free = d.free[:n-1]
		return h
	}
	d.next++
	return d.next
}

// adopt returns a handle of el, at once. The handle is a new one, never a
// forgotten one: the page forgets those only at flush.
func (d *domBatch) adopt(el js.Value) int {
	d.next++
	h := d.next
	d.pageDOM().Call("adopt", h, el)
	return h
}

func (d *domBatch) pageDOM() js.Value {
	if d.page.IsUndefined() {
		d.page = js.Global().Get("tidemarkDOM")
	}
	return d.page
}

// child returns a handle of the index-th child element of parent.
func (d *domBatch) child(parent, index int) int {
	h := d.handle()
	d.Op('c', h)
	d.Num(int64(parent))
	d.Num(int64(index))
	return h
}

func (d *domBatch) setAttr(h int, name, value string) {
	d.Op('a', h)
	d.Str(name)
	d.Str(value)
}

func (d *domBatch) setText(h int, text string) {
	d.Op('t', h)
	d.Str(text)
}

// setHTML replaces h's children by markup.
func (d *domBatch) setHTML(h int, markup string) {
	d.Op('h', h)
	d.Str(markup)
}

// pace has the page draw the messages in flight at most every ms
// milliseconds, in the panel's frames and in its own (0: in every frame),
// asking for a frame of their own slackMs early as the panel does
// (panel.PaceWait).
func (d *domBatch) pace(ms, slackMs int) {
	d.Op('R', 0)
	d.Num(int64(ms))
	d.Num(int64(slackMs))
}

// forget lets the page drop h's element and the batch reuse the handle.
func (d *domBatch) forget(h int) {
	if h == 0 {
		return
	}
	d.Op('f', h)
	d.free = append(d.free, h)
}

// flush sends the writes collected since the last flush and reports
// whether the page did them all (it logs the one that failed).
func (d *domBatch) flush() bool {
	if len(d.Buf) == 0 {
		return true
	}
	ok := d.pageDOM().Call("apply", string(d.Buf)).Bool()
	d.Buf = d.Buf[:0]
	return ok
}
