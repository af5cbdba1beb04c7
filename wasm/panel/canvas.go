package panel

import (
	"strconv"
	"strings"
)

// The lanes' cells are drawn on a canvas under each figure's SVG (which
// keeps the labels, slots, markers and arrows): at 1,000 records/s every
// cell of a lane changes between two frames, and Chromium styling, laying
// out and painting ~540 SVG texts a frame cost more than drawing them.
// The canvas has no text a screen reader or a test can read: each figure
// also holds a visually hidden list of every lane's records and markers
// (ListHTML), which the panel rewrites at a bounded rate.

// The canvas's colours (app.css has the same for the page). Texts are
// drawn in CellText's colour over each fill (static/panel.js does as it
// says): TestCanvasContrast checks every pair meets WCAG AA (4.5:1).
const (
	Ink       = "#1b1b1b"
	Paper     = "#ffffff"
	GhostFill = "#fff4ec" // a truncated record
	GhostInk  = "#a8400a" // its border, texts and strike (--vermillion-text)
	// AbortFill is a record of an aborted transaction's fill (its border
	// dashed in Ink); a transaction marker is filled in Ink, its texts in
	// Paper.
	AbortFill = "#e4e4e4"
)

// EpochFill is a committed record's fill by leader epoch mod 8 (Okabe–Ito),
// and the band of one not yet committed.
var EpochFill = [8]string{"#56b4e9", "#e69f00", "#009e73", "#cc79a7", "#f0e442", "#0072b2", "#a33a00", "#999999"}

// CellText returns the colour of c's texts and the fill they are drawn on.
func CellText(c *Cell) (text, fill string) {
	switch {
	case c.State == cellTruncated:
		return GhostInk, GhostFill
	case c.State == cellUncommitted:
		return Ink, Paper
	case c.State == cellControl:
		return Paper, Ink
	case c.State == cellAborted:
		return Ink, AbortFill
	case c.Color == 5 || c.Color == 6:
		return Paper, EpochFill[c.Color]
	}
	return Ink, EpochFill[c.Color]
}

// Painter writes ops for the page's tidemarkDOM.apply (static/panel.js)
// into Buf: NUL-separated fields, each op a letter, a handle and its
// arguments. The panel's DOM writes use it (wasm/dom.go), and Paint draws
// lane figures with it. The zero Painter is ready.
type Painter struct{ Buf []byte }

// Op starts an op: its letter and handle; Str and Num add its arguments.
func (p *Painter) Op(op byte, h int) {
	p.Buf = append(p.Buf, op, 0)
	p.Buf = strconv.AppendInt(p.Buf, int64(h), 10)
	p.Buf = append(p.Buf, 0)
}

// Str adds a text argument (a NUL in it is shown as ␀: NUL separates).
func (p *Painter) Str(s string) {
	p.Buf = append(p.Buf, strings.ReplaceAll(s, "\x00", "␀")...)
	p.Buf = append(p.Buf, 0)
}

// Num adds a number argument.
func (p *Painter) Num(v int64) {
	p.Buf = strconv.AppendInt(p.Buf, v, 10)
	p.Buf = append(p.Buf, 0)
}

// Paint appends the drawing of f's cells between x0 and x1 (the part of
// the figure in view: a cell's texts cost the most) on the canvas of
// handle h: C sizes the canvas to the SVG (f.W × f.H) and clears it, then
// each cell is a K op (its state as the handle; x, y, epoch colour, offset
// line, value, epoch line) that the page draws as the lanes' SVG drew it,
// in the colours of Palette; a lane whose broker is down ends with a D op
// that dims its cells.
func (p *Painter) Paint(h int, f *Figure, x0, x1 int64) {
	p.Op('C', h)
	p.Num(f.W)
	p.Num(f.H)
	for li := range f.Lanes {
		l := &f.Lanes[li]
		lx, rx := int64(-1), int64(-1)
		for ci := range l.Cells {
			c := &l.Cells[ci]
			x := l.CellsX + c.X
			if x+cellW <= x0 || x >= x1 {
				continue
			}
			if lx < 0 {
				lx = x
			}
			rx = x + cellW
			p.Op('K', int(c.State))
			p.Num(x)
			p.Num(l.Y)
			p.Num(int64(c.Color))
			p.Str(c.Off)
			p.Str(c.Val)
			p.Str(c.Ep)
		}
		if l.Down && lx >= 0 {
			// A crashed or powered-off broker's cells are dimmed, as its
			// lane's label says: a D op veils x, y, w, h (the rows its
			// cells fill) in paper once they are drawn.
			dh := int64(cellRowH)
			if l.Ghosts {
				dh = ghostRowBottom - cellRowTop
			}
			p.Op('D', 0)
			p.Num(lx)
			p.Num(l.Y + cellRowTop)
			p.Num(rx - lx)
			p.Num(dh)
		}
	}
}

// Where the page draws a lane's cells under its top (static/panel.js): a
// record's box from cellRowTop, cellRowH high; the row of truncated
// records ends at ghostRowBottom.
const (
	cellRowTop     = 14
	cellRowH       = 40
	ghostRowBottom = 98
)

// Palette is the canvas's colours for the page (a P op, sent before the
// first drawing): EpochFill, then Ink, Paper, GhostFill, GhostInk and
// AbortFill.
func (p *Painter) Palette() {
	p.Op('P', 0)
	for _, c := range EpochFill {
		p.Str(c)
	}
	for _, c := range [...]string{Ink, Paper, GhostFill, GhostInk, AbortFill} {
		p.Str(c)
	}
}

// ListHTML returns the markup of f's accessible list: per lane a group
// (class lane-recs, with the lane's data-topic, data-partition and
// data-broker) named by the lane's tooltip, holding for each record and
// truncated record an image (role img: the cell the canvas draws; class
// as its cell's, data-offset, data-val its value as the cell shows it)
// named by its tooltip, and the HW and LEO markers (span.marker.hw and
// span.marker.leo, data-offset). Names, not texts: Chromium lays out no
// text for them, which made rewriting ~180 of them cost ~9 ms a time.
func (f *Figure) ListHTML() string {
	var b strings.Builder
	for li := range f.Lanes {
		l := &f.Lanes[li]
		b.WriteString(`<div class="lane-recs" role="group"`)
		var hw, leo string
		for _, at := range l.Attrs {
			if strings.HasPrefix(at.Name, "data-") {
				b.WriteString(` ` + at.Name + `="` + esc(at.Value) + `"`)
			}
			switch at.Name {
			case "data-hw":
				hw = at.Value
			case "data-leo":
				leo = at.Value
			}
		}
		b.WriteString(` aria-label="` + esc(l.Title) + `">`)
		for ci := range l.Cells {
			c := &l.Cells[ci]
			b.WriteString(`<span role="img" class="` + c.Class + `" data-offset="` + i64(c.Offset) + `" data-val="` + esc(c.Val) + `" aria-label="` + esc(c.Title) + `"></span>`)
		}
		b.WriteString(`<span role="img" class="marker hw" data-offset="` + hw + `" aria-label="HW ` + hw + `"></span><span role="img" class="marker leo" data-offset="` + leo + `" aria-label="LEO ` + leo + `"></span></div>`)
	}
	return b.String()
}
