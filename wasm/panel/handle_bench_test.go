package panel

import (
	"strconv"
	"testing"

	"tidemark/events"
)

// BenchmarkHandle feeds the panel's state a produce stream as the lab sends
// it at 1,000 rec/s (5 records a batch on demo's 3 partitions, each batch
// the leader's append, the followers' appends and late values, the HW),
// 12 events a message, past MaxHistory so the timeline's bound is paid.
func BenchmarkHandle(b *testing.B) {
	snap := &events.Snapshot{Brokers: []events.Broker{{ID: 1}, {ID: 2}, {ID: 3}}}
	t := events.Topic{Name: "demo"}
	for p := range int32(3) {
		t.Partitions = append(t.Partitions, events.Partition{Partition: p, Leader: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3},
			ReplicaLogs: []events.Replica{{Broker: 1}, {Broker: 2}, {Broker: 3}}})
	}
	snap.Topics = []events.Topic{t}
	var leo [3]int64
	seq := uint64(0)
	msg := func() events.Message {
		var evs []events.Event
		for len(evs) < 12 {
			p := int32(seq/6) % 3
			base := leo[p]
			leo[p] += 5
			recs := make([]events.Record, 5)
			for i := range recs {
				recs[i] = events.Record{Offset: base + int64(i), Value: "v" + strconv.FormatInt(base+int64(i), 10)}
			}
			off := &events.Offsets{Base: base, Last: base + 4, LEO: base + 5, HW: base + 5}
			add := func(e events.Event) {
				seq++
				e.Seq, e.Topic, e.Partition, e.Offsets = seq, "demo", p, off
				evs = append(evs, e)
			}
			add(events.Event{Kind: events.KindAppend, Broker: 1, Records: recs})
			for br := int32(2); br <= 3; br++ {
				add(events.Event{Kind: events.KindAppend, Broker: br})
				add(events.Event{Kind: events.KindRecords, Broker: br, Records: recs})
			}
			add(events.Event{Kind: events.KindHW, Broker: 1})
		}
		return events.Message{Type: events.MessageEvents, Events: evs}
	}
	msgs := make([]events.Message, (2*MaxHistory)/12+b.N)
	for i := range msgs {
		msgs[i] = msg()
	}
	s := NewState()
	s.Handle(events.Message{Type: events.MessageSnapshot, Snapshot: snap})
	warm := (2 * MaxHistory) / 12
	for _, m := range msgs[:warm] {
		s.Handle(m)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for _, m := range msgs[warm:] {
		s.Handle(m)
	}
}
