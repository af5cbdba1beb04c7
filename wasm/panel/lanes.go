package panel

import (
	"strconv"
	"strings"

	"tidemark/events"
)

// LaneCells is how many offsets each lane shows: the newest, up to the
// furthest LEO (or truncated record) of any replica, plus where the next
// record goes.
const LaneCells = 20

// SVG geometry, in user units.
const (
	labelW = 170 // lane label column
	cellW  = 34
	cellH  = 30
	ghostH = 20 // the row of truncated records under a lane
	laneH  = 14 + cellH + ghostH + 18
	topPad = 16
)

// Motion says what changed since the last render, so the lanes can animate
// it: appended offsets, fetches, HW moves, elections and truncations. The
// zero Motion animates nothing (reduced motion, or a past state).
type Motion struct {
	appended  map[replicaKey]int64 // lowest offset appended since the last render
	fetched   map[replicaKey]int64 // follower → fetch offset
	hwMoved   map[replicaKey]bool
	elected   map[partKey]bool
	truncated map[replicaKey]bool
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
	m := Motion{appended: map[replicaKey]int64{}, fetched: map[replicaKey]int64{}, hwMoved: map[replicaKey]bool{},
		elected: map[partKey]bool{}, truncated: map[replicaKey]bool{}}
	for _, e := range evs {
		k := replicaKey{partKey{e.Topic, e.Partition}, e.Broker}
		switch e.Kind {
		case events.KindAppend:
			if e.Offsets != nil {
				if o, ok := m.appended[k]; !ok || e.Offsets.Base < o {
					m.appended[k] = e.Offsets.Base
				}
			}
		case events.KindFetch:
			if e.Offsets != nil {
				m.fetched[k] = e.Offsets.Base
			}
		case events.KindHW:
			m.hwMoved[k] = true
		case events.KindElection:
			m.elected[k.partKey] = true
		case events.KindTruncation:
			m.truncated[k] = true
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

// RenderLanes returns one figure per partition of v: a caption (leader,
// leader epoch, ISR, HW) and an SVG with one lane per replica. Records are
// blocks at their offset with the offset and leader epoch written in them;
// those at or above the partition's HW are dashed and pale (not yet
// committed); records truncation removed are struck out in a row under the
// lane at the offsets they had; solid and dashed lines mark each replica's
// HW and LEO. Each lane carries data-topic, data-partition, data-broker,
// data-leo and data-hw; m says what to animate. A non-empty topic shows
// only that topic, and partition >= 0 only that partition of it.
func RenderLanes(v *events.Snapshot, m Motion, c Catalog, topic string, partition int32) string {
	var b strings.Builder
	for ti := range v.Topics {
		t := &v.Topics[ti]
		if topic != "" && t.Name != topic {
			continue
		}
		for pi := range t.Partitions {
			if partition >= 0 && t.Partitions[pi].Partition != partition {
				continue
			}
			renderPartition(&b, v, t.Name, &t.Partitions[pi], m, c)
		}
	}
	return b.String()
}

func renderPartition(b *strings.Builder, v *events.Snapshot, topic string, p *events.Partition, m Motion, c Catalog) {
	pk := partKey{topic, p.Partition}
	lo, hi := window(p)
	hw := partitionHW(p)
	name := topic + "-" + itoa(p.Partition)
	figCls := "lane-fig"
	if m.elected[pk] {
		figCls += " elected"
	}
	b.WriteString(`<figure class="` + figCls + `" data-topic="` + esc(topic) + `" data-partition="` + itoa(p.Partition) +
		`" data-leader="` + itoa(p.Leader) + `" data-epoch="` + itoa(p.LeaderEpoch) + `" data-hw="` + i64(hw) + `" data-isr="` + esc(ids(p.ISR)) + `">`)
	b.WriteString(`<figcaption><a href="/topics/` + esc(topic) + `/partitions/` + itoa(p.Partition) + `" title="` + esc(c.T("panel.open")) + `"><strong>` + esc(name) + `</strong></a> · <span class="meta">` +
		esc(c.T("panel.lane.meta", brokerName(p.Leader, c), p.LeaderEpoch, ids(p.ISR), hw)) + `</span></figcaption>`)
	width := labelW + (hi-lo+1)*cellW + 10
	height := topPad + int64(len(p.ReplicaLogs))*laneH
	b.WriteString(`<svg class="lanes-svg" viewBox="0 0 ` + i64(width) + ` ` + i64(height) + `" width="` + i64(width) + `" height="` + i64(height) +
		`" role="group" aria-label="` + esc(name) + `">`)
	y := int64(topPad)
	laneY := map[int32]int64{}
	for ri := range p.ReplicaLogs {
		laneY[p.ReplicaLogs[ri].Broker] = y
		state := events.BrokerUp
		if br := v.Broker(p.ReplicaLogs[ri].Broker); br != nil {
			state = br.State
		}
		renderLane(b, topic, p, &p.ReplicaLogs[ri], state, y, lo, hi, hw, m, c)
		y += laneH
	}
	// Fetches: an arrow from the leader's lane to the follower's, at the
	// offset fetched from.
	if ly, ok := laneY[p.Leader]; ok {
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
	}
	b.WriteString(`</svg></figure>`)
}

func xOf(offset, lo int64) int64 { return labelW + (offset-lo)*cellW }

func renderLane(b *strings.Builder, topic string, p *events.Partition, r *events.Replica, state events.BrokerState, y, lo, hi, hw int64, m Motion, c Catalog) {
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
	b.WriteString(`<g class="` + cls + `" data-topic="` + esc(topic) + `" data-partition="` + itoa(p.Partition) + `" data-broker="` + itoa(r.Broker) +
		`" data-leo="` + i64(r.LEO) + `" data-hw="` + i64(r.HW) + `" transform="translate(0,` + i64(y) + `)">`)
	b.WriteString(`<title>` + esc(c.T("panel.lane.label", r.Broker, r.LEO, r.HW)) + `</title>`)
	// Label: broker, leader star, ISR/OSR (words, not colour alone), numbers.
	label := c.T("panel.broker", r.Broker)
	if leader {
		label += " ★"
	}
	b.WriteString(`<text class="lane-label" x="4" y="` + i64(14+12) + `">` + esc(label) + `</text>`)
	badge, badgeCls := "ISR", "isr-badge"
	if !inSync {
		badge, badgeCls = "OSR", "osr-badge"
	}
	b.WriteString(`<text class="` + badgeCls + `" x="110" y="` + i64(14+12) + `">` + badge + `</text>`)
	if state != events.BrokerUp {
		b.WriteString(`<text class="state-word" x="4" y="` + i64(14+cellH+14) + `">` + glyph(state) + ` ` + esc(c.T("panel.state."+string(state))) + `</text>`)
	}
	b.WriteString(`<text class="lane-nums" x="4" y="` + i64(14+cellH-2) + `">LEO ` + i64(r.LEO) + ` · HW ` + i64(r.HW) + `</text>`)
	// Empty slots first: the grid of offsets, records drawn over it.
	for o := lo; o <= hi; o++ {
		if o >= r.LEO {
			b.WriteString(`<rect class="slot" x="` + i64(xOf(o, lo)+1) + `" y="14" width="` + i64(cellW-2) + `" height="` + i64(cellH) + `" rx="3"/>`)
		}
	}
	// Records.
	newFrom, appended := m.appended[k]
	for _, rec := range r.Records {
		if rec.Offset < lo || rec.Offset > hi {
			continue
		}
		x := xOf(rec.Offset, lo)
		rc := "rec ep" + strconv.Itoa(int(abs32(rec.LeaderEpoch)%8))
		state := c.T("panel.lane.committed")
		if rec.Offset < hw {
			rc += " committed"
		} else {
			rc += " uncommitted"
			state = c.T("panel.lane.uncommitted")
		}
		if appended && rec.Offset >= newFrom {
			rc += " new"
		}
		b.WriteString(`<g class="` + rc + `" data-offset="` + i64(rec.Offset) + `"><title>` + esc(c.T("panel.lane.rec", rec.Offset, rec.LeaderEpoch, state)) + `</title>`)
		b.WriteString(`<rect x="` + i64(x+1) + `" y="14" width="` + i64(cellW-2) + `" height="` + i64(cellH) + `" rx="3"/>`)
		b.WriteString(`<text class="off" x="` + i64(x+cellW/2) + `" y="` + i64(14+12) + `">` + i64(rec.Offset) + `</text>`)
		b.WriteString(`<text class="ep" x="` + i64(x+cellW/2) + `" y="` + i64(14+cellH-4) + `">e` + itoa(rec.LeaderEpoch) + `</text></g>`)
	}
	// Truncated records, struck out at the offsets they had (the newest per offset).
	ghost := map[int64]events.TruncatedRecord{}
	for _, t := range r.Truncated {
		if t.Offset >= lo && t.Offset <= hi {
			ghost[t.Offset] = t
		}
	}
	gy := int64(14 + cellH + 2)
	for o := lo; o <= hi; o++ {
		t, ok := ghost[o]
		if !ok {
			continue
		}
		gc := "ghost"
		if m.truncated[k] {
			gc += " new"
		}
		x := xOf(o, lo)
		b.WriteString(`<g class="` + gc + `" data-offset="` + i64(o) + `"><title>` + esc(c.T("panel.lane.rec", t.Offset, t.LeaderEpoch, c.T("panel.lane.truncated"))) + `</title>`)
		b.WriteString(`<rect x="` + i64(x+3) + `" y="` + i64(gy) + `" width="` + i64(cellW-6) + `" height="` + i64(ghostH-2) + `" rx="2"/>`)
		b.WriteString(`<text x="` + i64(x+cellW/2) + `" y="` + i64(gy+ghostH-6) + `">` + i64(o) + `/e` + itoa(t.LeaderEpoch) + `</text>`)
		b.WriteString(`<line x1="` + i64(x+2) + `" y1="` + i64(gy+ghostH/2) + `" x2="` + i64(x+cellW-2) + `" y2="` + i64(gy+ghostH/2-1) + `"/></g>`)
	}
	// Markers: HW solid with its label above, LEO dashed with its label below.
	if r.HW >= lo && r.HW <= hi+1 {
		x := xOf(r.HW, lo)
		mc := "marker hw"
		if m.hwMoved[k] {
			mc += " moved"
		}
		b.WriteString(`<g class="` + mc + `"><line x1="` + i64(x) + `" y1="8" x2="` + i64(x) + `" y2="` + i64(14+cellH+2) + `"/><text x="` + i64(x+2) + `" y="10">HW</text></g>`)
	}
	if r.LEO >= lo && r.LEO <= hi+1 {
		x := xOf(r.LEO, lo)
		b.WriteString(`<g class="marker leo"><line x1="` + i64(x) + `" y1="12" x2="` + i64(x) + `" y2="` + i64(14+cellH+ghostH+2) + `"/><text x="` + i64(x+2) + `" y="` + i64(14+cellH+ghostH+12) + `">LEO</text></g>`)
	}
	b.WriteString(`</g>`)
}

func abs32(v int32) int32 {
	if v < 0 {
		return -v
	}
	return v
}
