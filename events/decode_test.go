package events

import (
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fullMessages returns messages in which every field of every type is set,
// so a field the decoder misses fails TestDecodeMessageMatchesJSON.
func fullMessages() []Message {
	at := time.Date(2025, 3, 4, 5, 6, 7, 890123456, time.UTC)
	recs := []Record{{Offset: 7, LeaderEpoch: 2, Key: "k\"1", Value: "héllo <wörld> & \u2028 \U0001F600 \n\t\\",
		KeySize: 300, ValueSize: 1 << 20, Digest: "0a1b2c3d", Txn: true, ProducerID: 12, Control: ControlAbort, Aborted: true}}
	trunc := []TruncatedRecord{{Offset: 8, LeaderEpoch: 1, Digest: "0a1b2c3d", Value: "v", Reason: "r",
		ReasonKey: "event.truncation", ReasonArgs: []string{"a", "b"}}}
	topic := Topic{Name: "demo", Configs: map[string]string{"min.insync.replicas": "2"}, Partitions: []Partition{{
		Partition: 1, Leader: 2, LeaderEpoch: 3, Replicas: []int32{1, 2, 3}, ISR: []int32{2, 3}, ELR: []int32{1},
		ReplicaLogs: []Replica{{Broker: 2, LEO: 9, HW: 8, LogStartOffset: 1,
			EpochCache: []EpochEntry{{Epoch: 1, StartOffset: 3}}, Records: recs, Truncated: trunc, Segments: []int64{1, 6},
			Txn: &Txn{LSO: 7}, Cleaner: &Cleaner{FirstDirty: 5, DirtyRatio: 0.625, RecordsFrom: 3}}},
	}}}
	snap := &Snapshot{Seq: 42, Time: at, Brokers: []Broker{{ID: 1, State: BrokerUp, Listener: "127.0.0.1:9092"}},
		Controller: 0, Topics: []Topic{topic}, Configs: map[string]string{"unclean.leader.election.enable": "false"},
		Cuts: []Fault{{Kind: FaultCut, From: 1, To: 2, OneWay: true}}, Paused: true, Rate: 0.25, Observed: true}
	ev := Event{Seq: 43, Time: at, Kind: KindAppend, Broker: 2, Topic: "demo", Partition: 1, Message: "m",
		MessageKey: "event.k", MessageArgs: []string{"1", "x\"y"},
		Offsets: &Offsets{Base: 1, Last: 2, LEO: 3, HW: 4}, Leader: &Leadership{Leader: 1, PreviousLeader: 2, LeaderEpoch: 3, StartOffset: 4, Unclean: true, LastKnown: true},
		ISR: []int32{1}, ELR: []int32{2}, Error: "NOT_ENOUGH_REPLICAS", Acks: AcksAll, Records: recs, Truncated: trunc,
		Fault: &Fault{Kind: FaultCut, From: 1, To: 3, OneWay: true}, Config: &ConfigChange{Key: "k", Value: "v", Previous: "p"},
		Clock: &ClockChange{Action: ClockStep, StepMs: 100, Rate: 4}, BrokerState: BrokerFenced, Listener: "127.0.0.1:9093",
		TopicCreated: &topic, Wire: &Wire{From: 1, To: 2, Client: "kcat", FetchOffset: 5, LastFetchedEpoch: 6, HW: 7, Records: 8, Version: 9, Lost: true},
		ISRChanges: []ISRChange{{Cause: ISRLagged, Broker: 3, Joined: true, ToELR: true, LagMs: 12000, MaxLagMs: 10000, Offset: 7}}, Segments: []int64{0, 4},
		Txn: &Txn{LSO: 2}, Cleaner: &Cleaner{FirstDirty: 2, DirtyRatio: 0.5, RecordsFrom: 1}}
	return []Message{
		{Type: MessageSnapshot, Snapshot: snap},
		{Type: MessageEvents, Events: []Event{ev, {Seq: 44, Kind: KindHW, Broker: NoBroker, Partition: -1}}},
		{Type: MessageSnapshot, Snapshot: &Snapshot{Brokers: []Broker{}, Topics: []Topic{{Name: "e", Partitions: []Partition{{Replicas: []int32{}}}}}}},
	}
}

// zeroFields lists the fields of v (a struct, followed through pointers,
// slices' first elements and maps) that are zero, but those JSON leaves out.
func zeroFields(v reflect.Value, path string, out *[]string) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			zeroFields(v.Elem(), path, out)
		}
	case reflect.Slice:
		if v.Len() > 0 {
			zeroFields(v.Index(0), path+"[0]", out)
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			return
		}
		for i := range v.NumField() {
			f := v.Field(i)
			p := path + "." + v.Type().Field(i).Name
			inJSON := v.Type().Field(i).Tag.Get("json") != "-" // Event.Order stays in the process
			if f.IsZero() && inJSON && p != ".Snapshot.Controller" && p != ".Events" {
				*out = append(*out, p)
			}
			zeroFields(f, p, out)
		}
	}
}

func TestDecodeMessageMatchesJSON(t *testing.T) {
	msgs := fullMessages()
	var zero []string
	zeroFields(reflect.ValueOf(msgs[0]), "", &zero)
	zeroFields(reflect.ValueOf(msgs[1].Events[0]), ".Event", &zero)
	if len(zero) > 0 {
		t.Fatalf("the fixture leaves fields unset, so the test would not see them decoded: %v", zero)
	}
	for i, m := range msgs {
		data, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var want Message
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatal(err)
		}
		got, err := DecodeMessage(string(data))
		if err != nil {
			t.Fatalf("message %d: %v\n%s", i, err, data)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("message %d decoded as\n%+v\nwant\n%+v", i, got, want)
		}
	}
}

func TestDecodeMessageTimesAndEscapes(t *testing.T) {
	m, err := DecodeMessage(` {"type":"events","unknown":[1,{"a":null},-2.5e3,true],"events":[
		{"seq":1,"time":"2025-01-02T03:04:05.5+02:30","kind":"fault","message":"\u00e9\ud83d\ude00\/\b\f\r","fault":null}]} `)
	if err != nil {
		t.Fatal(err)
	}
	e := m.Events[0]
	if want := time.Date(2025, 1, 2, 0, 34, 5, 5e8, time.UTC); !e.Time.Equal(want) {
		t.Errorf("time %v, want %v", e.Time, want)
	}
	if e.Message != "é😀/\b\f\r" || e.Fault != nil {
		t.Errorf("message %q, fault %v", e.Message, e.Fault)
	}
}

func TestDecodeMessageRefusesMalformed(t *testing.T) {
	for _, in := range []string{``, `{`, `{"type":}`, `{"type":"events","events":[{"seq":-1}]}`, `{"type":"x"} x`,
		`{"events":[{"broker":99999999999}]}`, `{"type":"a` + "\n" + `"}`, `{"snapshot":{"paused":"yes"}}`, `[`, `{"type":"\u12"}`,
		strings.Repeat(`[`, 10) + `]`} {
		if _, err := DecodeMessage(in); err == nil {
			t.Errorf("DecodeMessage(%q) succeeded", in)
		}
	}
}

func TestDecodeStrings(t *testing.T) {
	m, err := DecodeStrings(`{"panel.broker":"broker %d","x":"\u4e2d"}`)
	if err != nil || m["panel.broker"] != "broker %d" || m["x"] != "中" {
		t.Fatalf("%v %v", m, err)
	}
}

// TestParseRFC3339 checks the hand-written date arithmetic against the
// time package over four centuries of dates, leap days included.
func TestParseRFC3339(t *testing.T) {
	for at := time.Date(1900, 1, 1, 23, 59, 58, 123456789, time.UTC); at.Year() < 2300; at = at.Add(97*time.Hour + 13*time.Minute) {
		for _, zone := range []*time.Location{time.UTC, time.FixedZone("", -(9*3600 + 30*60)), time.FixedZone("", 5*3600+45*60)} {
			s := at.In(zone).Format(time.RFC3339Nano)
			got, ok := parseRFC3339(s)
			if !ok || !got.Equal(at) {
				t.Fatalf("parseRFC3339(%s) = %v, %v; want %v", s, got, ok, at)
			}
		}
	}
	for _, s := range []string{"2025-02-03T04:05:06", "2025-02-03 04:05:06Z", "2025-13-03T04:05:06Z", "2025-02-03T04:05:06+0100", "2025-02-03T04:05:06Zjunk"} {
		if _, ok := parseRFC3339(s); ok {
			t.Errorf("parseRFC3339(%q) succeeded", s)
		}
	}
}

// BenchmarkDecodeMessage decodes a message of 100 append events of 10
// records each, as the panel does at 1,000 records a second.
func BenchmarkDecodeMessage(b *testing.B) {
	var evs []Event
	for i := range 100 {
		recs := make([]Record, 10)
		for j := range recs {
			recs[j] = Record{Offset: int64(i*10 + j), LeaderEpoch: 3, Value: "value-" + strconv.Itoa(j)}
		}
		evs = append(evs, Event{Seq: uint64(i), Time: time.Now(), Kind: KindAppend, Broker: 1, Topic: "demo",
			Offsets: &Offsets{Base: int64(i * 10), Last: int64(i*10 + 9), LEO: int64(i*10 + 10)}, Leader: &Leadership{Leader: 1, LeaderEpoch: 3}, Records: recs})
	}
	data, _ := json.Marshal(Message{Type: MessageEvents, Events: evs})
	b.Run("DecodeMessage", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, err := DecodeMessage(string(data)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			var m Message
			if err := json.Unmarshal(data, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestDecodeFloat reads the clock rates and other short decimals as
// encoding/json does, and refuses what is not a number.
func TestDecodeFloat(t *testing.T) {
	for _, in := range []string{"0.25", "1", "4", "0.5", "-2.5e3", "1e-7", "2.5E+2", "0", "12.125"} {
		m, err := DecodeMessage(`{"snapshot":{"rate":` + in + `}}`)
		want, _ := strconv.ParseFloat(in, 64)
		if err != nil || m.Snapshot.Rate != want {
			t.Errorf("rate %s decoded as %v, %v; want %v", in, m.Snapshot.Rate, err, want)
		}
	}
	// A ratio as encoding/json writes it: up to 17 significant digits,
	// read to within 1e-14 (the cleaner's dirty ratio 0.9183673469387755
	// was refused, and the panel with it the whole snapshot).
	for _, v := range []float64{0.9183673469387755, 0.99999999999999989, 1.0 / 3, 2.0 / 3, 0.1 + 0.2, 123.45678901234567, 1e-7 / 3} {
		in := strconv.FormatFloat(v, 'g', -1, 64)
		m, err := DecodeMessage(`{"snapshot":{"rate":` + in + `}}`)
		if err != nil || math.Abs(m.Snapshot.Rate-v) > 1e-14*max(1, math.Abs(v)) {
			t.Errorf("rate %s decoded as %v, %v", in, m.Snapshot.Rate, err)
		}
	}
	for _, in := range []string{`"4"`, `.5`, `1.2.3`, `1e`, `1e9999`, `--1`, `99999999999999999999`} {
		if _, err := DecodeMessage(`{"snapshot":{"rate":` + in + `}}`); err == nil {
			t.Errorf("rate %s decoded", in)
		}
	}
}
