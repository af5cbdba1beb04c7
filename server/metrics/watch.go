package metrics

import (
	"strconv"
	"sync/atomic"

	"tidemark/events"
)

// watch feeds one cluster's events into the counters. Its goroutine alone
// owns parts: each partition's leader and ISR size, which an event needs to
// say whose ISR shrank or grew and whose append was a produce.
type watch struct {
	m     *Metrics
	id    string
	src   Source
	sub   *events.Subscription
	parts map[partitionKey]partitionState
	last  uint64 // Seq of the last event counted
	// counted is last for other goroutines (tests wait on it).
	counted atomic.Uint64
	quit    chan struct{}
	done    chan struct{}
}

type partitionKey struct {
	topic     string
	partition int32
}

type partitionState struct {
	leader int32
	isr    int
}

// startWatch subscribes before taking the snapshot the counting starts
// from, so no event falls between the two.
func startWatch(m *Metrics, id string, src Source) *watch {
	w := &watch{m: m, id: id, src: src, sub: src.Bus().Subscribe(), quit: make(chan struct{}), done: make(chan struct{})}
	w.reseed()
	go w.run()
	return w
}

func (w *watch) stop() {
	close(w.quit)
	<-w.done
	w.sub.Close()
}

// reseed takes the partitions' leaders and ISRs from a fresh snapshot.
func (w *watch) reseed() {
	snap := w.src.Snapshot()
	w.parts = map[partitionKey]partitionState{}
	for _, b := range snap.Brokers { // a counter shows from 0, not from its first change
		w.m.isrShrinks.WithLabelValues(w.id, brokerLabel(b.ID))
		w.m.isrExpands.WithLabelValues(w.id, brokerLabel(b.ID))
	}
	for _, t := range snap.Topics {
		w.addTopic(t)
	}
	w.last = snap.Seq
	w.counted.Store(w.last)
}

func (w *watch) addTopic(t events.Topic) {
	for _, p := range t.Partitions {
		w.parts[partitionKey{t.Name, p.Partition}] = partitionState{leader: p.Leader, isr: len(p.ISR)}
	}
}

func (w *watch) run() {
	defer close(w.done)
	for {
		select {
		case <-w.quit:
			return
		case <-w.sub.Ready():
		}
		evs, lagged := w.sub.Drain()
		if lagged {
			evs = w.fillGap(evs)
		}
		for _, e := range evs {
			if e.Seq > w.last {
				w.count(e)
				w.last = e.Seq
			}
		}
		w.counted.Store(w.last)
	}
}

// fillGap takes the events a lag dropped from the bus's history. When the
// history no longer holds them either, counting goes on from a fresh
// snapshot: the missed events are not counted.
func (w *watch) fillGap(evs []events.Event) []events.Event {
	if len(evs) == 0 {
		return evs
	}
	gap := int(evs[0].Seq - w.last - 1)
	if gap <= 0 {
		return evs
	}
	missed, oldest := w.src.Bus().Since(w.last, gap)
	if oldest > w.last+1 || len(missed) < gap {
		w.m.logger.Warn("metrics: events missed; counters skip them", "cluster", w.id, "from", w.last+1, "to", evs[0].Seq-1)
		w.reseed()
		return evs
	}
	return append(missed, evs...)
}

// count applies one event to the counters.
func (w *watch) count(e events.Event) {
	key := partitionKey{e.Topic, e.Partition}
	switch e.Kind {
	case events.KindTopic:
		if e.TopicCreated != nil {
			w.addTopic(*e.TopicCreated)
			return
		}
		for k := range w.parts {
			if k.topic == e.Topic {
				delete(w.parts, k)
			}
		}
	case events.KindElection:
		p, ok := w.parts[key]
		if !ok || e.Leader == nil {
			return
		}
		p.leader = e.Leader.Leader
		if e.ISR != nil {
			p = w.isrChanged(p, len(e.ISR))
		}
		w.parts[key] = p
	case events.KindISR:
		if p, ok := w.parts[key]; ok {
			w.parts[key] = w.isrChanged(p, len(e.ISR))
		}
	case events.KindAppend:
		p, ok := w.parts[key]
		if ok && e.Broker == p.leader && e.Offsets != nil && e.Offsets.Last >= e.Offsets.Base {
			w.m.messagesIn.WithLabelValues(w.id, brokerLabel(e.Broker), e.Topic).Add(float64(e.Offsets.Last - e.Offsets.Base + 1))
		}
	}
}

// isrChanged counts a shrink or an expansion against the partition's
// leader (Kafka counts them on the leader, which proposes them).
func (w *watch) isrChanged(p partitionState, isr int) partitionState {
	if p.leader != events.NoBroker {
		switch {
		case isr < p.isr:
			w.m.isrShrinks.WithLabelValues(w.id, brokerLabel(p.leader)).Inc()
		case isr > p.isr:
			w.m.isrExpands.WithLabelValues(w.id, brokerLabel(p.leader)).Inc()
		}
	}
	p.isr = isr
	return p
}

func brokerLabel(id int32) string { return strconv.Itoa(int(id)) }
