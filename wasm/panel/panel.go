// Package panel is the live panel's state and rendering, kept free of
// syscall/js so it is tested natively; wasm/main.go only wires it to the DOM
// and the websocket. It renders HTML strings with every value escaped.
package panel

import (
	"html"
	"strconv"
	"strings"

	"tidemark/events"
)

// MaxRecent is how many recent events the panel lists.
const MaxRecent = 50

// State is what the panel knows: the lab's snapshot as of Snap.Seq, the most
// recent events (oldest first), and whether a snapshot has arrived on the
// current connection (Live).
type State struct {
	Snap      events.Snapshot
	Recent    []events.Event
	Live      bool
	Snapshots int // snapshots received, including fresh ones after falling behind
}

// Handle applies one websocket message: a snapshot replaces the state and makes
// it live; events newer than the snapshot are applied in order (older ones,
// already in the snapshot, are skipped). It reports whether anything changed.
func (s *State) Handle(m events.Message) bool {
	switch m.Type {
	case events.MessageSnapshot:
		if m.Snapshot == nil {
			return false
		}
		s.Snap = *m.Snapshot
		s.Live = true
		s.Snapshots++
		return true
	case events.MessageEvents:
		changed := false
		for _, e := range m.Events {
			if e.Seq <= s.Snap.Seq {
				continue
			}
			s.Snap.Apply(e)
			s.Recent = append(s.Recent, e)
			changed = true
		}
		if n := len(s.Recent) - MaxRecent; n > 0 {
			s.Recent = append(s.Recent[:0:0], s.Recent[n:]...)
		}
		return changed
	}
	return false
}

// Disconnected marks the state as no longer live (the stream ended).
func (s *State) Disconnected() { s.Live = false }

// Status returns the panel's status word: "live" or "connecting".
func (s *State) Status() string {
	if s.Live {
		return "live"
	}
	return "connecting"
}

// RenderBrokers returns the broker cards: id, state (word and shape), role
// (controller, how many partitions it leads) and listener.
func (s *State) RenderBrokers() string {
	var b strings.Builder
	for _, br := range s.Snap.Brokers {
		st := string(br.State)
		b.WriteString(`<div class="broker-card state-` + esc(st) + `" data-broker="` + itoa(br.ID) + `">`)
		b.WriteString(`<strong>broker ` + itoa(br.ID) + `</strong> `)
		b.WriteString(`<span class="badge state-` + esc(st) + `"><span aria-hidden="true">` + glyph(br.State) + `</span> ` + esc(st) + `</span>`)
		var roles []string
		if br.ID == s.Snap.Controller {
			roles = append(roles, "controller")
		}
		if n := s.leads(br.ID); n > 0 {
			roles = append(roles, "leader of "+strconv.Itoa(n))
		}
		if len(roles) > 0 {
			b.WriteString(`<div class="role">` + esc(strings.Join(roles, " · ")) + `</div>`)
		}
		b.WriteString(`<div><code>` + esc(br.Listener) + `</code></div></div>`)
	}
	return b.String()
}

func (s *State) leads(id int32) (n int) {
	for _, t := range s.Snap.Topics {
		for _, p := range t.Partitions {
			if p.Leader == id {
				n++
			}
		}
	}
	return n
}

// RenderLanes returns one row per partition: leader, epoch, ISR and a chip per
// replica with its LEO and HW (leader starred, replicas outside the ISR marked
// "out of sync"); the placeholder for the full replica lanes. Each chip
// carries data-topic, data-partition, data-broker, data-leo and data-hw.
func (s *State) RenderLanes() string {
	var b strings.Builder
	for _, t := range s.Snap.Topics {
		for _, p := range t.Partitions {
			b.WriteString(`<div class="lane-row"><span class="lane-name">` + esc(t.Name) + "-" + itoa(p.Partition) + `</span>`)
			b.WriteString(`<span class="lane-meta">leader ` + broker(p.Leader) + ` · epoch ` + itoa(p.LeaderEpoch) + ` · ISR ` + ids(p.ISR) + `</span>`)
			for _, r := range p.ReplicaLogs {
				cls, label := "replica", "broker "+itoa(r.Broker)
				if r.Broker == p.Leader {
					cls, label = cls+" leader", label+" ★"
				}
				if !contains(p.ISR, r.Broker) {
					cls, label = cls+" osr", label+" (out of sync)"
				}
				b.WriteString(`<span class="` + cls + `" data-topic="` + esc(t.Name) + `" data-partition="` + itoa(p.Partition) +
					`" data-broker="` + itoa(r.Broker) + `" data-leo="` + i64(r.LEO) + `" data-hw="` + i64(r.HW) + `">` +
					label + ` · LEO ` + i64(r.LEO) + ` · HW ` + i64(r.HW) + `</span>`)
			}
			b.WriteString(`</div>`)
		}
	}
	return b.String()
}

func contains(v []int32, x int32) bool {
	for _, y := range v {
		if y == x {
			return true
		}
	}
	return false
}

// RenderEvents returns the recent events as list items, newest first; items
// with Seq above newSince get the class "new" (a highlight that
// prefers-reduced-motion turns off).
func (s *State) RenderEvents(newSince uint64) string {
	var b strings.Builder
	for i := len(s.Recent) - 1; i >= 0; i-- {
		e := s.Recent[i]
		cls := "k-" + string(e.Kind)
		if e.Seq > newSince {
			cls += " new"
		}
		b.WriteString(`<li class="` + esc(cls) + `" data-seq="` + strconv.FormatUint(e.Seq, 10) + `">`)
		b.WriteString(`<span class="seq">#` + strconv.FormatUint(e.Seq, 10) + `</span>`)
		b.WriteString(`<span class="kind">` + esc(string(e.Kind)) + `</span>`)
		b.WriteString(esc(Describe(e)) + `</li>`)
	}
	return b.String()
}

// Describe returns a one-line English description of e, followed by its
// Message when it has one.
func Describe(e events.Event) string {
	tp := e.Topic + "-" + itoa(e.Partition)
	var d string
	switch e.Kind {
	case events.KindAppend:
		d = broker(e.Broker) + " appended to " + tp
		if o := e.Offsets; o != nil {
			d += " offsets " + i64(o.Base) + "–" + i64(o.Last) + " (LEO " + i64(o.LEO) + ")"
		}
	case events.KindFetch:
		d = broker(e.Broker) + " fetched " + tp
		if o := e.Offsets; o != nil {
			d += " from offset " + i64(o.Base) + " (leader HW " + i64(o.HW) + ")"
		}
	case events.KindHW:
		d = broker(e.Broker) + ": " + tp + " HW"
		if o := e.Offsets; o != nil {
			d += " → " + i64(o.HW)
		}
	case events.KindLEO:
		d = broker(e.Broker) + ": " + tp + " LEO"
		if o := e.Offsets; o != nil {
			d += " → " + i64(o.LEO)
		}
	case events.KindISR:
		d = tp + " ISR → " + ids(e.ISR)
	case events.KindElection:
		d = tp + " election"
		if l := e.Leader; l != nil {
			d = tp + " leader → " + broker(l.Leader) + ", epoch " + itoa(l.LeaderEpoch)
			if l.Unclean {
				d += " (unclean)"
			}
		}
	case events.KindEpoch:
		d = broker(e.Broker) + ": " + tp + " epoch"
		if l := e.Leader; l != nil {
			d += " " + itoa(l.LeaderEpoch) + " starts at offset " + i64(l.StartOffset)
		}
	case events.KindAck:
		d = "produce to " + tp + " acked (acks=" + string(e.Acks) + ")"
		if o := e.Offsets; o != nil {
			d += " offsets " + i64(o.Base) + "–" + i64(o.Last)
		}
	case events.KindProduceError:
		d = "produce to " + tp + " failed: " + e.Error + " (acks=" + string(e.Acks) + ")"
	case events.KindTruncation:
		d = broker(e.Broker) + " truncated " + tp
		if o := e.Offsets; o != nil {
			d += " to offset " + i64(o.LEO)
		}
		d += ", removed " + strconv.Itoa(len(e.Truncated)) + " record(s)"
	case events.KindFault:
		d = "fault"
		if f := e.Fault; f != nil {
			switch f.Kind {
			case events.FaultCut:
				arrow := " ↔ "
				if f.OneWay {
					arrow = " → "
				}
				d = "cut link " + itoa(f.From) + arrow + itoa(f.To)
			case events.FaultHeal:
				d = "healed all links"
			default:
				d = string(f.Kind) + " " + broker(e.Broker)
			}
		}
	case events.KindConfig:
		d = "config"
		if c := e.Config; c != nil {
			scope := "lab"
			if e.Topic != "" {
				scope = e.Topic
			}
			d = scope + ": " + c.Key + " = " + c.Value
			if c.Value == "" {
				d = scope + ": " + c.Key + " unset"
			}
		}
	case events.KindClock:
		d = "clock"
		if c := e.Clock; c != nil {
			switch c.Action {
			case events.ClockPause:
				d = "clock paused"
			case events.ClockResume:
				d = "clock resumed"
			case events.ClockStep:
				d = "clock stepped " + i64(c.StepMs) + " ms"
			}
		}
	case events.KindBroker:
		d = broker(e.Broker) + " is " + string(e.BrokerState)
	case events.KindTopic:
		if e.TopicCreated != nil {
			d = "topic " + e.TopicCreated.Name + " created with " + strconv.Itoa(len(e.TopicCreated.Partitions)) + " partition(s)"
		} else {
			d = "topic " + e.Topic + " deleted"
		}
	default:
		d = string(e.Kind)
	}
	if e.Message != "" {
		d += " — " + e.Message
	}
	return d
}

func esc(s string) string { return html.EscapeString(s) }
func itoa(v int32) string { return strconv.Itoa(int(v)) }
func i64(v int64) string  { return strconv.FormatInt(v, 10) }
func broker(id int32) string {
	if id == events.NoBroker {
		return "no broker"
	}
	return "broker " + itoa(id)
}

func ids(v []int32) string {
	if len(v) == 0 {
		return "[]"
	}
	parts := make([]string, len(v))
	for i, id := range v {
		parts[i] = itoa(id)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func glyph(st events.BrokerState) string {
	switch st {
	case events.BrokerUp:
		return "●"
	case events.BrokerCrashed:
		return "✕"
	case events.BrokerFenced:
		return "▲"
	}
	return "?"
}
