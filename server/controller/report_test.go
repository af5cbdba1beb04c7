package controller

import (
	"testing"

	"tidemark/events"
)

// lockProbe is a Publisher that checks, at each Publish, whether the
// controller's mutex is free.
type lockProbe struct {
	c      *Controller
	calls  int
	locked int
	kinds  []events.Kind
}

func (p *lockProbe) Publish(evs ...events.Event) events.Event {
	p.calls++
	if p.c.mu.TryLock() {
		p.c.mu.Mutex.Unlock()
	} else {
		p.locked++
	}
	for _, e := range evs {
		p.kinds = append(p.kinds, e.Kind)
	}
	return events.Event{}
}

// TestEventsPublishedOutsideTheMutex: the controller publishes a change's
// events after releasing its mutex (its outbox), so a reporter may read the
// controller's state while it publishes; the caller finds them published
// when its call returns.
func TestEventsPublishedOutsideTheMutex(t *testing.T) {
	p := &lockProbe{}
	c, err := Open(t.TempDir(), Options{Now: newClock().Now, Events: p})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p.c = c
	for id := int32(1); id <= 2; id++ {
		epoch, err := c.RegisterBroker(id, "b")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Heartbeat(id, epoch); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.CreateTopic("t", 1, 2, nil); err != nil {
		t.Fatal(err)
	}
	if p.calls == 0 || p.locked != 0 {
		t.Fatalf("%d of %d publications under the controller's mutex", p.locked, p.calls)
	}
	if p.kinds[len(p.kinds)-1] != events.KindTopic && p.kinds[len(p.kinds)-1] != events.KindElection {
		t.Fatalf("the topic's events were not published by the time CreateTopic returned: %v", p.kinds)
	}
}
