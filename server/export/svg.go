package export

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"tidemark/events"
	"tidemark/i18n"
)

// svg writes an SVG document; the first write error sticks and is
// returned by end.
type svg struct {
	w   *bufio.Writer
	err error
}

func newSVG(w io.Writer, width, height int, title string) *svg {
	s := &svg{w: bufio.NewWriter(w)}
	s.printf(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`,
		width, height, width, height)
	s.printf("<title>%s</title>", esc(title))
	s.printf(`<rect width="100%%" height="100%%" fill="#fff"/>`)
	return s
}

func (s *svg) printf(format string, args ...any) {
	if s.err == nil {
		_, s.err = fmt.Fprintf(s.w, format, args...)
	}
}

// text writes a text element at x, y; anchor is start, middle or end.
func (s *svg) text(x, y float64, anchor, class, t string) {
	s.printf(`<text x="%.1f" y="%.1f" text-anchor="%s" class="%s">%s</text>`, x, y, anchor, class, esc(t))
}

func (s *svg) end() error {
	s.printf("</svg>\n")
	if s.err != nil {
		return s.err
	}
	return s.w.Flush()
}

// esc escapes t for XML text and attribute values.
func esc(t string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(t))
	return b.String()
}

// stateWord is a broker state in lang, as the pages write it (an unknown
// state as it is).
func stateWord(lang i18n.Lang, st events.BrokerState) string {
	if key := "ui.state." + string(st); i18n.T(lang, key) != key {
		return i18n.T(lang, key)
	}
	return string(st)
}

// stateFill is a broker state's fill; the state is also written out in
// the label, so it never rests on colour alone.
func stateFill(st events.BrokerState) string {
	switch st {
	case events.BrokerUp:
		return "#d8f0d8"
	case events.BrokerFenced:
		return "#fde6c4"
	}
	return "#e0e0e0"
}

// cut reports whether the link from→to is cut in snap.
func cut(snap *events.Snapshot, from, to int32) bool {
	for _, c := range snap.Cuts {
		if (c.From == from && c.To == to) || (!c.OneWay && c.From == to && c.To == from) {
			return true
		}
	}
	return false
}

// Topology draws the controller (node 0, or the broker acting as
// controller), the brokers with their state, and every link in each
// direction apart: a cut direction is dashed and red. Texts are in lang.
func Topology(w io.Writer, snap events.Snapshot, lang i18n.Lang) error {
	const width, height, r = 640, 360, 30
	type node struct {
		id    int32
		x, y  float64
		label string
		state events.BrokerState
	}
	nodes := []node{{id: 0, x: width / 2, y: 60, label: i18n.T(lang, "stage.node0"), state: events.BrokerUp}}
	// An observed Kafka cluster has no node 0: its controller is a broker.
	if snap.Controller != 0 {
		nodes = nodes[:0]
	}
	n := len(snap.Brokers)
	for i, b := range snap.Brokers {
		x := width * float64(i+1) / float64(n+1)
		nodes = append(nodes, node{id: b.ID, x: x, y: 250, label: i18n.T(lang, "lesson.broker", b.ID), state: b.State})
	}
	s := newSVG(w, width, height, i18n.T(lang, "stage.topology"))
	s.printf(`<g class="links">`)
	for i, a := range nodes {
		for _, b := range nodes[i+1:] {
			// Each direction is its own line, 4 px to its side of the centre line.
			dx, dy := b.x-a.x, b.y-a.y
			l := math.Hypot(dx, dy)
			ox, oy := -dy/l*4, dx/l*4
			for _, d := range [][2]node{{a, b}, {b, a}} {
				from, to := d[0], d[1]
				sign := 1.0
				if from.id > to.id {
					sign = -1
				}
				state, style := i18n.T(lang, "stage.link.up"), `stroke="#888"`
				if cut(&snap, from.id, to.id) {
					state, style = i18n.T(lang, "stage.link.cut"), `stroke="#c00" stroke-dasharray="6 4"`
				}
				s.printf(`<line data-from="%d" data-to="%d" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" %s stroke-width="2"><title>%s</title></line>`,
					from.id, to.id, from.x+sign*ox, from.y+sign*oy, to.x+sign*ox, to.y+sign*oy, style,
					esc(i18n.T(lang, "stage.link.dir", from.label, to.label, state)))
			}
		}
	}
	s.printf(`</g><g class="nodes">`)
	for _, nd := range nodes {
		s.printf(`<g data-node="%d"><circle cx="%.1f" cy="%.1f" r="%d" fill="%s" stroke="#333"/>`, nd.id, nd.x, nd.y, r, stateFill(nd.state))
		s.text(nd.x, nd.y+4, "middle", "label", nd.label)
		if nd.id == snap.Controller {
			s.text(nd.x, nd.y-r-8, "middle", "role", i18n.T(lang, "ui.controller"))
		}
		if nd.id != 0 || snap.Controller != 0 {
			s.text(nd.x, nd.y+r+16, "middle", "state", nd.state.Glyph()+" "+stateWord(lang, nd.state))
		}
		s.printf(`</g>`)
	}
	s.printf(`</g>`)
	return s.end()
}

// epochFill is leader epoch e's colour, the palette the stage cycles through.
func epochFill(e int32) string {
	palette := []string{"#cfe3ff", "#ffe0b3", "#d5f5d5", "#f3d1f3", "#fff3a8", "#cdeeee"}
	return palette[int(uint32(e))%len(palette)]
}

// maxLaneOffsets is the most offsets Lanes draws side by side.
const maxLaneOffsets = 200

// Lanes draws a partition's replicas one lane each: the records in the
// replica's window (offset, leader epoch, value; committed ones filled in
// their epoch's colour, uncommitted ones white and dashed), the HW and LEO
// marks, and under the lane the records truncation removed, struck out.
func Lanes(w io.Writer, topic string, p events.Partition, lang i18n.Lang) error {
	const cellW, cellH, left, laneH = 46, 34, 90, 96
	first, last := int64(math.MaxInt64), int64(0)
	for _, r := range p.ReplicaLogs {
		for _, rec := range r.Records {
			first = min(first, rec.Offset)
		}
		for _, t := range r.Truncated {
			first = min(first, t.Offset)
		}
		first = min(first, r.LEO)
		last = max(last, r.LEO)
	}
	if len(p.ReplicaLogs) == 0 {
		first = 0
	}
	// A replica far behind (or a long-crashed one) would stretch the
	// picture without bound: draw at most the newest maxLaneOffsets.
	first = max(first, last-maxLaneOffsets)
	visible := func(off int64) bool { return off >= first }
	cells := int(last-first) + 1
	width := left + cells*cellW + 60
	height := 40 + len(p.ReplicaLogs)*laneH
	x := func(off int64) float64 { return float64(left) + float64(off-first)*cellW }
	title := topic + "-" + strconv.Itoa(int(p.Partition)) + ": " +
		i18n.T(lang, "lesson.lanes.partition", p.Leader, p.LeaderEpoch, idList(p.ISR))
	s := newSVG(w, width, height, title)
	s.text(8, 20, "start", "title", title)
	for i, r := range p.ReplicaLogs {
		y := 36 + float64(i*laneH)
		s.printf(`<g class="lane" data-broker="%d" data-leo="%d" data-hw="%d">`, r.Broker, r.LEO, r.HW)
		label := i18n.T(lang, "lesson.broker", r.Broker)
		if r.Broker == p.Leader {
			label += " · " + i18n.T(lang, "lesson.leader")
		}
		s.text(8, y+cellH/2+4, "start", "broker", label)
		for _, rec := range r.Records {
			if !visible(rec.Offset) {
				continue
			}
			fill, style := epochFill(rec.LeaderEpoch), `stroke="#333"`
			if rec.Offset >= r.HW {
				fill, style = "#fff", `stroke="#333" stroke-width="2" stroke-dasharray="4 3"`
			}
			s.printf(`<g class="record" data-offset="%d" data-epoch="%d"><rect x="%.1f" y="%.1f" width="%d" height="%d" fill="%s" %s/>`,
				rec.Offset, rec.LeaderEpoch, x(rec.Offset)+1, y, cellW-2, cellH, fill, style)
			s.text(x(rec.Offset)+cellW/2, y+13, "middle", "offset", strconv.FormatInt(rec.Offset, 10)+" e"+strconv.Itoa(int(rec.LeaderEpoch)))
			s.text(x(rec.Offset)+cellW/2, y+27, "middle", "value", short(rec.Value))
			s.printf(`</g>`)
		}
		for _, m := range []struct {
			name string
			off  int64
			dy   float64
		}{{i18n.T(lang, "lesson.ptr.hw"), r.HW, -4}, {i18n.T(lang, "lesson.ptr.leo"), r.LEO, cellH + 12}} {
			if !visible(m.off) {
				continue
			}
			s.printf(`<line class="mark" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#000" stroke-width="2"/>`, x(m.off), y-6, x(m.off), y+cellH+6)
			s.text(x(m.off)+3, y+m.dy, "start", "mark", m.name+" "+strconv.FormatInt(m.off, 10))
		}
		ty := y + cellH + 18
		for _, t := range r.Truncated {
			if !visible(t.Offset) {
				continue
			}
			s.printf(`<g class="truncated" data-offset="%d"><title>%s</title><rect x="%.1f" y="%.1f" width="%d" height="%d" fill="#f4f4f4" stroke="#999"/>`,
				t.Offset, esc(i18n.T(lang, "stage.lane.truncated")+": "+i18n.Message(lang, t.Reason, t.ReasonKey, t.ReasonArgs)), x(t.Offset)+1, ty, cellW-2, 22)
			s.printf(`<text x="%.1f" y="%.1f" text-anchor="middle" text-decoration="line-through">%s</text></g>`,
				x(t.Offset)+cellW/2, ty+15, esc(strconv.FormatInt(t.Offset, 10)+" "+short(t.Value)))
		}
		s.printf(`</g>`)
	}
	return s.end()
}

// short is a record value as a cell shows it: 5 characters, … when longer.
func short(v string) string {
	if r := []rune(v); len(r) > 5 {
		return string(r[:5]) + "…"
	}
	return v
}

func idList(ids []int32) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.Itoa(int(id))
	}
	return "[" + strings.Join(parts, " ") + "]"
}
