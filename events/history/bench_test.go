package history

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"tidemark/events"
)

// BenchmarkAppend times the history's append path against a baseline in
// the same run, interleaved round by round so that load from other
// processes hits both alike (as the storage benchmarks do; see the
// docs/benchmarks.md). One side publishes a round of events on a Bus
// that a Store follows and waits (Close) until the writer has written
// them: the handoff, the framing and CRC, the snapshot it applies them
// to and its checkpoints included. The other encodes the same events with
// encoding/json and writes them through a bufio.Writer to a file: the
// least a JSON log of events costs. ratio = history events/s ÷ baseline
// events/s.
func BenchmarkAppend(b *testing.B) {
	const round = 20000
	evs := make([]events.Event, round)
	for i := range evs {
		evs[i] = event(i)
	}
	dir := b.TempDir()
	var hist, base []time.Duration
	n := 0
	for range b.N {
		for r := range 5 {
			n++
			d := filepath.Join(dir, "h", string(rune('a'+r)))
			hist = append(hist, timeHistory(b, d, evs))
			base = append(base, timeBaseline(b, filepath.Join(dir, "base"), evs))
			os.RemoveAll(d)
		}
	}
	h, w := median(hist), median(base)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(round)/h.Seconds(), "history-ev/s")
	b.ReportMetric(float64(round)/w.Seconds(), "baseline-ev/s")
	b.ReportMetric(w.Seconds()/h.Seconds(), "ratio")
}

func timeHistory(b *testing.B, dir string, evs []events.Event) time.Duration {
	// The loop publishes faster than any lab (~10× the writer's pace): a
	// ring as long as the round lets the writer read back what its queue
	// dropped, as it would after a stall, instead of recording a gap.
	bus := events.NewBus(events.BusOptions{History: len(evs)})
	s, err := Open(Options{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	sub := bus.SubscribeQueue(s.QueueLen())
	start := time.Now()
	if err := s.Follow(bus, sub, events.Snapshot{}, func() events.Snapshot { return events.Snapshot{} }); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < len(evs); i += 16 { // a replica's outbox publishes a few at a time
		bus.Publish(evs[i:min(i+16, len(evs))]...)
	}
	s.Close()
	d := time.Since(start)
	if _, last := s.Bounds(); last != uint64(len(evs)) || len(s.Gaps()) > 0 {
		b.Fatalf("wrote up to %d with gaps %v", last, s.Gaps())
	}
	return d
}

func timeBaseline(b *testing.B, path string, evs []events.Event) time.Duration {
	start := time.Now()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 64<<10)
	for i := range evs {
		evs[i].Seq = uint64(i + 1)
		data, err := json.Marshal(&evs[i])
		if err != nil {
			b.Fatal(err)
		}
		w.Write(data)
		w.WriteByte('\n')
	}
	w.Flush()
	f.Close()
	return time.Since(start)
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
