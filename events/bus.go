//go:build !(js && wasm)

package events

import (
	"sync"
	"time"
)

// BusOptions configures a Bus. The zero value gives the defaults.
type BusOptions struct {
	// History is how many recent events the Bus keeps for Since (default 4096).
	History int
	// QueueLen is how many events a Subscription holds before it is marked as
	// lagging and its queue is dropped (default 256).
	QueueLen int
	// Now stamps events whose Time is zero (default time.Now).
	Now func() time.Time
}

// Bus numbers events and fans them out to subscribers. Publish never blocks on
// a subscriber: the brokers must never wait on the UI. A subscriber whose queue
// is full loses its queue and is told it lagged, so it can start over from a
// fresh Snapshot; memory stays bounded by History + QueueLen per subscriber.
//
// Bus.mu guards the Bus; each Subscription's own mutex guards its queue.
// Lock order: Bus.mu before Subscription.mu. Notification is a non-blocking
// send on a channel of capacity 1.
type Bus struct {
	mu    sync.Mutex
	opts  BusOptions
	seq   uint64
	ring  []Event // ring buffer of the newest len(ring) events
	head  int     // index of the oldest event in ring when full
	subs  map[*Subscription]struct{}
	lags  uint64
	count int // events in ring
}

// NewBus returns an empty Bus; its first event gets Seq 1.
func NewBus(opts BusOptions) *Bus {
	if opts.History <= 0 {
		opts.History = 4096
	}
	if opts.QueueLen <= 0 {
		opts.QueueLen = 256
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Bus{opts: opts, ring: make([]Event, opts.History), subs: make(map[*Subscription]struct{})}
}

// Publish numbers the events in order (Seq), stamps a zero Time with the Bus's
// clock, records them and queues them for every subscriber, all atomically: no
// other event comes between them. It returns the last event as published, or
// the zero Event when called with none. It never blocks on subscribers.
func (b *Bus) Publish(evs ...Event) Event {
	if len(evs) == 0 {
		return Event{}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.opts.Now()
	var last Event
	for _, e := range evs {
		b.seq++
		e.Seq = b.seq
		if e.Time.IsZero() {
			e.Time = now
		}
		b.ring[(b.head+b.count)%len(b.ring)] = e
		if b.count < len(b.ring) {
			b.count++
		} else {
			b.head = (b.head + 1) % len(b.ring)
		}
		for s := range b.subs {
			if s.push(e, b.opts.QueueLen) {
				b.lags++
			}
		}
		last = e
	}
	return last
}

// LastSeq returns the Seq of the newest event; 0 before the first.
func (b *Bus) LastSeq() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.seq
}

// Lags returns how many times a subscriber fell behind and lost its queue.
func (b *Bus) Lags() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lags
}

// Since returns up to limit recorded events with Seq > since, oldest first, and
// the Seq of the oldest event still recorded (0 when none is). Events older than
// that have been forgotten; a caller that asked for them sees a gap. A limit
// ≤ 0 means History.
func (b *Bus) Since(since uint64, limit int) (evs []Event, oldest uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.count == 0 {
		return nil, 0
	}
	oldest = b.ring[b.head].Seq
	if limit <= 0 || limit > b.count {
		limit = b.count
	}
	start := 0 // position (from head) of the first event with Seq > since
	if since >= oldest {
		start = int(min(since-oldest+1, uint64(b.count)))
	}
	n := min(limit, b.count-start)
	evs = make([]Event, n)
	for i := range n {
		evs[i] = b.ring[(b.head+start+i)%len(b.ring)]
	}
	return evs, oldest
}

// Subscribe returns a Subscription that receives every event published from now
// on, until Close.
func (b *Bus) Subscribe() *Subscription { return b.SubscribeQueue(0) }

// SubscribeQueue is Subscribe with a queue of n events instead of
// BusOptions.QueueLen (n ≤ 0: QueueLen), for a consumer whose bursts are
// larger than a page's, such as the history's writer.
func (b *Bus) SubscribeQueue(n int) *Subscription {
	s := &Subscription{bus: b, ready: make(chan struct{}, 1), max: n}
	b.mu.Lock()
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	return s
}

// Subscribers returns how many Subscriptions are open.
func (b *Bus) Subscribers() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs)
}

// Subscription is one subscriber's bounded queue of events. Its methods are
// safe to call from any goroutine; Ready and Drain are meant for one consumer.
type Subscription struct {
	bus    *Bus
	ready  chan struct{} // capacity 1: "something to drain"
	mu     sync.Mutex    // guards queue and lagged; taken inside Bus.mu by push
	queue  []Event
	lagged bool
	max    int // queue length; 0: the Bus's QueueLen
}

// push queues e and reports whether that made s lag (its queue was full).
func (s *Subscription) push(e Event, max int) (lagged bool) {
	if s.max > 0 {
		max = s.max
	}
	s.mu.Lock()
	if len(s.queue) >= max {
		// Drop the backlog instead of growing: the consumer will start over from
		// a fresh snapshot, which includes every event dropped here.
		s.queue = s.queue[:0]
		s.lagged = true
		lagged = true
	}
	s.queue = append(s.queue, e)
	s.mu.Unlock()
	select {
	case s.ready <- struct{}{}:
	default:
	}
	return lagged
}

// Ready returns a channel that receives a value when Drain has something to
// return. It is never closed.
func (s *Subscription) Ready() <-chan struct{} { return s.ready }

// Drain returns the queued events in Seq order and whether the subscriber
// lagged since the last Drain. After a lag the events before the returned ones
// were dropped: the consumer must take a fresh Snapshot and skip returned events
// whose Seq is not above the Snapshot's Seq.
func (s *Subscription) Drain() (evs []Event, lagged bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	evs, lagged = s.queue, s.lagged
	// The next queue starts as large as this one was: a steady stream then
	// allocates it once per drain instead of growing it from nothing, and
	// an idle subscriber keeps none.
	s.queue, s.lagged = nil, false
	if len(evs) > 0 {
		s.queue = make([]Event, 0, len(evs))
	}
	return evs, lagged
}

// Close stops delivery to s and frees its queue; calling it again does nothing.
func (s *Subscription) Close() {
	s.bus.mu.Lock()
	delete(s.bus.subs, s)
	s.bus.mu.Unlock()
	s.mu.Lock()
	s.queue = nil
	s.mu.Unlock()
}
