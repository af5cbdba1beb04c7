//go:build !(js && wasm)

package events

import (
	"encoding/json"
	"reflect"
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)

func fixedClock() time.Time { return t0 }

func seqs(evs []Event) []uint64 {
	out := make([]uint64, len(evs))
	for i, e := range evs {
		out[i] = e.Seq
	}
	return out
}

func TestPublishNumbersAndStamps(t *testing.T) {
	b := NewBus(BusOptions{Now: fixedClock})
	if got := b.Publish(); got.Seq != 0 {
		t.Fatalf("Publish() with no events = %+v, want zero Event", got)
	}
	e := b.Publish(Event{Kind: KindHW})
	if e.Seq != 1 || !e.Time.Equal(t0) {
		t.Fatalf("first event = seq %d time %v, want 1 %v", e.Seq, e.Time, t0)
	}
	own := t0.Add(time.Hour)
	e = b.Publish(Event{Kind: KindHW}, Event{Kind: KindLEO, Time: own})
	if e.Seq != 3 || !e.Time.Equal(own) {
		t.Fatalf("last of batch = seq %d time %v, want 3 %v", e.Seq, e.Time, own)
	}
	if b.LastSeq() != 3 {
		t.Fatalf("LastSeq = %d, want 3", b.LastSeq())
	}
}

func TestSinceRing(t *testing.T) {
	b := NewBus(BusOptions{History: 4, Now: fixedClock})
	if evs, oldest := b.Since(0, 10); evs != nil || oldest != 0 {
		t.Fatalf("empty bus Since = %v %d", evs, oldest)
	}
	for range 6 {
		b.Publish(Event{Kind: KindAppend})
	}
	// Seqs 3..6 are kept.
	cases := []struct {
		since      uint64
		limit      int
		want       []uint64
		wantOldest uint64
	}{
		{0, 0, []uint64{3, 4, 5, 6}, 3},
		{0, 2, []uint64{3, 4}, 3},
		{3, 10, []uint64{4, 5, 6}, 3},
		{5, -1, []uint64{6}, 3},
		{6, 10, []uint64{}, 3},
		{1 << 62, 10, []uint64{}, 3},
	}
	for _, c := range cases {
		evs, oldest := b.Since(c.since, c.limit)
		if got := seqs(evs); !reflect.DeepEqual(got, c.want) || oldest != c.wantOldest {
			t.Errorf("Since(%d,%d) = %v oldest %d, want %v oldest %d", c.since, c.limit, got, oldest, c.want, c.wantOldest)
		}
	}
}

func TestSubscriptionOrderAndLag(t *testing.T) {
	b := NewBus(BusOptions{QueueLen: 3, Now: fixedClock})
	s := b.Subscribe()
	defer s.Close()
	b.Publish(Event{}, Event{})
	select {
	case <-s.Ready():
	default:
		t.Fatal("Ready not signalled after Publish")
	}
	evs, lagged := s.Drain()
	if got := seqs(evs); !reflect.DeepEqual(got, []uint64{1, 2}) || lagged {
		t.Fatalf("Drain = %v lagged %v, want [1 2] false", got, lagged)
	}
	// Five events into a queue of three: the first three are dropped at the
	// fourth, so 4 and 5 remain, and the subscriber is told it lagged.
	b.Publish(Event{}, Event{}, Event{}, Event{}, Event{})
	evs, lagged = s.Drain()
	if got := seqs(evs); !reflect.DeepEqual(got, []uint64{6, 7}) || !lagged {
		t.Fatalf("Drain after overflow = %v lagged %v, want [6 7] true", got, lagged)
	}
	if b.Lags() != 1 {
		t.Fatalf("Lags = %d, want 1", b.Lags())
	}
	if evs, lagged = s.Drain(); len(evs) != 0 || lagged {
		t.Fatalf("second Drain = %v %v, want nothing", evs, lagged)
	}
	s.Close()
	s.Close()
	b.Publish(Event{})
	if evs, _ := s.Drain(); len(evs) != 0 || b.Subscribers() != 0 {
		t.Fatalf("closed subscription got %v; subscribers %d", evs, b.Subscribers())
	}
}

// TestConcurrentPublishers checks with -race that concurrent publishers and a
// consumer see one total order with no gaps unless a lag is reported.
func TestConcurrentPublishers(t *testing.T) {
	b := NewBus(BusOptions{QueueLen: 64})
	s := b.Subscribe()
	defer s.Close()
	const writers, each = 4, 500
	var wg sync.WaitGroup
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				b.Publish(Event{Kind: KindAppend})
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var last uint64
	check := func() {
		evs, lagged := s.Drain()
		for i, e := range evs {
			// Contiguous, except that a lag may skip ahead before the first event.
			gapOK := lagged && i == 0 && e.Seq > last
			if e.Seq != last+1 && !gapOK {
				t.Fatalf("seq %d after %d (lagged %v)", e.Seq, last, lagged)
			}
			last = e.Seq
		}
	}
	for {
		select {
		case <-s.Ready():
			check()
			continue
		case <-done:
		}
		break
	}
	check()
	if last != writers*each {
		t.Fatalf("last seq seen %d, want %d", last, writers*each)
	}
}

func TestMessageJSONRoundTrip(t *testing.T) {
	m := Message{Type: MessageEvents, Events: []Event{{
		Seq: 7, Time: t0, Kind: KindTruncation, Broker: 2, Topic: "demo", Partition: 1,
		Offsets:   &Offsets{LEO: 5},
		Truncated: []TruncatedRecord{{Offset: 5, LeaderEpoch: 1, Digest: Digest([]byte("k"), []byte("v"))}},
	}}}
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var back Message
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m, back) {
		t.Fatalf("round trip changed the message:\n%s\n%+v", raw, back)
	}
}

func TestDigest(t *testing.T) {
	a, b := Digest([]byte("ab"), []byte("c")), Digest([]byte("a"), []byte("bc"))
	if len(a) != 8 || a == b {
		t.Fatalf("Digest: %q %q; want 8 hex digits, key/value boundary significant", a, b)
	}
	if Digest(nil, nil) != Digest([]byte{}, []byte{}) {
		t.Fatal("Digest of nil and empty differ")
	}
}

func TestAcksValid(t *testing.T) {
	for _, a := range []Acks{"0", "1", "all"} {
		if !a.Valid() {
			t.Errorf("%q not valid", a)
		}
	}
	for _, a := range []Acks{"", "2", "ALL", "-1"} {
		if a.Valid() {
			t.Errorf("%q valid", a)
		}
	}
}

// BenchmarkPublish100Subscribers measures Publish with 100 subscribers that
// never drain: the cost the brokers pay per event however slow the UI is, and
// the memory stays at QueueLen per subscriber.
func BenchmarkPublish100Subscribers(b *testing.B) {
	bus := NewBus(BusOptions{QueueLen: 256})
	for range 100 {
		defer bus.Subscribe().Close()
	}
	e := Event{Kind: KindAppend, Topic: "demo", Offsets: &Offsets{LEO: 1}}
	b.ReportAllocs()
	for b.Loop() {
		bus.Publish(e)
	}
}

// BenchmarkPublishDrain measures the lab's steady stream: events published
// one at a time and drained every 10, as /ws drains them under its linger:
// one allocation per drain, the next queue as large as the last.
func BenchmarkPublishDrain(b *testing.B) {
	bus := NewBus(BusOptions{})
	s := bus.Subscribe()
	defer s.Close()
	e := Event{Kind: KindAppend, Topic: "demo", Offsets: &Offsets{LEO: 1}}
	b.ReportAllocs()
	for b.Loop() {
		for range 10 {
			bus.Publish(e)
		}
		if evs, _ := s.Drain(); len(evs) != 10 {
			b.Fatalf("drained %d events, want 10", len(evs))
		}
	}
}

// TestSubscribeQueue: a subscription with a queue of its own lags at its
// own length, not the Bus's.
func TestSubscribeQueue(t *testing.T) {
	b := NewBus(BusOptions{QueueLen: 2})
	long, short := b.SubscribeQueue(10), b.Subscribe()
	defer long.Close()
	defer short.Close()
	for range 5 {
		b.Publish(Event{Kind: KindHW})
	}
	if evs, lagged := long.Drain(); lagged || len(evs) != 5 {
		t.Errorf("queue of 10: %d events, lagged %v", len(evs), lagged)
	}
	if _, lagged := short.Drain(); !lagged {
		t.Error("the Bus's queue of 2 did not lag")
	}
}
