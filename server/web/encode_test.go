package web

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"tidemark/events"
)

// fullEvent sets every field of an Event, so the encoder is checked on all
// of them (TestAppendEventsMessageMatchesJSON fails when a new field is
// left zero here, that is, when Event grows a field the encoder may not
// know).
func fullEvent(s string) events.Event {
	return events.Event{
		Seq: 1 << 40, Time: time.Date(2026, 11, 30, 23, 1, 2, 345678901, time.UTC), Kind: events.KindTruncation,
		Broker: -1, Topic: s, Partition: 7, Message: s, MessageKey: "event.x", MessageArgs: []string{s, "b"},
		Offsets: &events.Offsets{Base: -1, Last: 2, LEO: 3, HW: 4},
		Leader:  &events.Leadership{Leader: 2, PreviousLeader: -1, LeaderEpoch: 5, StartOffset: 6, Unclean: true, LastKnown: true},
		ISR:     []int32{1, 2}, ELR: []int32{3}, Error: "NOT_ENOUGH_REPLICAS", Acks: events.AcksAll,
		Records:     []events.Record{{Offset: 1, LeaderEpoch: 2, Key: s, Value: s, KeySize: 300, ValueSize: 1 << 20, Digest: "cd"}, {Offset: 2, Value: "", Txn: true, ProducerID: 9, Control: s, Aborted: true}},
		Truncated:   []events.TruncatedRecord{{Offset: 9, LeaderEpoch: 1, Digest: "ab", Value: s, ReasonArgs: []string{s}}},
		Fault:       &events.Fault{Kind: events.FaultCut, From: 1, To: 2, OneWay: true},
		Config:      &events.ConfigChange{Key: "min.insync.replicas", Value: s, Previous: "1"},
		Clock:       &events.ClockChange{Action: events.ClockRate, StepMs: 100, Rate: 0.25},
		BrokerState: events.BrokerFenced, Listener: "127.0.0.1:9092",
		TopicCreated: &events.Topic{Name: s, Partitions: []events.Partition{{Partition: 0, Leader: 1, Replicas: []int32{1}}}},
		Wire:         &events.Wire{From: -1, To: 3, Client: s, FetchOffset: 10, LastFetchedEpoch: 2, HW: 9, Records: 5, Version: 1 << 33, Lost: true},
		ISRChanges:   []events.ISRChange{{Cause: events.ISRLagged, Broker: 3, LagMs: 10050, MaxLagMs: 10000}, {Cause: events.ISRCaughtUp, Broker: 2, Joined: true, Offset: 7}},
		Segments:     []int64{0, 4, 9},
		Txn:          &events.Txn{LSO: 3},
		Cleaner:      &events.Cleaner{FirstDirty: 2, DirtyRatio: 0.375, RecordsFrom: 1},
		Order:        3, // in-process only: neither encoder writes it
	}
}

// tricky strings: what encoding/json escapes (quotes, backslashes, control
// characters, HTML's <>&, U+2028/U+2029) and invalid UTF-8.
var tricky = []string{
	"", "plain", `q"u\o`, "\b\f\n\r\t\x00\x01\x1f\x7f", "<a href='x'>&amp;</a>", "line\u2028sep\u2029",
	"héllo 世界 🙂", "bad\xffutf8\xc3", "\xe2\x80", "end\\",
}

func TestAppendEventsMessageMatchesJSON(t *testing.T) {
	full := reflect.ValueOf(fullEvent("x"))
	for i := range full.NumField() {
		if full.Field(i).IsZero() {
			t.Fatalf("fullEvent leaves Event.%s zero: set it and check the encoder writes it", full.Type().Field(i).Name)
		}
	}
	var cases [][]events.Event
	cases = append(cases, nil, []events.Event{{}}, []events.Event{{Seq: 1, Kind: events.KindHW, Broker: 2, Offsets: &events.Offsets{}}})
	for _, s := range tricky {
		cases = append(cases, []events.Event{fullEvent(s), {Kind: events.KindAppend, Topic: s, Leader: &events.Leadership{}, Wire: &events.Wire{}}})
	}
	for _, evs := range cases {
		checkEncoding(t, evs)
	}
}

func checkEncoding(t *testing.T, evs []events.Event) {
	t.Helper()
	var want bytes.Buffer
	if err := json.NewEncoder(&want).Encode(events.Message{Type: events.MessageEvents, Events: evs}); err != nil {
		t.Fatal(err)
	}
	got, err := appendEventsMessage(nil, evs)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("encoded\n%s\nencoding/json\n%s", got, want.Bytes())
	}
}

func FuzzAppendEventsMessage(f *testing.F) {
	for _, s := range tricky {
		f.Add(s, int64(-1), int32(3))
	}
	f.Fuzz(func(t *testing.T, s string, off int64, n int32) {
		e := fullEvent(s)
		e.Offsets.Base, e.Broker, e.Wire.FetchOffset, e.Records[1].LeaderEpoch = off, n, off, n
		checkEncoding(t, []events.Event{e, {Kind: events.Kind(s), Error: s, Acks: events.Acks(s), BrokerState: events.BrokerState(s), Listener: s}})
	})
}

// BenchmarkEncodeEvents compares the /ws encoder with encoding/json on the
// events of one message at 1,000 records/s: appends with their records,
// fetches, HW moves and an ack.
func BenchmarkEncodeEvents(b *testing.B) {
	at := time.Now()
	lead := &events.Leadership{Leader: 1, PreviousLeader: -1}
	recs := []events.Record{{Offset: 200, Value: "a"}, {Offset: 201, Value: "b"}, {Offset: 202, Value: "c"}, {Offset: 203, Value: "d"}, {Offset: 204, Value: "e"}}
	var evs []events.Event
	for i := range 3 {
		off := &events.Offsets{Base: 200, Last: 204, LEO: 205, HW: 200}
		evs = append(evs,
			events.Event{Seq: uint64(10 * i), Time: at, Kind: events.KindAppend, Broker: 1, Topic: "demo", Offsets: off, Leader: lead, Records: recs},
			events.Event{Seq: uint64(10*i + 1), Time: at, Kind: events.KindAck, Broker: 1, Topic: "demo", Offsets: off, Acks: events.AcksLeader},
			events.Event{Seq: uint64(10*i + 2), Time: at, Kind: events.KindFetch, Broker: 2, Topic: "demo", Offsets: off, Leader: lead},
			events.Event{Seq: uint64(10*i + 3), Time: at, Kind: events.KindAppend, Broker: 2, Topic: "demo", Offsets: off, Leader: lead},
			events.Event{Seq: uint64(10*i + 4), Time: at, Kind: events.KindHW, Broker: 1, Topic: "demo", Offsets: off},
		)
	}
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		var buf bytes.Buffer
		for b.Loop() {
			buf.Reset()
			json.NewEncoder(&buf).Encode(events.Message{Type: events.MessageEvents, Events: evs})
		}
	})
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf, _ = appendEventsMessage(buf[:0], evs)
		}
	})
}
