package broker

import (
	"sync"
	"testing"

	"tidemark/events"
)

// gatedPublisher records what it publishes and holds the publication of a
// HW event at hold until release is closed.
type gatedPublisher struct {
	hold    int64
	held    chan struct{} // closed when the held publication waits
	release chan struct{}
	seen    chan int64 // every published HW, in order

	once sync.Once
}

func (p *gatedPublisher) Publish(evs ...events.Event) events.Event {
	for _, e := range evs {
		if e.Kind != events.KindHW || e.Topic != "order" {
			continue
		}
		if e.Offsets.HW == p.hold {
			p.once.Do(func() { close(p.held) })
			<-p.release
		}
		p.seen <- e.Offsets.HW
	}
	return events.Event{}
}

// TestReplicaEventsPublishedInOrder: two changes of one replica, the first
// made and unlocked before the second, are published in that order even
// when the first one's publication is slow (it was not: each unlock
// published its outbox on its own, so a leader's HW went back on the bus,
// hw 1598 then 1597).
func TestReplicaEventsPublishedInOrder(t *testing.T) {
	pub := &gatedPublisher{hold: 5, held: make(chan struct{}), release: make(chan struct{}), seen: make(chan int64, 4)}
	ctl, brokers := startBrokers(t, 1, pausedClock{}, nil, pub, nil)
	if _, err := ctl.CreateTopic("order", 1, 1, nil); err != nil {
		t.Fatal(err)
	}
	brokers[1].RefreshMetadata()
	r := brokers[1].replicaFor("order", 0)
	report := func(hw int64) {
		r.mu.Lock()
		ev := r.event(events.KindHW)
		ev.Offsets = &events.Offsets{HW: hw}
		r.emit(ev)
		r.unlock(nil)
	}
	waiting := make(chan struct{})
	r.mu.Lock()
	r.awaitingTurn = func() { close(waiting) }
	r.mu.Unlock()

	go report(5) // made first; its publication is held
	<-pub.held
	go report(6) // made second
	select {
	case hw := <-pub.seen:
		t.Fatalf("hw %d published while hw 5, made before it, was still being published", hw)
	case <-waiting: // the second waits for the first's turn
	}
	close(pub.release)
	if a, b := <-pub.seen, <-pub.seen; a != 5 || b != 6 {
		t.Fatalf("published hw %d then %d, want 5 then 6", a, b)
	}
}
