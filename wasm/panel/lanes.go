package panel

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"tidemark/events"
)

// LaneCells is how many offsets each lane shows: the newest, up to the
// furthest LEO (or truncated record) of any replica, plus where the next
// record goes.
const LaneCells = 20

// SVG geometry, in user units. The markup writes the coordinates that
// follow from it out (a 40×40 cell: width 38, middle 20; the row of
// truncated records at 58): every call formatting a constant made the
// panel bigger. TestLaneGeometry checks them.
const (
	labelW = 170 // lane label column
	cellW  = 40
	cellH  = 40
	ghostY = 14 + cellH + 4 // the row of truncated records, full size, under a lane that has any
	topPad = 16
)

// laneHeight is the height of a lane, with or without its row of
// truncated records.
func laneHeight(ghosts bool) int64 {
	if ghosts {
		return ghostY + cellH + 18
	}
	return 14 + cellH + 18
}

// cleanerRowH is the row under a compacted replica's lane that shows its
// cleaner's clean and dirty sections.
const cleanerRowH = 16

// laneH is the height of l's lane, rows included.
func laneH(ghosts, cleaner bool) int64 {
	if cleaner {
		return laneHeight(ghosts) + cleanerRowH
	}
	return laneHeight(ghosts)
}

// valueRunes is how many characters of a record's value its cell shows.
const valueRunes = 5

// shortValue returns v as its cell shows it: at most valueRunes
// characters, the last an ellipsis when it is longer.
func shortValue(v string) string {
	n := 0
	for i := range v {
		if n == valueRunes-1 && utf8.RuneCountInString(v[i:]) > 1 {
			return v[:i] + "…"
		}
		n++
	}
	return v
}

// Motion says what changed since the last render, so the lanes can animate
// it: fetches, HW moves and elections (cells are drawn on a canvas, not
// animated). The
// zero Motion animates nothing (reduced motion, or a past state).
type Motion struct {
	fetched map[replicaKey]int64 // follower → fetch offset
	hwMoved map[replicaKey]bool
	elected map[partKey]bool
}

type partKey struct {
	topic     string
	partition int32
}

type replicaKey struct {
	partKey
	broker int32
}

// MotionOf collects what evs (the events since the last render) changed.
func MotionOf(evs []events.Event) Motion {
	m := Motion{fetched: map[replicaKey]int64{}, hwMoved: map[replicaKey]bool{}, elected: map[partKey]bool{}}
	for _, e := range evs {
		k := replicaKey{partKey{e.Topic, e.Partition}, e.Broker}
		switch e.Kind {
		case events.KindFetch:
			if e.Offsets != nil {
				m.fetched[k] = e.Offsets.Base
			}
		case events.KindHW:
			m.hwMoved[k] = true
		case events.KindElection:
			m.elected[k.partKey] = true
		}
	}
	return m
}

// partitionHW is the partition's HW as a consumer sees it: the leader's, or
// the highest a replica knows while there is no leader.
func partitionHW(p *events.Partition) int64 {
	var hw int64
	for _, r := range p.ReplicaLogs {
		if r.Broker == p.Leader || p.Leader == events.NoBroker {
			hw = max(hw, r.HW)
		}
	}
	return hw
}

// window returns the offsets [lo, hi] the lanes of p show: always
// LaneCells of them, so every lane has the same grid.
func window(p *events.Partition) (lo, hi int64) {
	for _, r := range p.ReplicaLogs {
		hi = max(hi, r.LEO, r.HW)
		for _, t := range r.Truncated {
			hi = max(hi, t.Offset+1)
		}
	}
	lo = max(0, hi-LaneCells+1)
	return lo, lo + LaneCells - 1
}

// Attr is one attribute of an element: name and (unescaped) value.
type Attr struct{ Name, Value string }

// Figure is one partition's figure in parts, so the page can update only
// what changed between frames instead of re-parsing the whole SVG: its
// attributes, its caption's markup, its lanes and its fetch arrows. Its
// markup (HTML) is the caption, the accessible list (ListHTML), the canvas
// the cells are drawn on (Painter.Paint) and the SVG over it.
// Shape says how the figure is built (its SVG element, its lanes' keys):
// while Shape stays the same, the parts are updated in place.
type Figure struct {
	Key     string // topic and partition
	W, H    int64  // the SVG's size, the canvas's under it (user units = CSS pixels)
	Shape   string
	Attrs   []Attr
	Caption string // markup of the figcaption before its meta span: the link to the partition
	Meta    string // text of the caption's meta span: leader, epoch, ISR, HW
	Lanes   []Lane
	Arrows  string // inner markup of the fetch arrows' group
	// Legend is the markup of the figure's key to what only some
	// partitions show (transaction markers, aborted records, the LSO, the
	// cleaner's sections); "" when it shows none.
	Legend string
}

// Lane is one replica's lane: its attributes, its head (tooltip, labels,
// numbers and empty slots), its cells (drawn on the figure's canvas) and
// its markers; slots and markers are drawn for the window shown. The parts
// that change with every record (tooltip, numbers, slot and marker
// positions) are kept apart from the markup, so a frame sets them without
// re-parsing (and re-laying out) any text.
type Lane struct {
	Key    string // broker id
	Y      int64  // the lane's top in the figure
	Ghosts bool   // the lane has a row of truncated records
	Down   bool   // its broker is not up: Paint dims its cells
	Attrs  []Attr
	Title  string  // the lane's tooltip (text)
	Head   string  // inner markup of g.lane-id: labels of broker, ISR/OSR and state
	Nums   string  // text of the LEO and HW numbers
	Slots  []int64 // the x of each empty slot of the window (offsets not yet written)
	Cells  []Cell  // records and truncated records, by offset
	// CellsX is the x cells are placed from (Cell.X).
	CellsX int64
	// The HW and LEO markers, over the cells: the x of each (-1 when out
	// of the window), and whether the HW moved (animated).
	HWX, LEOX int64
	HWMoved   bool
	// Segs are the segment boundaries in the window: where a segment
	// after the first starts (its x, and the label naming it).
	Segs []SegMark
	// Cleaner: the lane has a row for its cleaner's sections. Extra is the
	// markup drawn after the markers: the LSO marker (a replica whose log
	// holds transactions) and the cleaner's clean and dirty sections.
	Cleaner bool
	Extra   string
}

// SegMark is a segment boundary on a lane: the x of the segment's first
// offset and its label.
type SegMark struct {
	X     int64
	Label string
}

// Cell is one record or truncated record of a lane, drawn on the figure's canvas (Paint) at X from the lane's
// CellsX: a record shows Off (its offset), Val (its value, shortened) and
// Ep (its leader epoch, with a ? while not committed), filled in its
// epoch's colour once committed, else white with a heavy dashed border and
// a band of the colour; a truncated record shows Off (offset and epoch)
// and Val, struck out, in the row under the lane. Class and Title (its
// whole description) are what the accessible list (ListHTML) says of it.
type Cell struct {
	Class    string
	Offset   int64
	X        int64
	Title    string
	Off, Val string
	Ep       string // "" for a truncated record
	Color    int32  // the leader epoch mod 8: its colour in EpochFill
	State    uint8  // cellCommitted, cellUncommitted or cellTruncated
}

// SlotAt returns the markup of an empty slot at x.
func SlotAt(x int64) string {
	return `<rect class="slot" x="` + i64(x) + `" y="14" width="38" height="40" rx="3"/>`
}

// HTML returns the lane's markup.
func (l *Lane) HTML() string {
	var b strings.Builder
	b.WriteString(`<g` + attrs(l.Attrs) + `><g class="lane-head"><title>` + esc(l.Title) + `</title><g class="lane-id">` + l.Head +
		`</g><text class="lane-nums" x="4" y="52">` + esc(l.Nums) + `</text><g class="slots">`)
	for _, x := range l.Slots {
		b.WriteString(SlotAt(x))
	}
	b.WriteString(`</g></g><g class="marks">` + l.Marks() + `</g></g>`)
	return b.String()
}

// Marks returns the inner markup of g.marks: the HW marker (solid, its
// label above) and the LEO marker (dashed, its label below), each a group
// placed by its transform so that moving it re-lays out nothing.
func (l *Lane) Marks() string {
	var b strings.Builder
	if l.HWX >= 0 {
		b.WriteString(`<g class="` + l.HWClass() + `" transform="` + MarkAt(l.HWX) + `"><line x1="0" y1="8" x2="0" y2="56"/><text x="2" y="10">HW</text></g>`)
	}
	if l.LEOX >= 0 {
		bottom := laneHeight(l.Ghosts) - 18
		b.WriteString(`<g class="marker leo" transform="` + MarkAt(l.LEOX) + `"><line x1="0" y1="12" x2="0" y2="` + i64(bottom+2) + `"/><text x="2" y="` + i64(bottom+12) + `">LEO</text></g>`)
	}
	// Segment boundaries after the markers, which the panel finds by
	// their place among the children.
	for _, sm := range l.Segs {
		b.WriteString(`<g class="seg-mark" transform="` + MarkAt(sm.X) + `"><line x1="0" y1="12" x2="0" y2="54"/><text x="3" y="9">` + esc(sm.Label) + `</text></g>`)
	}
	b.WriteString(l.Extra)
	return b.String()
}

// SameSegs reports whether the lanes a and b show the same segment
// boundaries.
func SameSegs(a, b []SegMark) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// HWClass returns the class of the HW marker.
func (l *Lane) HWClass() string {
	if l.HWMoved {
		return "marker hw moved"
	}
	return "marker hw"
}

// MarkAt returns the transform of a marker at x.
func MarkAt(x int64) string { return "translate(" + i64(x) + ",0)" }

// HTML returns the figure's markup.
func (f *Figure) HTML() string {
	var b strings.Builder
	b.WriteString(`<figure` + attrs(f.Attrs) + `><figcaption>` + f.Caption + `<span class="meta">` + esc(f.Meta) + `</span></figcaption>` +
		`<div class="lane-list">` + f.ListHTML() + `</div><canvas class="lane-canvas" aria-hidden="true"></canvas>` + f.Shape)
	for i := range f.Lanes {
		b.WriteString(f.Lanes[i].HTML())
	}
	b.WriteString(`<g class="arrows">` + f.Arrows + `</g></svg>` + f.Legend + `</figure>`)
	return b.String()
}

func attrs(as []Attr) string {
	var b strings.Builder
	for _, a := range as {
		b.WriteString(` ` + a.Name + `="` + esc(a.Value) + `"`)
	}
	return b.String()
}

// RenderLanes returns one figure per partition of v: a caption (leader,
// leader epoch, ISR, HW) and an SVG with one lane per replica over a
// canvas for its records (Painter.Paint draws them: blocks at their offset
// with the offset, value and leader epoch written in them; those at or
// above the partition's HW white and dashed, not yet committed; records
// truncation removed struck out in a row under the lane at the offsets
// they had), and a list of them for screen readers; solid and dashed lines
// mark each replica's HW and LEO. Each lane carries data-topic, data-partition, data-broker,
// data-leo and data-hw; m says what to animate. A non-empty topic shows
// only that topic, and partition >= 0 only that partition of it.
func RenderLanes(v *events.Snapshot, m Motion, c Catalog, topic string, partition int32) string {
	var b strings.Builder
	for _, f := range LaneFigures(v, m, c, topic, partition) {
		b.WriteString(f.HTML())
	}
	return b.String()
}

// LaneFigures returns what RenderLanes draws, in parts.
func LaneFigures(v *events.Snapshot, m Motion, c Catalog, topic string, partition int32) []Figure {
	return (&Lanes{}).Figures(v, m, c, topic, partition)
}

// Lanes draws lane figures frame after frame, remembering the text of the
// cells it drew: a record's tooltip and texts depend only on its offset,
// epoch and state, so a frame builds only those of new records instead of
// formatting every record of every lane again. A Lanes is for one Catalog.
type Lanes struct {
	cells map[cellID]cellText
	// The cells and slots of the last figures, reused by the next call:
	// each lane's are a part of these.
	cellBuf []Cell
	slotBuf []int64
}

type cellID struct {
	offset   int64
	epoch    int32
	state    uint8  // cellCommitted, cellUncommitted, cellTruncated, cellControl or cellAborted
	value    string // shortened
	reason   string // a truncated record's: why
	producer int64  // a transaction marker's
	pending  bool   // a marker or aborted record at or above the HW
}

const (
	cellCommitted = iota
	cellUncommitted
	cellTruncated
	// cellControl is a transaction marker (a control batch), cellAborted
	// a record of an aborted transaction.
	cellControl
	cellAborted
)

type cellText struct{ title, off, ep string }

// maxCellTexts bounds the texts a Lanes remembers (a frame shows a few
// hundred cells at most).
const maxCellTexts = 4096

// cell returns the tooltip, offset line and epoch line of a cell.
func (lz *Lanes) cell(id cellID, c Catalog) cellText {
	if t, ok := lz.cells[id]; ok {
		return t
	}
	var t cellText
	if id.state == cellTruncated {
		t.title = c.T("panel.lane.rec", id.offset, id.epoch, c.T("panel.lane.truncated"))
		if id.reason != "" {
			t.title += " — " + id.reason
		}
		// Offset above, epoch and ✕ under the value: one line of both
		// would not fit a cell at 11 px.
		t.off = i64(id.offset)
		t.ep = "e" + itoa(id.epoch) + " ✕"
	} else if id.state == cellControl {
		word := c.T("panel.lane.abort")
		if id.value == markCommit {
			word = c.T("panel.lane.commit")
		}
		t.title = c.T("panel.lane.marker", id.offset, word, id.producer)
		t.off, t.ep = i64(id.offset), "e"+itoa(id.epoch)
	} else {
		state := c.T("panel.lane.committed")
		t.ep = "e" + itoa(id.epoch)
		if id.state == cellUncommitted || id.pending {
			state = c.T("panel.lane.uncommitted")
			t.ep += "?"
		}
		t.title = c.T("panel.lane.rec", id.offset, id.epoch, state)
		if id.value != "" {
			t.title = c.T("panel.lane.rec.value", t.title, id.value) // a full-width colon in Chinese
		}
		if id.state == cellAborted {
			t.title += " — " + c.T("panel.lane.aborted")
			t.ep += " ⊘"
		}
		t.off = i64(id.offset)
	}
	if lz.cells == nil || len(lz.cells) >= maxCellTexts {
		lz.cells = make(map[cellID]cellText, 256)
	}
	lz.cells[id] = t
	return t
}

// Figures is LaneFigures, remembering cell texts between calls. The
// figures' cells and slots are valid until the next call: a frame under a
// stream of records allocates no cells.
func (lz *Lanes) Figures(v *events.Snapshot, m Motion, c Catalog, topic string, partition int32) []Figure {
	var out []Figure
	lz.cellBuf, lz.slotBuf = lz.cellBuf[:0], lz.slotBuf[:0]
	for ti := range v.Topics {
		t := &v.Topics[ti]
		if topic != "" && t.Name != topic {
			continue
		}
		for pi := range t.Partitions {
			if partition >= 0 && t.Partitions[pi].Partition != partition {
				continue
			}
			out = append(out, lz.figure(v, t.Name, &t.Partitions[pi], m, c))
		}
	}
	return out
}

func (lz *Lanes) figure(v *events.Snapshot, topic string, p *events.Partition, m Motion, c Catalog) Figure {
	pk := partKey{topic, p.Partition}
	lo, hi := window(p)
	hw := partitionHW(p)
	name := topic + "-" + itoa(p.Partition)
	figCls := "lane-fig"
	if m.elected[pk] {
		figCls += " elected"
	}
	f := Figure{Key: topic + "\x00" + itoa(p.Partition)}
	f.Attrs = []Attr{{"class", figCls}, {"data-topic", topic}, {"data-partition", itoa(p.Partition)},
		{"data-leader", itoa(p.Leader)}, {"data-epoch", itoa(p.LeaderEpoch)}, {"data-hw", i64(hw)}, {"data-isr", ids(p.ISR)}}
	f.Caption = `<a href="/topics/` + esc(topic) + `/partitions/` + itoa(p.Partition) + `" title="` + esc(c.T("panel.open")) + `"><strong>` + esc(name) + `</strong></a> · `
	f.Meta = c.T("panel.lane.meta", brokerName(p.Leader, c), p.LeaderEpoch, ids(p.ISR), hw)
	width := labelW + (hi-lo+1)*cellW + 10
	height := int64(topPad)
	for ri := range p.ReplicaLogs {
		height += laneH(hasGhosts(&p.ReplicaLogs[ri], lo, hi), p.ReplicaLogs[ri].Cleaner != nil)
	}
	f.W, f.H = width, height
	f.Shape = `<svg class="lanes-svg" viewBox="0 0 ` + i64(width) + ` ` + i64(height) + `" width="` + i64(width) + `" height="` + i64(height) +
		`" role="group" aria-label="` + esc(name) + `">`
	y := int64(topPad)
	laneY := map[int32]int64{}
	for ri := range p.ReplicaLogs {
		laneY[p.ReplicaLogs[ri].Broker] = y
		state := events.BrokerUp
		if br := v.Broker(p.ReplicaLogs[ri].Broker); br != nil {
			state = br.State
		}
		l := lz.lane(topic, p, &p.ReplicaLogs[ri], state, y, lo, hi, hw, m, c)
		f.Lanes = append(f.Lanes, l)
		// Lanes are keyed by broker, in this order, and sized by their
		// rows.
		f.Shape += "|" + itoa(p.ReplicaLogs[ri].Broker)
		if l.Ghosts {
			f.Shape += "+"
		}
		if l.Cleaner {
			f.Shape += "c"
		}
		y += laneH(l.Ghosts, l.Cleaner)
	}
	// The legend of what this partition shows beyond records, HW and LEO:
	// its parts change the figure's shape (it is rebuilt when one comes).
	kinds := legendKinds(p, lo, hi)
	f.Legend = legend(kinds, c)
	f.Shape += "|L" + itoa(int32(kinds))
	// Fetches: an arrow from the leader's lane to the follower's, at the
	// offset fetched from.
	if ly, ok := laneY[p.Leader]; ok {
		var b strings.Builder
		for _, r := range p.ReplicaLogs {
			off, ok := m.fetched[replicaKey{pk, r.Broker}]
			if !ok || r.Broker == p.Leader {
				continue
			}
			x := xOf(min(max(off, lo), hi), lo) + cellW/2
			fy := laneY[r.Broker]
			y1, y2 := ly+14+cellH, fy+14
			if fy < ly {
				y1, y2 = ly+14, fy+14+cellH
			}
			b.WriteString(`<line class="fetch-arrow" x1="` + i64(x) + `" y1="` + i64(y1) + `" x2="` + i64(x) + `" y2="` + i64(y2) + `" data-broker="` + itoa(r.Broker) + `"/>`)
		}
		f.Arrows = b.String()
	}
	return f
}

// hasGhosts reports whether r has truncated records in the window.
func hasGhosts(r *events.Replica, lo, hi int64) bool {
	for _, t := range r.Truncated {
		if t.Offset >= lo && t.Offset <= hi {
			return true
		}
	}
	return false
}

// ruleOf returns the rule a truncation's reason names ("… (rule X): …"),
// or "".
func ruleOf(reason string) string {
	_, after, ok := strings.Cut(reason, "(rule ")
	if !ok {
		return ""
	}
	rule, _, ok := strings.Cut(after, ")")
	if !ok {
		return ""
	}
	return rule
}

func xOf(offset, lo int64) int64 { return labelW + (offset-lo)*cellW }

func (lz *Lanes) lane(topic string, p *events.Partition, r *events.Replica, state events.BrokerState, y, lo, hi, hw int64, m Motion, c Catalog) Lane {
	k := replicaKey{partKey{topic, p.Partition}, r.Broker}
	cls := "replica lane"
	leader := r.Broker == p.Leader
	inSync := contains(p.ISR, r.Broker)
	if leader {
		cls += " leader"
	}
	if !inSync {
		cls += " osr"
	}
	if state != events.BrokerUp {
		cls += " down"
	}
	// Cells sit at their offset from base, which moves only every 1024
	// offsets (coordinates stay small enough for float precision).
	base := lo &^ 1023
	l := Lane{Key: itoa(r.Broker), Y: y, Ghosts: hasGhosts(r, lo, hi), Down: state != events.BrokerUp, CellsX: xOf(base, lo)}
	l.Attrs = []Attr{{"class", cls}, {"data-topic", topic}, {"data-partition", itoa(p.Partition)}, {"data-broker", itoa(r.Broker)},
		{"data-leo", i64(r.LEO)}, {"data-hw", i64(r.HW)}, {"transform", "translate(0," + i64(y) + ")"}}
	l.Title = c.T("panel.lane.label", r.Broker, r.LEO, r.HW)
	var b strings.Builder
	// Label: broker, leader star, ISR/OSR (words, not colour alone), numbers.
	label := c.T("panel.broker", r.Broker)
	if leader {
		label += " ★"
	}
	b.WriteString(`<text class="lane-label" x="4" y="26">` + esc(label) + `</text>`)
	if inSync {
		b.WriteString(`<text class="isr-badge" x="110" y="26">ISR</text>`)
	} else {
		// OSR is the books' word, not Kafka's: the badge says so on hover.
		b.WriteString(`<text class="osr-badge" x="110" y="26"><title>` + esc(c.T("panel.lane.osr")) + `</title>OSR</text>`)
	}
	if state != events.BrokerUp {
		b.WriteString(`<text class="state-word" x="4" y="68">` + state.Glyph() + ` ` + esc(c.T("panel.state."+string(state))) + `</text>`)
	}
	if l.Ghosts {
		// Why the struck-out records went: the rule of the newest
		// truncation (each cell's tooltip has the whole reason).
		why := c.T("stage.lane.truncated")
		for i := len(r.Truncated) - 1; i >= 0; i-- {
			if rule := ruleOf(r.Truncated[i].Reason); rule != "" {
				why = c.T("stage.lane.truncated.rule", rule)
				break
			}
		}
		b.WriteString(`<text class="ghost-why" x="4" y="92">✕ ` + esc(why) + `</text>`)
	}
	l.Head = b.String()
	b.Reset()
	l.Nums = "LEO " + i64(r.LEO) + " · HW " + i64(r.HW)
	l.Cleaner = r.Cleaner != nil
	l.Extra = txnCleanerMarks(r, l.Ghosts, lo, hi, c)
	if r.Txn != nil {
		l.Nums += " · LSO " + i64(r.Txn.LSO)
		l.Title += " — " + c.T("panel.lane.lso", r.Txn.LSO)
	}
	// Empty slots: the grid of offsets not yet written, records drawn in
	// the cells.
	from := len(lz.slotBuf)
	for o := max(lo, r.LEO); o <= hi; o++ {
		lz.slotBuf = append(lz.slotBuf, xOf(o, lo)+1)
	}
	l.Slots = lz.slotBuf[from:len(lz.slotBuf):len(lz.slotBuf)]
	// Markers: HW solid with its label above, LEO dashed with its label below.
	l.HWX, l.LEOX, l.HWMoved = -1, -1, m.hwMoved[k]
	if r.HW >= lo && r.HW <= hi+1 {
		l.HWX = xOf(r.HW, lo)
	}
	if r.LEO >= lo && r.LEO <= hi+1 {
		l.LEOX = xOf(r.LEO, lo)
	}
	for i, base := range r.Segments {
		if i > 0 && base >= lo && base <= hi {
			l.Segs = append(l.Segs, SegMark{xOf(base, lo), c.T("panel.segment", base)})
		}
	}
	// Records.
	from = len(lz.cellBuf)
	for _, rec := range r.Records {
		if rec.Offset < lo || rec.Offset > hi {
			continue
		}
		id := cellID{offset: rec.Offset, epoch: rec.LeaderEpoch, value: shortValue(rec.Value)}
		if rec.Offset >= hw {
			id.state = cellUncommitted
		}
		class := ""
		switch {
		case rec.Control != "":
			// A marker shows a flag and ✓ or ✗, never its bytes.
			id.state, id.producer, id.pending, id.value, class = cellControl, rec.ProducerID, rec.Offset >= hw, markAbort, "rec control abort"
			if rec.Control == events.ControlCommit {
				id.value, class = markCommit, "rec control commit"
			}
		case rec.Aborted:
			id.state, id.pending, class = cellAborted, rec.Offset >= hw, "rec aborted"
		default:
			class = recClass[abs32(rec.LeaderEpoch)%8*2+int32(id.state)]
		}
		t := lz.cell(id, c)
		lz.cellBuf = append(lz.cellBuf, Cell{Class: class,
			Offset: rec.Offset, X: (rec.Offset - base) * cellW, Title: t.title, Off: t.off, Val: id.value, Ep: t.ep,
			Color: abs32(rec.LeaderEpoch) % 8, State: id.state})
	}
	// Truncated records, struck out at the offsets they had (the newest per offset).
	var ghost map[int64]events.TruncatedRecord
	for _, t := range r.Truncated {
		if t.Offset >= lo && t.Offset <= hi {
			if ghost == nil {
				ghost = map[int64]events.TruncatedRecord{}
			}
			ghost[t.Offset] = t
		}
	}
	for o := lo; o <= hi && ghost != nil; o++ {
		t, ok := ghost[o]
		if !ok {
			continue
		}
		id := cellID{offset: o, epoch: t.LeaderEpoch, state: cellTruncated, value: shortValue(t.Value), reason: TruncatedReason(t, c)}
		ct := lz.cell(id, c)
		lz.cellBuf = append(lz.cellBuf, Cell{Class: "ghost", Offset: o, X: (o - base) * cellW, Title: ct.title, Off: ct.off, Val: id.value, Ep: ct.ep,
			Color: abs32(t.LeaderEpoch) % 8, State: cellTruncated})
	}
	l.Cells = lz.cellBuf[from:len(lz.cellBuf):len(lz.cellBuf)]
	return l
}

// recClass is a record cell's class by leader epoch (mod 8) and state
// (cellCommitted or cellUncommitted), at epoch×2+state: built once, so a
// frame allocates no class strings.
var recClass = func() (t []string) {
	for ep := range 8 {
		for _, word := range []string{" committed", " uncommitted"} {
			t = append(t, "rec ep"+strconv.Itoa(ep)+word)
		}
	}
	return t
}()

func abs32(v int32) int32 {
	if v < 0 {
		return -v
	}
	return v
}
