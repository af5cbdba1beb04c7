//go:build js && wasm

package main

import (
	"strconv"
	"strings"
	"syscall/js"
)

// domBatch collects a frame's writes to the lanes' elements and sends them
// to the page's tidemarkDOM (static/panel.js) as one string: a call from
// Go into JS costs microseconds, and a frame under a stream of records
// writes thousands of texts and attributes (every cell of every lane
// changes when more records arrive than a lane shows). Elements are named
// by handles (> 0) that the batch hands out; the page keeps the element of
// each until it is forgotten. Writes take effect at flush, in order.
type domBatch struct {
	page js.Value // tidemarkDOM (undefined until first used)
	buf  []byte
	next int   // the next new handle
	free []int // forgotten handles, for reuse
}

// op starts a write: its letter (see tidemarkDOM.apply) and handle; str
// and num add its arguments.
func (d *domBatch) op(op byte, h int) {
	d.buf = append(d.buf, op, 0)
	d.buf = strconv.AppendInt(d.buf, int64(h), 10)
	d.buf = append(d.buf, 0)
}

func (d *domBatch) str(s string) {
	for {
		// NUL separates fields: one in s is shown as ␀.
		i := strings.IndexByte(s, 0)
		if i < 0 {
			break
		}
		d.buf = append(append(d.buf, s[:i]...), "␀"...)
		s = s[i+1:]
	}
	d.buf = append(d.buf, s...)
	d.buf = append(d.buf, 0)
}

func (d *domBatch) num(v int64) {
	d.buf = strconv.AppendInt(d.buf, v, 10)
	d.buf = append(d.buf, 0)
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
	d.op('c', h)
	d.num(int64(parent))
	d.num(int64(index))
	return h
}

// clone returns a handle of a deep copy of src (detached).
func (d *domBatch) clone(src int) int {
	h := d.handle()
	d.op('k', h)
	d.num(int64(src))
	return h
}

// parse returns a handle of the (detached) element markup is.
func (d *domBatch) parse(markup string) int {
	h := d.handle()
	d.op('m', h)
	d.str(markup)
	return h
}

func (d *domBatch) setAttr(h int, name, value string) {
	d.op('a', h)
	d.str(name)
	d.str(value)
}

func (d *domBatch) setText(h int, text string) {
	d.op('t', h)
	d.str(text)
}

// setHTML replaces h's children by markup.
func (d *domBatch) setHTML(h int, markup string) {
	d.op('h', h)
	d.str(markup)
}

// appendTo makes h the last child of parent.
func (d *domBatch) appendTo(h, parent int) {
	d.op('p', h)
	d.num(int64(parent))
}

// remove takes h out of the document (its handle stays).
func (d *domBatch) remove(h int) { d.op('r', h) }

// forget lets the page drop h's element and the batch reuse the handle.
func (d *domBatch) forget(h int) {
	if h == 0 {
		return
	}
	d.op('f', h)
	d.free = append(d.free, h)
}

// flush sends the writes collected since the last flush and reports
// whether the page did them all (it logs the one that failed).
func (d *domBatch) flush() bool {
	if len(d.buf) == 0 {
		return true
	}
	ok := d.pageDOM().Call("apply", string(d.buf)).Bool()
	d.buf = d.buf[:0]
	return ok
}
