//go:build !(js && wasm)

package panel

import (
	"testing"
	"time"

	"tidemark/events"
)

// BenchmarkChartsHTML draws the charts after a stream at 1,000 rec/s: a
// sample a frame (50 a second of lab time) for two minutes, as the page
// observes one under the benchmark.
func BenchmarkChartsHTML(b *testing.B) {
	ch := streamCharts(120 * 50)
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	for range b.N {
		n += len(ch.HTML(en))
	}
	b.ReportMetric(float64(n/b.N), "bytes")
}

// streamCharts returns Charts that observed frames frames of a produce
// stream, 20 ms of lab time apart.
func streamCharts(frames int) *Charts {
	snap := &events.Snapshot{Topics: []events.Topic{{Name: "demo", Partitions: []events.Partition{{Leader: 1, ISR: []int32{1, 2, 3},
		ReplicaLogs: []events.Replica{{Broker: 1}, {Broker: 2}, {Broker: 3}}}}}}}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var ch Charts
	p := &snap.Topics[0].Partitions[0]
	for i := range frames {
		at := t0.Add(time.Duration(i) * 20 * time.Millisecond)
		for r := range p.ReplicaLogs {
			p.ReplicaLogs[r].LEO += 7
			p.ReplicaLogs[r].HW += 6
		}
		ch.Observe(snap, []events.Event{
			{Seq: uint64(3 * i), Time: at, Kind: events.KindProduceRequest, Acks: events.AcksLeader, Topic: "demo", Wire: &events.Wire{Client: UIClient}},
			{Seq: uint64(3*i + 1), Time: at, Kind: events.KindAppend, Broker: 1, Topic: "demo", Offsets: &events.Offsets{Base: 0, Last: 6}},
			{Seq: uint64(3*i + 2), Time: at.Add(3 * time.Millisecond), Kind: events.KindAck, Acks: events.AcksLeader, Topic: "demo", Offsets: &events.Offsets{Base: 0, Last: 6}},
		})
	}
	return &ch
}

// TestChartsWindow: under a stream (a sample a frame, 50 a second of lab
// time) the LEO and HW lines still span the whole window, not its last
// maxPoints frames, and a short change of the ISR size is kept.
func TestChartsWindow(t *testing.T) {
	ch := streamCharts(120 * 50)
	for id, s := range ch.leo {
		if len(s) > maxPoints || s[0].t > ch.now-ChartWindow.Seconds()+1 {
			t.Errorf("broker %d: %d samples from %.1f s at %.1f s, want the last %v", id, len(s), s[0].t, ch.now, ChartWindow)
		}
	}
	var s series
	s = s.add(point{10.00, 3}, sampleEvery, true)
	s = s.add(point{10.02, 2}, sampleEvery, true)
	s = s.add(point{10.04, 3}, sampleEvery, true)
	s = s.add(point{10.06, 3}, sampleEvery, true)
	if len(s) != 3 || s[1].v != 2 || s[2].t != 10.06 {
		t.Errorf("ISR sizes %v, want the shrink to 2 kept and the last sample moved on", s)
	}
}
