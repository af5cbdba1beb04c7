//go:build !(js && wasm)

package panel

import (
	"slices"
	"strings"
	"time"

	"tidemark/events"
)

// The charts are small multiples of what the stream showed over the last
// ChartWindow of lab time: LEO and HW per replica of one partition, its
// ISR size, the records produced per second and the UI producer's
// acknowledgement latency per acks setting. Hand-written SVG polylines:
// a chart library would not fit the panel's size budget.
const (
	ChartWindow = 60 * time.Second
	chartW      = 220
	chartH      = 74 // the plot's bottom: its x axis
	chartAxisH  = 11 // under it, the time axis's labels
	chartLeft   = 1  // the y axis
	chartPad    = 16 // room for the labels above the plot
	maxPoints   = 240
	// sampleEvery is the lab time one sample of LEO, HW and ISR size
	// stands for: the page observes every frame, 50 a second under a
	// stream, and maxPoints of those covered only the window's last 5 s.
	sampleEvery = 60.0 / maxPoints
)

// point is one sample: lab time in seconds since the charts' start, and a
// value.
type point struct{ t, v float64 }

type series []point

// add appends p, dropping points older than the window and the oldest
// beyond maxPoints; a sample at the same time replaces the last one, and
// so does one in the same step of lab time (step > 0) unless keep and
// its value differs (a change of the ISR size is kept however short).
func (s series) add(p point, step float64, keep bool) series {
	if n := len(s); n > 0 && (s[n-1].t == p.t || step > 0 && int64(s[n-1].t/step) == int64(p.t/step) && (!keep || s[n-1].v == p.v)) {
		s[n-1] = p
		return s
	}
	s = append(s, p)
	i := 0
	for i < len(s)-1 && (s[i].t < p.t-ChartWindow.Seconds() || len(s)-i > maxPoints) {
		i++
	}
	return append(s[:0], s[i:]...)
}

// Charts gathers the charts' samples from the stream.
type Charts struct {
	Topic     string // the partition charted (the first one seen, unless set)
	Partition int32
	start     time.Time
	now       float64 // the newest sample's time
	leo, hw   map[int32]series
	isr       series
	rate      series // records appended by leaders per second of lab time
	rateSec   float64
	lat       map[events.Acks]series // ms from a produce request to its acknowledgement
	asked     map[events.Acks]time.Time
}

// Observe samples v, the state after evs, and the produce activity in evs.
func (ch *Charts) Observe(v *events.Snapshot, evs []events.Event) {
	if len(evs) == 0 {
		return
	}
	if ch.leo == nil {
		ch.leo, ch.hw, ch.lat, ch.asked = map[int32]series{}, map[int32]series{}, map[events.Acks]series{}, map[events.Acks]time.Time{}
	}
	if ch.Topic == "" && len(v.Topics) > 0 && len(v.Topics[0].Partitions) > 0 {
		ch.Topic, ch.Partition = v.Topics[0].Name, v.Topics[0].Partitions[0].Partition
	}
	for _, e := range evs {
		if e.Time.IsZero() {
			continue
		}
		if ch.start.IsZero() {
			ch.start = e.Time
		}
		t := e.Time.Sub(ch.start).Seconds()
		ch.now = max(ch.now, t)
		switch e.Kind {
		case events.KindAppend:
			if p := v.Partition(e.Topic, e.Partition); p != nil && p.Leader == e.Broker && e.Offsets != nil {
				sec := float64(int64(t))
				if sec != ch.rateSec || len(ch.rate) == 0 {
					ch.rate = ch.rate.add(point{sec, 0}, 0, false)
					ch.rateSec = sec
				}
				ch.rate[len(ch.rate)-1].v += float64(e.Offsets.Last - e.Offsets.Base + 1)
			}
		case events.KindProduceRequest:
			if e.Wire != nil && e.Wire.Client == UIClient {
				ch.asked[e.Acks] = e.Time
			}
		case events.KindAck, events.KindProduceError:
			if at, ok := ch.asked[e.Acks]; ok {
				delete(ch.asked, e.Acks)
				if e.Kind == events.KindAck {
					ch.lat[e.Acks] = ch.lat[e.Acks].add(point{t, float64(e.Time.Sub(at).Microseconds()) / 1000}, 0, false)
				}
			}
		}
	}
	if p := v.Partition(ch.Topic, ch.Partition); p != nil {
		for _, r := range p.ReplicaLogs {
			ch.leo[r.Broker] = ch.leo[r.Broker].add(point{ch.now, float64(r.LEO)}, sampleEvery, false)
			ch.hw[r.Broker] = ch.hw[r.Broker].add(point{ch.now, float64(r.HW)}, sampleEvery, false)
		}
		ch.isr = ch.isr.add(point{ch.now, float64(len(p.ISR))}, sampleEvery, true)
	}
}

// lineClass is the class of replica i's line: the palette's colours in
// turn, each also dashed its own way for LEO.
var lineClass = [4]string{"c0", "c1", "c2", "c3"}

// HTML returns the charts, each a figure with data-testid chart-<name>.
func (ch *Charts) HTML(c Catalog) string {
	var b strings.Builder
	lo := ch.now - ChartWindow.Seconds()
	// LEO and HW per replica.
	var lines []line
	var legend []string
	for i, id := range sortedKeys(ch.leo) {
		cls := lineClass[i%len(lineClass)]
		lines = append(lines, line{ch.leo[id], cls + " leo"}, line{ch.hw[id], cls})
		legend = append(legend, `<span class="`+cls+`">`+esc(c.T("panel.broker", id))+`</span>`)
	}
	ch.chart(&b, c, "leo-hw", c.T("stage.chart.leohw", ch.Topic+"-"+itoa(ch.Partition)), strings.Join(legend, " "), "offset", lo, lines, false)
	ch.chart(&b, c, "isr", c.T("stage.chart.isr"), "", "replicas", lo, []line{{ch.isr, "c0"}}, false)
	ch.chart(&b, c, "rate", c.T("stage.chart.rate"), "", "rate", lo, []line{{ch.rate, "c1"}}, false)
	lines, legend = nil, nil
	for i, acks := range []events.Acks{events.AcksNone, events.AcksLeader, events.AcksAll} {
		cls := lineClass[i]
		lines = append(lines, line{ch.lat[acks], cls})
		legend = append(legend, `<span class="`+cls+`">acks=`+string(acks)+`</span>`)
	}
	ch.chart(&b, c, "latency", c.T("stage.chart.latency"), strings.Join(legend, " "), "ms", lo, lines, true)
	return b.String()
}

type line struct {
	s   series
	cls string
}

// chart writes one small multiple: its title, a legend, its axes (the
// value from 0 to the largest on its scale, in unit, a stage.chart.unit.
// key; time from a window ago to now) and a polyline (dots if dots) per
// line; time runs from lo to the newest sample.
func (ch *Charts) chart(b *strings.Builder, c Catalog, name, title, legend, unit string, lo float64, lines []line, dots bool) {
	top := 1.0
	for _, l := range lines {
		for _, p := range l.s {
			if p.t >= lo {
				top = max(top, p.v)
			}
		}
	}
	x := func(t float64) string { return F1((t - lo) / ChartWindow.Seconds() * chartW) }
	y := func(v float64) string { return F1(chartPad + (chartH-chartPad-2)*(1-v/top)) }
	b.WriteString(`<figure class="chart" data-testid="chart-` + name + `"><figcaption>` + esc(title) + ` <span class="legend-inline">` + legend +
		`</span></figcaption><svg viewBox="0 0 ` + itoa(chartW) + ` ` + itoa(chartH+chartAxisH) + `" role="img" aria-label="` + esc(title) + `">` +
		`<line class="axis" x1="0" y1="` + itoa(chartH-1) + `" x2="` + itoa(chartW) + `" y2="` + itoa(chartH-1) + `"/>` +
		`<line class="axis" x1="` + itoa(chartLeft) + `" y1="` + itoa(chartPad) + `" x2="` + itoa(chartLeft) + `" y2="` + itoa(chartH-1) + `"/>` +
		`<text class="scale" x="3" y="10">` + esc(c.T("stage.chart.unit."+unit, F1(top))) + `</text>` +
		`<text class="scale" x="3" y="` + itoa(chartH-3) + `">0</text>` +
		`<text class="scale" x="0" y="` + itoa(chartH+chartAxisH-1) + `">` + esc(c.T("stage.chart.x.from", itoa(int32(ChartWindow.Seconds())))) + `</text>` +
		`<text class="scale" x="` + itoa(chartW) + `" y="` + itoa(chartH+chartAxisH-1) + `" text-anchor="end">` + esc(c.T("stage.chart.x.now")) + `</text>`)
	for _, l := range lines {
		if dots {
			b.WriteString(`<g class="dots ` + l.cls + `">`)
			for _, p := range l.s {
				if p.t >= lo {
					b.WriteString(`<circle r="2.5" cx="` + x(p.t) + `" cy="` + y(p.v) + `"/>`)
				}
			}
			b.WriteString(`</g>`)
			continue
		}
		var pts strings.Builder
		for i, p := range l.s {
			if p.t < lo && (i+1 < len(l.s) && l.s[i+1].t < lo) {
				continue
			}
			// A step line: values hold until the next sample.
			if i > 0 {
				pts.WriteString(x(max(p.t, lo)) + "," + y(l.s[i-1].v) + " ")
			}
			pts.WriteString(x(max(p.t, lo)) + "," + y(p.v) + " ")
		}
		if n := len(l.s); n > 0 {
			pts.WriteString(x(ch.now) + "," + y(l.s[n-1].v))
		}
		b.WriteString(`<polyline class="` + l.cls + `" points="` + pts.String() + `"/>`)
	}
	b.WriteString(`</svg></figure>`)
}

func sortedKeys(m map[int32]series) []int32 {
	ks := make([]int32, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
