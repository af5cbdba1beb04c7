package controller

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/events"
	"tidemark/i18n"
	"tidemark/replication"
)

// clock is a stepped test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Step(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// lab is a controller on a real badger store with a stepped clock and a bus.
type lab struct {
	t      *testing.T
	dir    string
	clk    *clock
	bus    *events.Bus
	c      *Controller
	epochs map[int32]int64
	rule   FencingRule
}

// newLab is a lab under the ZooKeeper-era fencing rule, which most tests
// here were written for; newRuleLab picks another.
func newLab(t *testing.T) *lab { return newRuleLab(t, FencingZooKeeper) }

func newRuleLab(t *testing.T, rule FencingRule) *lab {
	t.Helper()
	l := &lab{t: t, dir: t.TempDir(), clk: newClock(), epochs: map[int32]int64{}, rule: rule}
	l.bus = events.NewBus(events.BusOptions{Now: l.clk.Now, History: 1 << 16})
	l.open()
	return l
}

// reporter renders the facts' messages before the bus, as the lab's does.
type reporter struct{ bus *events.Bus }

func (r reporter) Publish(evs ...events.Event) events.Event {
	for i := range evs {
		i18n.Fill(&evs[i])
	}
	return r.bus.Publish(evs...)
}

func (l *lab) open() {
	l.t.Helper()
	c, err := Open(l.dir, Options{Now: l.clk.Now, Events: reporter{l.bus}, FencingRule: &l.rule})
	if err != nil {
		l.t.Fatalf("Open: %v", err)
	}
	l.c = c
	l.t.Cleanup(func() { c.Close() })
}

func (l *lab) reopen() {
	l.t.Helper()
	if err := l.c.Close(); err != nil {
		l.t.Fatalf("Close: %v", err)
	}
	l.open()
}

// start registers brokers and heartbeats them once, so they are unfenced.
func (l *lab) start(ids ...int32) {
	l.t.Helper()
	for _, id := range ids {
		ep, err := l.c.RegisterBroker(id, "127.0.0.1:0")
		if err != nil {
			l.t.Fatalf("RegisterBroker(%d): %v", id, err)
		}
		l.epochs[id] = ep
		l.beat(id)
	}
}

func (l *lab) beat(ids ...int32) {
	l.t.Helper()
	for _, id := range ids {
		if _, err := l.c.Heartbeat(id, l.epochs[id]); err != nil {
			l.t.Fatalf("Heartbeat(%d): %v", id, err)
		}
	}
}

func (l *lab) create(name string, partitions int32, rf int16, configs map[string]string) Topic {
	l.t.Helper()
	tp, err := l.c.CreateTopic(name, partitions, rf, configs)
	if err != nil {
		l.t.Fatalf("CreateTopic(%s): %v", name, err)
	}
	return tp
}

func (l *lab) part(topic string, p int32) Partition {
	l.t.Helper()
	tp, ok := l.c.Topic(topic)
	if !ok || int(p) >= len(tp.Partitions) {
		l.t.Fatalf("no partition %s-%d", topic, p)
	}
	return tp.Partitions[p]
}

// alterISR proposes isr as p's leader with the current epochs and requires acceptance.
func (l *lab) alterISR(topic string, p int32, isr ...int32) replication.AlterPartitionResponse {
	l.t.Helper()
	cur := l.part(topic, p)
	r := l.c.AlterPartition(topic, p, cur.Leader, l.epochs[cur.Leader], replication.AlterPartitionRequest{
		BrokerID: cur.Leader, LeaderEpoch: cur.LeaderEpoch, PartitionEpoch: cur.PartitionEpoch, NewISR: isr})
	if r.Err != nil {
		l.t.Fatalf("AlterPartition(%s-%d, %v): %v", topic, p, isr, r.Err)
	}
	return r
}

// want checks a partition's leader, ISR and epochs.
func (l *lab) want(topic string, p int32, leader int32, isr []int32, leaderEpoch, partitionEpoch int32) {
	l.t.Helper()
	got := l.part(topic, p)
	if got.Leader != leader || !slices.Equal(got.ISR, isr) || got.LeaderEpoch != leaderEpoch || got.PartitionEpoch != partitionEpoch {
		l.t.Fatalf("%s-%d: leader %d ISR %v epochs %d/%d; want leader %d ISR %v epochs %d/%d", topic, p,
			got.Leader, got.ISR, got.LeaderEpoch, got.PartitionEpoch, leader, isr, leaderEpoch, partitionEpoch)
	}
}

// events returns every event published so far.
func (l *lab) events() []events.Event {
	evs, _ := l.bus.Since(0, 0)
	return evs
}

// eventsSince returns the events with Seq > seq.
func (l *lab) eventsSince(seq uint64) []events.Event {
	evs, _ := l.bus.Since(seq, 0)
	return evs
}

func wantErr(t *testing.T, err error, code *kerr.Error) {
	t.Helper()
	if !errors.Is(err, code) {
		t.Fatalf("error %v; want %s", err, code.Message)
	}
}

func ptr(s string) *string { return &s }

func (l *lab) meta() *Metadata {
	m := l.c.Metadata()
	return &m
}
