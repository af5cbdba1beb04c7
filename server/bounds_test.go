package server

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"
	"github.com/twmb/franz-go/pkg/kgo"

	"tidemark/events"
	"tidemark/server/web"
)

// answerBound is what an answer about one partition of large records may
// weigh: each record carries at most events.ShownBytes of its value, so
// ten records of 1 MB come to a few kilobytes a replica, not 10 MB.
const answerBound = 256 << 10

// TestLargeRecordsBoundedAnswers: ten records of 1 MB produced over the
// Kafka protocol and replicated leave the partition view, /api/v1/events
// and the /ws snapshot under answerBound, their values cut at a character
// boundary and saying how large they are; a Kafka consumer still reads
// every value whole, and the records route one whole value an answer.
func TestLargeRecordsBoundedAnswers(t *testing.T) {
	a := newAPILab(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// "x" then 2-byte characters: the cut at ShownBytes falls inside one.
	values := make([][]byte, 10)
	for i := range values {
		values[i] = []byte("x" + strings.Repeat(string(rune('à'+i)), 500_000))
	}
	prod, err := kgo.NewClient(kgo.SeedBrokers(a.cl.Broker(1).Addr()), kgo.RequiredAcks(kgo.LeaderAck()),
		kgo.DisableIdempotentWrite(), kgo.ProducerBatchMaxBytes(1<<20), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for _, v := range values {
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "demo", Partition: 0, Value: v}).FirstErr(); err != nil {
			t.Fatalf("produce 1 MB: %v", err)
		}
	}
	// The followers copy 1 MB a fetch (replica.fetch.max.bytes); the HW
	// follows a round later.
	hw := func() int64 { s := a.cl.Snapshot(); return s.Partition("demo", 0).Replica(1).HW }
	for round := 0; hw() < int64(len(values)); round++ {
		if round == 3*len(values) {
			t.Fatalf("HW %d never reached %d", hw(), len(values))
		}
		a.fetchRounds(1, 2, 3)
	}

	check := func(what string, body []byte) {
		t.Helper()
		if len(body) > answerBound {
			t.Fatalf("%s: %d bytes, over %d", what, len(body), answerBound)
		}
		t.Logf("%s: %d bytes", what, len(body))
	}
	rec := a.do("GET", "/api/v1/topics/demo/partitions/0", "")
	check("partition view", rec.Body.Bytes())
	var pv web.PartitionView
	if err := json.Unmarshal(rec.Body.Bytes(), &pv); err != nil {
		t.Fatal(err)
	}
	for _, r := range pv.ReplicaLogs {
		if len(r.Records) != len(values) {
			t.Fatalf("replica %d shows %d records, want %d", r.Broker, len(r.Records), len(values))
		}
		for _, x := range r.Records {
			v := values[x.Offset]
			if x.ValueSize != len(v) || x.Digest != events.Digest(nil, v) || len(x.Value) > events.ShownBytes+len("…") ||
				!utf8.ValidString(x.Value) || !strings.HasSuffix(x.Value, "…") || !bytes.HasPrefix(v, []byte(strings.TrimSuffix(x.Value, "…"))) {
				t.Fatalf("replica %d offset %d: value %q (%d bytes), value_size %d, digest %s", r.Broker, x.Offset, x.Value, len(x.Value), x.ValueSize, x.Digest)
			}
		}
	}
	rec = a.do("GET", "/api/v1/events?limit="+strconv.Itoa(web.MaxEventsLimit), "")
	if rec.Code != 200 {
		t.Fatalf("/api/v1/events: %d %s", rec.Code, rec.Body)
	}
	check("/api/v1/events", rec.Body.Bytes())
	var evs struct{ Events []events.Event }
	if err := json.Unmarshal(rec.Body.Bytes(), &evs); err != nil {
		t.Fatal(err)
	}
	cut := 0
	for _, e := range evs.Events {
		for _, x := range e.Records {
			if x.ValueSize != len(values[x.Offset]) || x.Digest != events.Digest(nil, values[x.Offset]) {
				t.Fatalf("event %d (%s) record %d: value_size %d, digest %s", e.Seq, e.Kind, x.Offset, x.ValueSize, x.Digest)
			}
			cut++
		}
	}
	if cut < len(values) {
		t.Fatalf("the events carry %d records, want at least the leader's %d", cut, len(values))
	}

	srv := httptest.NewServer(a.h)
	defer srv.Close()
	ws, _, err := websocket.DefaultDialer.DialContext(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, msg, err := ws.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	check("/ws snapshot", msg)
	var m events.Message
	if err := json.Unmarshal(msg, &m); err != nil || m.Type != events.MessageSnapshot {
		t.Fatalf("first /ws message: %v %.200s", err, msg)
	}
	for _, r := range m.Snapshot.Partition("demo", 0).ReplicaLogs {
		if len(r.Records) != len(values) || r.Records[0].ValueSize != len(values[0]) {
			t.Fatalf("/ws snapshot, replica %d: %d records, the first %+v", r.Broker, len(r.Records), r.Records[0])
		}
	}

	// The records route returns values whole, as a Kafka fetch does, and
	// stops past web.MaxRecordsBytes as a fetch stops at fetch.max.bytes.
	var c consumed
	a.ok(200, "GET", "/api/v1/topics/demo/partitions/0/records?offset=3", "", &c)
	if len(c.Records) != 1 || c.NextOffset != 4 || *c.Records[0].Value != string(values[3]) {
		t.Fatalf("records from offset 3: %d records, next_offset %d", len(c.Records), c.NextOffset)
	}

	// The Kafka listener still serves the values whole.
	cons, err := kgo.NewClient(kgo.SeedBrokers(a.cl.Broker(1).Addr()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"demo": {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var got [][]byte
	for len(got) < len(values) {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", len(got), len(values), err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) { got = append(got, r.Value) })
	}
	for i, v := range values {
		if !bytes.Equal(got[i], v) {
			t.Fatalf("consumed record %d: %d bytes, want the %d produced", i, len(got[i]), len(v))
		}
	}
}
