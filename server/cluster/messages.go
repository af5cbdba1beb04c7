package cluster

import (
	"sync"
	"time"

	"tidemark/events"
)

// messageSample is how often, at most, a message of one kind on one link is
// published while the clock runs: enough for the stage to show traffic on
// every link, few enough that 1,000 records a second do not drown the panel.
const messageSample = time.Second

// messageGate bounds the message events (events.Kind.IsMessage): none unless
// the cluster was opened with MessageEvents; every one while the clock is
// paused (a learner steps them); while it runs, one per kind and link per
// messageSample.
type messageGate struct {
	on    bool
	mu    sync.Mutex
	last  map[messageKey]time.Time
	clock *Clock
}

type messageKey struct {
	kind     events.Kind
	from, to int32
}

// keep returns evs without the message events the gate does not let
// through; it copies only when it drops one, and never changes evs.
func (g *messageGate) keep(evs []events.Event) []events.Event {
	for i, e := range evs {
		if e.Kind.IsMessage() && !g.allow(e) {
			out := append([]events.Event(nil), evs[:i]...)
			for _, e := range evs[i+1:] {
				if !e.Kind.IsMessage() || g.allow(e) {
					out = append(out, e)
				}
			}
			return out
		}
	}
	return evs
}

func (g *messageGate) allow(e events.Event) bool {
	if !g.on || e.Wire == nil {
		return false
	}
	if g.clock.Paused() {
		return true
	}
	k := messageKey{e.Kind, e.Wire.From, e.Wire.To}
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	if now.Sub(g.last[k]) < messageSample {
		return false
	}
	if g.last == nil {
		g.last = map[messageKey]time.Time{}
	}
	g.last[k] = now
	return true
}

// publishMessage publishes one message event from the cluster itself (the
// controller's side of a link).
func (c *Cluster) publishMessage(kind events.Kind, broker int32, w events.Wire, fill func(*events.Event)) {
	if !c.messages.on {
		return // no message events in this lab: build none
	}
	e := events.Event{Kind: kind, Broker: broker, Wire: &w}
	if fill != nil {
		fill(&e)
	}
	publisher{c}.Publish(e)
}

// UIClientID is the client id the stage shows for the lab's own producer
// (Cluster.Produce, the page's produce form).
const UIClientID = "tidemark-ui"

// acksName spells a produce request's acks as Kafka's configs do.
func acksName(acks int16) events.Acks { return events.AcksOf(acks) }
