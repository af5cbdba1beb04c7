package cluster

import (
	"sync"
	"time"

	"tidemark/events"
)

// messageSample is how often, at most, a message of one kind on one link is
// published while the clock runs (lab time, so the stage's traffic keeps
// its density at every rate): enough for the stage to show traffic on
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
	// holding keeps the messages it lets through in held instead of
	// publishing them (Cluster.StepToEvent: only the step that reached
	// an event shows its messages).
	holding bool
	held    []events.Event
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
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.holding {
			g.held = append(g.held, e)
			return false
		}
		return true
	}
	k := messageKey{e.Kind, e.Wire.From, e.Wire.To}
	now := g.clock.Now()
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

// due reports how many of n message events of kind on the link from→to
// allow would let through now, recording nothing: all while the clock is
// paused (held ones included), at most one per messageSample while it runs.
func (g *messageGate) due(kind events.Kind, from, to int32, n int) int {
	if !g.on {
		return 0
	}
	if g.clock.Paused() {
		return n
	}
	now := g.clock.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	if now.Sub(g.last[messageKey{kind, from, to}]) < messageSample {
		return 0
	}
	return min(n, 1)
}

// hold starts keeping the messages let through (paused) instead of
// publishing them.
func (g *messageGate) hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.holding, g.held = true, nil
}

// drop forgets the messages held so far and keeps holding.
func (g *messageGate) drop() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held = nil
}

// release stops holding and returns what was held.
func (g *messageGate) release() []events.Event {
	g.mu.Lock()
	defer g.mu.Unlock()
	held := g.held
	g.holding, g.held = false, nil
	return held
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
