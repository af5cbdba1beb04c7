package events

import (
	"strconv"
	"testing"
)

// benchSnapshot is the demo topic as the lab starts it: 3 partitions, each
// on brokers 1–3.
func benchSnapshot() Snapshot {
	s := Snapshot{Controller: 0}
	t := Topic{Name: "demo"}
	for p := range int32(3) {
		t.Partitions = append(t.Partitions, Partition{Partition: p, Leader: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3},
			ReplicaLogs: []Replica{{Broker: 1}, {Broker: 2}, {Broker: 3}}})
	}
	for id := range int32(3) {
		s.Brokers = append(s.Brokers, Broker{ID: id + 1, State: BrokerUp})
	}
	s.Topics = []Topic{t}
	return s
}

// benchStream returns n events as a lab producing 5 records at a time to
// demo sends them: per batch, the leader's append, each follower's append
// and its late-decoded records, and the HW moving.
func benchStream(n int) []Event {
	evs := make([]Event, 0, n)
	leo := [3]int64{}
	for seq, batch := uint64(1), 0; len(evs) < n; batch++ {
		p := int32(batch % 3)
		base := leo[p]
		recs := make([]Record, 5)
		for i := range recs {
			recs[i] = Record{Offset: base + int64(i), Value: "v" + strconv.FormatInt(base+int64(i), 10)}
		}
		leo[p] += 5
		off := &Offsets{Base: base, Last: base + 4, LEO: base + 5, HW: base + 5}
		add := func(e Event) {
			e.Seq, e.Topic, e.Partition = seq, "demo", p
			seq++
			evs = append(evs, e)
		}
		add(Event{Kind: KindAppend, Broker: 1, Offsets: off, Records: recs})
		for b := int32(2); b <= 3; b++ {
			add(Event{Kind: KindAppend, Broker: b, Offsets: off, Records: make([]Record, 0)})
			add(Event{Kind: KindRecords, Broker: b, Offsets: off, Records: recs})
		}
		add(Event{Kind: KindHW, Broker: 1, Offsets: off})
	}
	return evs[:n]
}

// BenchmarkApply applies a produce stream's events to a snapshot whose
// record windows are full.
func BenchmarkApply(b *testing.B) {
	s := benchSnapshot()
	evs := benchStream(1000 + b.N)
	for _, e := range evs[:1000] {
		s.Apply(e)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for _, e := range evs[1000:] {
		s.Apply(e)
	}
}

// TestApplyWindowSlides: a long produce stream leaves every replica the
// newest RecordWindow records, in offset order, with their values.
func TestApplyWindowSlides(t *testing.T) {
	s := benchSnapshot()
	for _, e := range benchStream(3000) {
		s.Apply(e)
	}
	for _, p := range s.Topics[0].Partitions {
		for _, r := range p.ReplicaLogs {
			if len(r.Records) != RecordWindow {
				t.Fatalf("p%d broker %d: %d records", p.Partition, r.Broker, len(r.Records))
			}
			for i, rec := range r.Records {
				want := r.LEO - RecordWindow + int64(i)
				if rec.Offset != want || rec.Value != "v"+strconv.FormatInt(want, 10) {
					t.Fatalf("p%d broker %d: record %d is %+v, want offset %d", p.Partition, r.Broker, i, rec, want)
				}
			}
		}
	}
}
