package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"tidemark/events"
	"tidemark/server/cluster"
	"tidemark/server/web"
)

// The handler tests drive the real web server over a real, paused cluster
// in a temp dir (free ports): nothing is mocked. A paused clock makes every
// step explicit: followers fetch only when a test says so.

type apiLab struct {
	t  *testing.T
	cl *cluster.Cluster
	h  http.Handler
}

func newAPILab(t *testing.T) *apiLab {
	t.Helper()
	cl, err := cluster.Open(cluster.Options{DataDir: t.TempDir(), Brokers: 3, Paused: true, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	if err := ensureDemo(cl, 3); err != nil {
		t.Fatal(err)
	}
	return &apiLab{t: t, cl: cl, h: testWeb(t, cl, web.Options{}).Handler()}
}

// testWeb serves cl through the web server with opts (its Lab, Static and
// Logger filled in when unset), closed when the test ends.
func testWeb(t *testing.T, cl *cluster.Cluster, opts web.Options) *web.Server {
	t.Helper()
	if opts.Lab == nil {
		opts.Lab = lab{cl}
	}
	if opts.Static == nil {
		opts.Static = fstest.MapFS{"app.css": {Data: []byte("body{}")}}
	}
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	ws, err := web.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ws.Close)
	return ws
}

// do sends one request; a non-empty body goes as application/json unless
// hdr sets a Content-Type.
func (a *apiLab) do(method, path, body string, hdr ...string) *httptest.ResponseRecorder {
	a.t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Host = "127.0.0.1:8080" // the lab answers to loopback names only
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	a.h.ServeHTTP(rec, req)
	return rec
}

// ok sends a request that must answer status and decodes the body into v.
func (a *apiLab) ok(status int, method, path, body string, v any) {
	a.t.Helper()
	rec := a.do(method, path, body)
	if rec.Code != status {
		a.t.Fatalf("%s %s = %d, want %d: %s", method, path, rec.Code, status, rec.Body)
	}
	if v != nil {
		reflect.ValueOf(v).Elem().SetZero() // no leftovers from an earlier answer
		if err := json.Unmarshal(rec.Body.Bytes(), v); err != nil {
			a.t.Fatalf("%s %s: %v: %s", method, path, err, rec.Body)
		}
	}
}

// fails sends a request that must fail with status and the error code.
func (a *apiLab) fails(status int, code, method, path, body string, hdr ...string) {
	a.t.Helper()
	rec := a.do(method, path, body, hdr...)
	var e struct {
		Error struct{ Code, Message string }
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &e); rec.Code != status || err != nil || e.Error.Code != code || e.Error.Message == "" {
		a.t.Fatalf("%s %s %.80q = %d %s, want %d %s", method, path, body, rec.Code, rec.Body, status, code)
	}
}

// leos reads every running replica's log end offset straight from its log.
func (a *apiLab) leos() map[string]int64 {
	out := map[string]int64{}
	snap := a.cl.Snapshot()
	for _, t := range snap.Topics {
		for _, p := range t.Partitions {
			for _, id := range p.Replicas {
				if b := a.cl.Broker(id); b != nil {
					if r := b.Replica(t.Name, p.Partition); r != nil {
						out[fmt.Sprintf("%s-%d@%d", t.Name, p.Partition, id)] = r.Log().LogEndOffset()
					}
				}
			}
		}
	}
	return out
}

func (a *apiLab) sameLEOs(before map[string]int64) {
	a.t.Helper()
	if after := a.leos(); fmt.Sprint(after) != fmt.Sprint(before) {
		a.t.Fatalf("log end offsets moved: before %v after %v", before, after)
	}
}

// fetchRounds has brokers run one fetch round each, rounds times, via the API.
func (a *apiLab) fetchRounds(rounds int, brokers ...int32) {
	a.t.Helper()
	for range rounds {
		for _, id := range brokers {
			a.ok(200, "POST", fmt.Sprintf("/api/v1/brokers/%d/fetch", id), "", nil)
		}
	}
}

type produceResult struct {
	Partition  int32 `json:"partition"`
	Leader     int32 `json:"leader"`
	BaseOffset int64 `json:"base_offset"`
	LastOffset int64 `json:"last_offset"`
}

type consumed struct {
	Records []struct {
		Offset      int64   `json:"offset"`
		LeaderEpoch int32   `json:"leader_epoch"`
		Key         *string `json:"key"`
		Value       *string `json:"value"`
	} `json:"records"`
	HighWatermark int64 `json:"high_watermark"`
	NextOffset    int64 `json:"next_offset"`
}

func TestAPITopics(t *testing.T) {
	a := newAPILab(t)
	var list web.TopicsResponse
	a.ok(200, "GET", "/api/v1/topics", "", &list)
	if len(list.Topics) != 1 || list.Topics[0].Name != "demo" || len(list.Topics[0].Partitions) != 3 ||
		list.Topics[0].ReplicationFactor != 3 || list.Topics[0].Configs["min.insync.replicas"] != "2" {
		t.Fatalf("topics = %+v", list)
	}

	var ti web.TopicInfo
	a.ok(201, "POST", "/api/v1/topics", `{"name":"orders","partitions":2,"replication_factor":2,"configs":{"min.insync.replicas":2,"unclean.leader.election.enable":true,"segment.bytes":null}}`, &ti)
	if ti.Name != "orders" || len(ti.Partitions) != 2 || ti.ReplicationFactor != 2 ||
		ti.Configs["min.insync.replicas"] != "2" || ti.Configs["unclean.leader.election.enable"] != "true" {
		t.Fatalf("created %+v", ti)
	}
	p := ti.Partitions[1]
	if p.Leader != p.Replicas[0] || len(p.ISR) != 2 || p.LeaderEpoch != 0 || p.Offline || p.UnderReplicated {
		t.Fatalf("partition %+v", p)
	}
	a.ok(201, "POST", "/api/v1/topics", `{"name":"or_ders","partitions":1,"replication_factor":1}`, nil)
	a.ok(201, "POST", "/api/v1/topics", `{"name":"defaults"}`, &ti)
	if len(ti.Partitions) != 1 || ti.ReplicationFactor != 3 {
		t.Fatalf("defaults: %+v", ti)
	}
	a.ok(200, "GET", "/api/v1/topics/orders", "", &ti)
	if ti.Name != "orders" {
		t.Fatalf("get = %+v", ti)
	}

	// Configs: set, reset with null, all-or-nothing on a bad key.
	a.ok(200, "PATCH", "/api/v1/topics/orders/configs", `{"min.insync.replicas":"1","truncation.rule":"high-watermark"}`, &ti)
	if ti.Configs["min.insync.replicas"] != "1" || ti.Configs["truncation.rule"] != "high-watermark" {
		t.Fatalf("after patch: %+v", ti.Configs)
	}
	a.ok(200, "PATCH", "/api/v1/topics/orders/configs", `{"truncation.rule":null}`, &ti)
	if _, ok := ti.Configs["truncation.rule"]; ok || ti.Configs["min.insync.replicas"] != "1" {
		t.Fatalf("after reset: %+v", ti.Configs)
	}
	a.fails(400, "INVALID_CONFIG", "PATCH", "/api/v1/topics/orders/configs", `{"min.insync.replicas":"2","no.such.key":"1"}`)
	a.fails(400, "INVALID_CONFIG", "PATCH", "/api/v1/topics/orders/configs", `{"min.insync.replicas":"3"}`) // above RF 2
	a.fails(400, "INVALID_CONFIG", "PATCH", "/api/v1/topics/orders/configs", `{"unclean.leader.election.enable":"maybe"}`)
	a.fails(400, "INVALID_CONFIG", "PATCH", "/api/v1/topics/orders/configs", `{"truncation.rule":"whatever"}`)
	a.ok(200, "GET", "/api/v1/topics/orders", "", &ti)
	if ti.Configs["min.insync.replicas"] != "1" {
		t.Fatalf("a rejected patch changed configs: %+v", ti.Configs)
	}
	a.fails(400, "INVALID_REQUEST", "PATCH", "/api/v1/topics/orders/configs", `{}`)
	a.fails(400, "INVALID_REQUEST", "PATCH", "/api/v1/topics/orders/configs", `{"min.insync.replicas":[1]}`)
	a.fails(400, "INVALID_REQUEST", "PATCH", "/api/v1/topics/orders/configs", `["min.insync.replicas"]`)
	a.fails(404, "UNKNOWN_TOPIC_OR_PARTITION", "PATCH", "/api/v1/topics/nope/configs", `{"min.insync.replicas":"1"}`)
	a.fails(400, "INVALID_TOPIC_EXCEPTION", "PATCH", "/api/v1/topics/bad%20name/configs", `{"min.insync.replicas":"1"}`)

	// Bad creates change nothing.
	for _, c := range []struct {
		status     int
		code, body string
	}{
		{409, "TOPIC_ALREADY_EXISTS", `{"name":"orders"}`},
		{400, "INVALID_TOPIC_EXCEPTION", `{"name":"or.ders"}`}, // clashes with or_ders in metric names
		{400, "INVALID_TOPIC_EXCEPTION", `{"name":""}`},
		{400, "INVALID_TOPIC_EXCEPTION", `{"name":".."}`},
		{400, "INVALID_TOPIC_EXCEPTION", `{"name":"a/b"}`},
		{400, "INVALID_TOPIC_EXCEPTION", `{"name":"spaces are bad"}`},
		{400, "INVALID_TOPIC_EXCEPTION", `{"name":"` + strings.Repeat("x", 250) + `"}`},
		{400, "INVALID_TOPIC_EXCEPTION", `{"name":"ümlaut"}`},
		{400, "INVALID_PARTITIONS", `{"name":"t1","partitions":0}`},
		{400, "INVALID_PARTITIONS", `{"name":"t1","partitions":1001}`},
		{400, "INVALID_REPLICATION_FACTOR", `{"name":"t1","replication_factor":4}`},
		{400, "INVALID_REPLICATION_FACTOR", `{"name":"t1","replication_factor":0}`},
		{400, "INVALID_CONFIG", `{"name":"t1","configs":{"min.insync.replicas":"4"}}`},
		{400, "INVALID_CONFIG", `{"name":"t1","configs":{"bogus":"1"}}`},
		{400, "INVALID_REQUEST", `{"name":"t1","partitions":99999999999}`},
		{400, "INVALID_REQUEST", `{"name":"t1","partitions":"3"}`},
		{400, "INVALID_REQUEST", `{"name":"t1","colour":"blue"}`},
		{400, "INVALID_REQUEST", `{"name":"t1"`},
		{400, "INVALID_REQUEST", `{"name":"t1"} {"name":"t2"}`},
		{400, "INVALID_REQUEST", `null`},
		{400, "INVALID_REQUEST", ` `},
	} {
		t.Run(c.code, func(t *testing.T) {
			a.t = t
			a.fails(c.status, c.code, "POST", "/api/v1/topics", c.body)
		})
	}
	a.t = t
	a.fails(415, "INVALID_REQUEST", "POST", "/api/v1/topics", `{"name":"t1"}`, "Content-Type", "text/plain")
	a.fails(403, web.CodeForbiddenOrigin, "POST", "/api/v1/topics", `{"name":"t1"}`, "Origin", "http://evil.example")
	a.fails(413, "MESSAGE_TOO_LARGE", "POST", "/api/v1/topics", `{"name":"`+strings.Repeat("x", web.MaxBodyBytes)+`"}`)
	a.ok(200, "GET", "/api/v1/topics", "", &list)
	if len(list.Topics) != 4 {
		t.Fatalf("bad creates left topics: %+v", list.Topics)
	}

	a.fails(404, "UNKNOWN_TOPIC_OR_PARTITION", "GET", "/api/v1/topics/nope", "")
	a.fails(400, "INVALID_TOPIC_EXCEPTION", "GET", "/api/v1/topics/..", "")
	a.fails(400, "INVALID_TOPIC_EXCEPTION", "GET", "/api/v1/topics/"+strings.Repeat("y", 300), "")

	var del web.DeleteTopicResponse
	a.ok(200, "DELETE", "/api/v1/topics/orders", "", &del)
	if del.Deleted != "orders" {
		t.Fatalf("delete = %+v", del)
	}
	a.fails(404, "UNKNOWN_TOPIC_OR_PARTITION", "GET", "/api/v1/topics/orders", "")
	a.fails(404, "UNKNOWN_TOPIC_OR_PARTITION", "DELETE", "/api/v1/topics/orders", "")
	a.fails(400, "INVALID_TOPIC_EXCEPTION", "DELETE", "/api/v1/topics/a*b", "")
	a.fails(403, web.CodeForbiddenOrigin, "DELETE", "/api/v1/topics/demo", "", "Origin", "http://evil.example")
	a.ok(200, "GET", "/api/v1/topics/demo", "", nil)
}

func TestAPIProduceAndConsume(t *testing.T) {
	a := newAPILab(t)
	// acks=1 returns once the leader appended; a consumer sees nothing until
	// the followers caught up and the HW moved.
	var res produceResult
	a.ok(200, "POST", "/api/v1/topics/demo/records", `{"partition":0,"acks":"1","records":[{"key":"a","value":"v0"},{"value":"v1"},{"key":"t","value":null}]}`, &res)
	if res != (produceResult{Partition: 0, Leader: 1, BaseOffset: 0, LastOffset: 2}) {
		t.Fatalf("acks=1: %+v", res)
	}
	var c consumed
	a.ok(200, "GET", "/api/v1/topics/demo/partitions/0/records", "", &c)
	if len(c.Records) != 0 || c.HighWatermark != 0 || c.NextOffset != 0 {
		t.Fatalf("before replication: %+v", c)
	}
	a.fetchRounds(2, 2, 3) // fetch the records, then report the new LEO
	a.ok(200, "GET", "/api/v1/topics/demo/partitions/0/records", "", &c)
	if c.HighWatermark != 3 || len(c.Records) != 3 || c.NextOffset != 3 || *c.Records[0].Key != "a" || *c.Records[0].Value != "v0" ||
		c.Records[1].Key != nil || c.Records[2].Value != nil {
		t.Fatalf("after replication: %+v", c)
	}
	a.ok(200, "GET", "/api/v1/topics/demo/partitions/0/records?offset=1&limit=1", "", &c)
	if len(c.Records) != 1 || c.Records[0].Offset != 1 || c.NextOffset != 2 {
		t.Fatalf("offset=1 limit=1: %+v", c)
	}
	a.ok(200, "GET", "/api/v1/topics/demo/partitions/0/records?offset=3", "", &c)
	if len(c.Records) != 0 || c.NextOffset != 3 {
		t.Fatalf("at the HW: %+v", c)
	}

	// acks=all waits for the HW: it answers only after the fetch rounds.
	done := make(chan *httptest.ResponseRecorder, 1)
	go func() {
		done <- a.do("POST", "/api/v1/topics/demo/records", `{"partition":0,"acks":"all","records":[{"value":"v3"}]}`)
	}()
	leader := a.cl.Broker(1).Replica("demo", 0)
	for deadline := time.Now().Add(5 * time.Second); leader.Status().LogEndOffset < 4; {
		if time.Now().After(deadline) {
			t.Fatal("acks=all produce never appended")
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case rec := <-done:
		t.Fatalf("acks=all answered before replication: %d %s", rec.Code, rec.Body)
	default:
	}
	a.fetchRounds(2, 2, 3)
	rec := <-done
	if err := json.Unmarshal(rec.Body.Bytes(), &res); rec.Code != 200 || err != nil || res.BaseOffset != 3 || res.LastOffset != 3 {
		t.Fatalf("acks=all: %d %s", rec.Code, rec.Body)
	}

	// Without a partition the key picks one, as Kafka's default partitioner does.
	a.ok(200, "POST", "/api/v1/topics/demo/records", `{"acks":"0","records":[{"key":"user-42","value":"x"}]}`, &res)
	// acks as a number, as a producer's config takes it.
	a.ok(200, "POST", "/api/v1/topics/demo/records", `{"acks":0,"records":[{"key":"user-42","value":"y"}]}`, nil)
	if want := cluster.PartitionForKey([]byte("user-42"), 3); res.Partition != want {
		t.Fatalf("keyed produce went to %d, want %d", res.Partition, want)
	}

	// acks=all with the ISR below min.insync.replicas: NOT_ENOUGH_REPLICAS,
	// nothing appended. Crash both followers of partition 1 and let the
	// leader shrink the ISR.
	a.ok(200, "POST", "/api/v1/brokers/3/crash", "", nil)
	a.ok(200, "POST", "/api/v1/brokers/1/crash", "", nil)
	a.ok(200, "POST", "/api/v1/clock/step", `{"ms":30000}`, nil)
	var pv web.PartitionView
	a.ok(200, "GET", "/api/v1/topics/demo/partitions/1", "", &pv)
	if pv.Leader != 2 || len(pv.ISR) != 1 {
		t.Fatalf("after the crashes partition 1 = leader %d ISR %v", pv.Leader, pv.ISR)
	}
	before := a.leos()
	// delivery_timeout_ms 0: the broker's answer as it is, not retried
	// (the paused lab's ISR would not grow back in real time).
	a.fails(503, "NOT_ENOUGH_REPLICAS", "POST", "/api/v1/topics/demo/records", `{"partition":1,"acks":"all","records":[{"value":"lost?"}],"delivery_timeout_ms":0}`)
	a.sameLEOs(before)
	// Partition 0's leader (broker 1) is down.
	a.ok(200, "GET", "/api/v1/topics/demo/partitions/0", "", &pv)
	if pv.Leader == 1 {
		t.Fatalf("partition 0 still led by crashed broker 1")
	}
}

func TestAPIProduceAndConsumeBadInputs(t *testing.T) {
	a := newAPILab(t)
	before := a.leos()
	rec := func(n int) string {
		return `{"value":"` + strings.Repeat("r", n) + `"}`
	}
	many := make([]string, web.MaxProduceRecords+1)
	for i := range many {
		many[i] = `{"value":"x"}`
	}
	for _, c := range []struct {
		name, path, body string
		status           int
		code             string
		hdr              []string
	}{
		{"malformed JSON", "/api/v1/topics/demo/records", `{"acks":"1","records":[`, 400, "INVALID_REQUEST", nil},
		{"not an object", "/api/v1/topics/demo/records", `[1,2,3]`, 400, "INVALID_REQUEST", nil},
		{"empty body", "/api/v1/topics/demo/records", ``, 415, "INVALID_REQUEST", nil},
		{"trailing data", "/api/v1/topics/demo/records", `{"acks":"1","records":[{"value":"x"}]}x`, 400, "INVALID_REQUEST", nil},
		{"unknown field", "/api/v1/topics/demo/records", `{"ack":"1","records":[{"value":"x"}]}`, 400, "INVALID_REQUEST", nil},
		{"acks twice", "/api/v1/topics/demo/records", `{"acks":"1","acks":"all","records":[{"value":"x"}]}`, 400, "INVALID_REQUEST", nil},
		{"a record's value twice", "/api/v1/topics/demo/records", `{"acks":"1","records":[{"value":"x","value":"y"}]}`, 400, "INVALID_REQUEST", nil},
		{"acks 2", "/api/v1/topics/demo/records", `{"acks":"2","records":[{"value":"x"}]}`, 400, "INVALID_REQUIRED_ACKS", nil},
		{"acks -2", "/api/v1/topics/demo/records", `{"acks":-2,"records":[{"value":"x"}]}`, 400, "INVALID_REQUIRED_ACKS", nil},
		{"acks true", "/api/v1/topics/demo/records", `{"acks":true,"records":[{"value":"x"}]}`, 400, "INVALID_REQUIRED_ACKS", nil},
		{"acks ALL", "/api/v1/topics/demo/records", `{"acks":"ALL","records":[{"value":"x"}]}`, 400, "INVALID_REQUIRED_ACKS", nil},
		{"acks missing", "/api/v1/topics/demo/records", `{"records":[{"value":"x"}]}`, 400, "INVALID_REQUIRED_ACKS", nil},
		{"acks 1.5", "/api/v1/topics/demo/records", `{"acks":1.5,"records":[{"value":"x"}]}`, 400, "INVALID_REQUIRED_ACKS", nil},
		{"no records", "/api/v1/topics/demo/records", `{"acks":"1","records":[]}`, 400, "INVALID_REQUEST", nil},
		{"records missing", "/api/v1/topics/demo/records", `{"acks":"1"}`, 400, "INVALID_REQUEST", nil},
		{"record not an object", "/api/v1/topics/demo/records", `{"acks":"1","records":["x"]}`, 400, "INVALID_REQUEST", nil},
		{"value not a string", "/api/v1/topics/demo/records", `{"acks":"1","records":[{"value":{"a":1}}]}`, 400, "INVALID_REQUEST", nil},
		{"too many records", "/api/v1/topics/demo/records", `{"acks":"1","records":[` + strings.Join(many, ",") + `]}`, 413, "RECORD_LIST_TOO_LARGE", nil},
		{"body over the limit", "/api/v1/topics/demo/records", `{"acks":"1","records":[` + rec(web.MaxBodyBytes) + `]}`, 413, "MESSAGE_TOO_LARGE", nil},
		{"partition out of range", "/api/v1/topics/demo/records", `{"partition":3,"acks":"1","records":[{"value":"x"}]}`, 404, "UNKNOWN_TOPIC_OR_PARTITION", nil},
		{"negative partition", "/api/v1/topics/demo/records", `{"partition":-1,"acks":"1","records":[{"value":"x"}]}`, 404, "UNKNOWN_TOPIC_OR_PARTITION", nil},
		{"partition overflow", "/api/v1/topics/demo/records", `{"partition":4294967296,"acks":"1","records":[{"value":"x"}]}`, 400, "INVALID_REQUEST", nil},
		{"timeout 0", "/api/v1/topics/demo/records", `{"acks":"1","records":[{"value":"x"}],"timeout_ms":0}`, 400, "INVALID_REQUEST", nil},
		{"timeout huge", "/api/v1/topics/demo/records", `{"acks":"1","records":[{"value":"x"}],"timeout_ms":600001}`, 400, "INVALID_REQUEST", nil},
		{"unknown topic", "/api/v1/topics/nope/records", `{"acks":"1","records":[{"value":"x"}]}`, 404, "UNKNOWN_TOPIC_OR_PARTITION", nil},
		{"invalid topic name", "/api/v1/topics/no%2Fpe/records", `{"acks":"1","records":[{"value":"x"}]}`, 400, "INVALID_TOPIC_EXCEPTION", nil},
		{"invalid topic name dots", "/api/v1/topics/../records", `{"acks":"1","records":[{"value":"x"}]}`, 400, "INVALID_TOPIC_EXCEPTION", nil},
		{"text/plain", "/api/v1/topics/demo/records", `{"acks":"1","records":[{"value":"x"}]}`, 415, "INVALID_REQUEST", []string{"Content-Type", "text/plain"}},
		{"form", "/api/v1/topics/demo/records", `acks=1`, 415, "INVALID_REQUEST", []string{"Content-Type", "application/x-www-form-urlencoded"}},
		{"other origin", "/api/v1/topics/demo/records", `{"acks":"1","records":[{"value":"x"}]}`, 403, web.CodeForbiddenOrigin, []string{"Origin", "http://evil.example"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			a.t = t
			a.fails(c.status, c.code, "POST", c.path, c.body, c.hdr...)
			a.sameLEOs(before)
		})
	}
	a.t = t
	// A field named twice is refused in the learner's language too.
	if body := a.do("POST", "/api/v1/topics/demo/records", `{"acks":"1","acks":"all","records":[{"value":"x"}]}`).Body.String(); !strings.Contains(body, `"key":"form.duplicate-key","args":["\"acks\""]`) {
		t.Errorf("acks twice: %s, want the key form.duplicate-key naming acks", body)
	}
	// The same origin is welcome.
	a.ok(200, "POST", "/api/v1/topics/demo/records", `{"acks":"1","records":[{"value":"x"}]}`, nil)

	for _, c := range []struct {
		path   string
		status int
		code   string
	}{
		{"/api/v1/topics/demo/partitions/3/records", 404, "UNKNOWN_TOPIC_OR_PARTITION"},
		{"/api/v1/topics/demo/partitions/-1/records", 404, "UNKNOWN_TOPIC_OR_PARTITION"},
		{"/api/v1/topics/demo/partitions/x/records", 400, "INVALID_REQUEST"},
		{"/api/v1/topics/demo/partitions/99999999999/records", 400, "INVALID_REQUEST"},
		{"/api/v1/topics/nope/partitions/0/records", 404, "UNKNOWN_TOPIC_OR_PARTITION"},
		{"/api/v1/topics/n%20pe/partitions/0/records", 400, "INVALID_TOPIC_EXCEPTION"},
		{"/api/v1/topics/demo/partitions/0/records?offset=-1", 400, "INVALID_REQUEST"},
		{"/api/v1/topics/demo/partitions/0/records?offset=abc", 400, "INVALID_REQUEST"},
		{"/api/v1/topics/demo/partitions/0/records?offset=9223372036854775808", 400, "INVALID_REQUEST"},
		{"/api/v1/topics/demo/partitions/0/records?offset=5", 400, "OFFSET_OUT_OF_RANGE"},
		{"/api/v1/topics/demo/partitions/0/records?limit=0", 400, "INVALID_REQUEST"},
		{"/api/v1/topics/demo/partitions/0/records?limit=1001", 400, "INVALID_REQUEST"},
		{"/api/v1/topics/demo/partitions/0/records?limit=1e3", 400, "INVALID_REQUEST"},
	} {
		a.fails(c.status, c.code, "GET", c.path, "")
	}
}

func TestAPIPartitionView(t *testing.T) {
	a := newAPILab(t)
	a.ok(200, "POST", "/api/v1/topics/demo/records", `{"partition":0,"acks":"1","records":[{"key":"k","value":"a"},{"value":"b"}]}`, nil)
	a.fetchRounds(1, 2) // broker 2 has the records; the HW has not moved
	var v web.PartitionView
	a.ok(200, "GET", "/api/v1/topics/demo/partitions/0", "", &v)
	if v.Topic != "demo" || v.Partition != 0 || v.Leader != 1 || v.LeaderEpoch != 0 || len(v.ISR) != 3 || v.HighWatermark != 0 || len(v.ReplicaLogs) != 3 {
		t.Fatalf("view = %+v", v)
	}
	byBroker := map[int32]web.ReplicaView{}
	for _, r := range v.ReplicaLogs {
		byBroker[r.Broker] = r
		if r.Source != "log" || r.BrokerState != "up" || !r.InSync {
			t.Fatalf("replica %+v", r)
		}
	}
	if l := byBroker[1]; !l.Leader || l.LEO != 2 || len(l.Records) != 2 || l.Records[0].Key != "k" || l.Records[1].Value != "b" ||
		l.Records[0].Committed || len(l.EpochCache) != 1 || l.EpochCache[0].Epoch != 0 {
		t.Fatalf("leader replica %+v", l)
	}
	if f := byBroker[2]; f.Leader || f.LEO != 2 || len(f.Records) != 2 {
		t.Fatalf("follower 2 %+v", f)
	}
	if f := byBroker[3]; f.LEO != 0 || len(f.Records) != 0 {
		t.Fatalf("follower 3 %+v", f)
	}
	a.fetchRounds(3, 2, 3) // the third round tells broker 2 the HW that broker 3's fetch moved
	a.ok(200, "GET", "/api/v1/topics/demo/partitions/0?offset=1&limit=1", "", &v)
	if v.HighWatermark != 2 {
		t.Fatalf("HW %d after replication", v.HighWatermark)
	}
	for _, r := range v.ReplicaLogs {
		if r.HW != 2 || r.LEO != 2 || len(r.Records) != 1 || r.Records[0].Offset != 1 || !r.Records[0].Committed {
			t.Fatalf("replica %d after replication: %+v", r.Broker, r)
		}
	}

	// A crashed broker is shown from the snapshot.
	a.ok(200, "POST", "/api/v1/brokers/3/crash", "", nil)
	a.ok(200, "GET", "/api/v1/topics/demo/partitions/0", "", &v)
	for _, r := range v.ReplicaLogs {
		if r.Broker == 3 && (r.Source != "snapshot" || r.BrokerState != "crashed" || r.LEO != 2 || len(r.Records) != 2) {
			t.Fatalf("crashed replica %+v", r)
		}
	}

	a.fails(404, "UNKNOWN_TOPIC_OR_PARTITION", "GET", "/api/v1/topics/demo/partitions/7", "")
	a.fails(404, "UNKNOWN_TOPIC_OR_PARTITION", "GET", "/api/v1/topics/nope/partitions/0", "")
	a.fails(400, "INVALID_REQUEST", "GET", "/api/v1/topics/demo/partitions/zero", "")
	a.fails(400, "INVALID_TOPIC_EXCEPTION", "GET", "/api/v1/topics/$/partitions/0", "")
	a.fails(400, "INVALID_REQUEST", "GET", "/api/v1/topics/demo/partitions/0?limit=501", "")
	a.fails(400, "INVALID_REQUEST", "GET", "/api/v1/topics/demo/partitions/0?offset=x", "")
}

// TestAPITruncationHistory makes a truncation happen for real: the leader
// appends records no follower has, crashes, another replica takes over and
// writes in a new epoch, and the old leader truncates when it rejoins.
func TestAPITruncationHistory(t *testing.T) {
	a := newAPILab(t)
	a.ok(200, "POST", "/api/v1/topics/demo/records", `{"partition":0,"acks":"1","records":[{"value":"committed"}]}`, nil)
	a.fetchRounds(2, 2, 3)
	a.ok(200, "POST", "/api/v1/topics/demo/records", `{"partition":0,"acks":"1","records":[{"value":"doomed"}]}`, nil)
	a.ok(200, "POST", "/api/v1/brokers/1/crash", "", nil)
	a.ok(200, "POST", "/api/v1/clock/step", `{"ms":30000}`, nil) // the controller fences broker 1 and elects
	var v web.PartitionView
	a.ok(200, "GET", "/api/v1/topics/demo/partitions/0", "", &v)
	if v.Leader == 1 || v.Leader < 0 || v.LeaderEpoch < 1 {
		t.Fatalf("after the crash: leader %d epoch %d", v.Leader, v.LeaderEpoch)
	}
	var res produceResult
	a.ok(200, "POST", "/api/v1/topics/demo/records", `{"partition":0,"acks":"1","records":[{"value":"new"}]}`, &res)
	if res.BaseOffset != 1 || res.Leader != v.Leader {
		t.Fatalf("produce to the new leader: %+v", res)
	}
	a.ok(200, "POST", "/api/v1/brokers/1/restart", "", nil)
	a.fetchRounds(3, 1)
	a.ok(200, "GET", "/api/v1/topics/demo/partitions/0", "", &v)
	if len(v.Truncations) == 0 {
		t.Fatalf("no truncation recorded: %+v", v)
	}
	tr := v.Truncations[len(v.Truncations)-1]
	if tr.Broker != 1 || tr.LEO != 1 || len(tr.Truncated) != 1 || tr.Truncated[0].Offset != 1 || tr.Truncated[0].LeaderEpoch != 0 {
		t.Fatalf("truncation %+v", tr)
	}
	for _, r := range v.ReplicaLogs {
		if r.Broker == 1 && (len(r.Truncated) != 1 || len(r.Records) < 2 || r.Records[1].Value != "new") {
			t.Fatalf("old leader after rejoining: %+v", r)
		}
	}
}

func TestAPISegmentsAndLookup(t *testing.T) {
	a := newAPILab(t)
	for range 3 {
		a.ok(200, "POST", "/api/v1/topics/demo/records", `{"partition":0,"acks":"1","records":[{"value":"aaaa"},{"value":"bbbb"}]}`, nil)
	}
	var sg web.SegmentsResponse
	a.ok(200, "GET", "/api/v1/brokers/1/partitions/demo/0/segments", "", &sg)
	if sg.Broker != 1 || sg.Topic != "demo" || sg.LEO != 6 || len(sg.Segments) != 1 {
		t.Fatalf("segments = %+v", sg)
	}
	s := sg.Segments[0]
	if !s.Active || s.BaseOffset != 0 || s.NextOffset != 6 || s.LogFile != "00000000000000000000.log" ||
		s.IndexFile != "00000000000000000000.index" || s.LogBytes <= 0 {
		t.Fatalf("segment = %+v", s)
	}
	var lk web.LookupView
	a.ok(200, "GET", "/api/v1/brokers/1/partitions/demo/0/lookup?offset=4", "", &lk)
	if lk.Offset != 4 || lk.SegmentFile != "00000000000000000000.log" || len(lk.SegmentProbes) == 0 ||
		len(lk.Scanned) != 3 || lk.Batch.BaseOffset != 4 || lk.Batch.LastOffset != 5 || lk.Batch.Records != 2 || lk.Position != lk.Scanned[2].Position {
		t.Fatalf("lookup = %+v", lk)
	}

	for _, c := range []struct {
		path   string
		status int
		code   string
	}{
		{"/api/v1/brokers/1/partitions/demo/0/lookup", 400, "INVALID_REQUEST"},
		{"/api/v1/brokers/1/partitions/demo/0/lookup?offset=x", 400, "INVALID_REQUEST"},
		{"/api/v1/brokers/1/partitions/demo/0/lookup?offset=6", 400, "OFFSET_OUT_OF_RANGE"},
		{"/api/v1/brokers/9/partitions/demo/0/segments", 404, "BROKER_NOT_AVAILABLE"},
		{"/api/v1/brokers/0/partitions/demo/0/segments", 404, "BROKER_NOT_AVAILABLE"},
		{"/api/v1/brokers/one/partitions/demo/0/segments", 400, "INVALID_REQUEST"},
		{"/api/v1/brokers/1/partitions/nope/0/segments", 404, "UNKNOWN_TOPIC_OR_PARTITION"},
		{"/api/v1/brokers/1/partitions/demo/3/segments", 404, "UNKNOWN_TOPIC_OR_PARTITION"},
		{"/api/v1/brokers/1/partitions/demo/x/lookup?offset=0", 400, "INVALID_REQUEST"},
		{"/api/v1/brokers/1/partitions/de:mo/0/segments", 400, "INVALID_TOPIC_EXCEPTION"},
	} {
		a.fails(c.status, c.code, "GET", c.path, "")
	}
	// A broker without a replica of the partition, and a crashed one.
	a.ok(201, "POST", "/api/v1/topics", `{"name":"solo","replication_factor":1}`, nil)
	var ti web.TopicInfo
	a.ok(200, "GET", "/api/v1/topics/solo", "", &ti)
	other := ti.Partitions[0].Replicas[0]%3 + 1
	a.fails(404, "UNKNOWN_TOPIC_OR_PARTITION", "GET", fmt.Sprintf("/api/v1/brokers/%d/partitions/solo/0/segments", other), "")
	a.ok(200, "POST", "/api/v1/brokers/2/crash", "", nil)
	a.fails(503, "BROKER_NOT_AVAILABLE", "GET", "/api/v1/brokers/2/partitions/demo/0/segments", "")
}

func TestAPIFaultsNetworkAndClock(t *testing.T) {
	a := newAPILab(t)
	var br web.BrokerResponse
	a.ok(200, "POST", "/api/v1/brokers/2/crash", "", &br)
	if br.Broker != 2 || br.State != "crashed" || br.LastSeq == 0 {
		t.Fatalf("crash = %+v", br)
	}
	a.fails(409, "BROKER_NOT_AVAILABLE", "POST", "/api/v1/brokers/2/crash", "")
	a.fails(409, "BROKER_NOT_AVAILABLE", "POST", "/api/v1/brokers/2/power-loss", "")
	a.fails(409, "BROKER_NOT_AVAILABLE", "POST", "/api/v1/brokers/2/fetch", "") // crashed, checked by the cluster
	a.ok(200, "POST", "/api/v1/brokers/2/restart", "", &br)
	if br.State != "up" {
		t.Fatalf("restart = %+v", br)
	}
	a.fails(409, "INVALID_REQUEST", "POST", "/api/v1/brokers/2/restart", "")

	a.ok(200, "POST", "/api/v1/topics/demo/records", `{"partition":2,"acks":"1","records":[{"value":"unsynced"}]}`, nil)
	a.ok(200, "POST", "/api/v1/brokers/3/power-loss", "", &br)
	if br.State != "crashed" || br.LostBytes == nil {
		t.Fatalf("power-loss = %+v", br)
	}
	a.ok(200, "POST", "/api/v1/brokers/3/restart", "", nil)
	for _, p := range []string{"crash", "power-loss", "restart", "fetch"} {
		a.fails(404, "BROKER_NOT_AVAILABLE", "POST", "/api/v1/brokers/4/"+p, "")
		a.fails(404, "BROKER_NOT_AVAILABLE", "POST", "/api/v1/brokers/-1/"+p, "")
		a.fails(400, "INVALID_REQUEST", "POST", "/api/v1/brokers/x/"+p, "")
		a.fails(403, web.CodeForbiddenOrigin, "POST", "/api/v1/brokers/1/"+p, "", "Origin", "http://evil.example")
	}
	if s := a.cl.Snapshot(); s.Broker(1).State != "up" {
		t.Fatalf("a refused request crashed broker 1")
	}

	var nw web.NetworkResponse
	a.ok(200, "POST", "/api/v1/network/cuts", `{"from":1,"to":2}`, &nw)
	if len(nw.Cuts) != 1 || nw.Cuts[0].From != 1 || nw.Cuts[0].To != 2 || nw.Cuts[0].OneWay {
		t.Fatalf("cut = %+v", nw)
	}
	a.ok(200, "POST", "/api/v1/network/cuts", `{"from":3,"to":0,"oneway":true}`, &nw)
	if len(nw.Cuts) != 2 || !nw.Cuts[1].OneWay {
		t.Fatalf("cut to the controller = %+v", nw)
	}
	for _, body := range []string{`{"from":1}`, `{"to":1}`, `{"from":1,"to":1}`, `{"from":1,"to":9}`, `{"from":-2,"to":1}`, `{"from":"1","to":2}`, `{"from":1,"to":2,"both":true}`, `{`} {
		a.fails(400, "INVALID_REQUEST", "POST", "/api/v1/network/cuts", body)
	}
	a.ok(200, "DELETE", "/api/v1/network/cuts", "", &nw)
	if len(nw.Cuts) != 0 {
		t.Fatalf("heal = %+v", nw)
	}

	var ck web.ClockResponse
	a.ok(200, "POST", "/api/v1/clock/pause", "", &ck) // already paused: no change
	if !ck.Paused {
		t.Fatalf("pause = %+v", ck)
	}
	t0 := ck.Time
	a.ok(200, "POST", "/api/v1/clock/step", `{"ms":250}`, &ck)
	if got := ck.Time.Sub(t0); got != 250*time.Millisecond {
		t.Fatalf("step moved the clock %v", got)
	}
	t0 = ck.Time
	a.ok(200, "POST", "/api/v1/clock/step", `{}`, &ck) // no ms: the default step
	if got := ck.Time.Sub(t0); got != web.DefaultStep {
		t.Fatalf("a step without ms moved the clock %v", got)
	}
	for _, body := range []string{`{"ms":0}`, `{"ms":-5}`, `{"ms":3600001}`, `{"ms":"5"}`, `{"ms":1.5}`} {
		a.fails(400, "INVALID_REQUEST", "POST", "/api/v1/clock/step", body)
	}
	a.ok(200, "POST", "/api/v1/clock/resume", "", &ck)
	if ck.Paused {
		t.Fatalf("resume = %+v", ck)
	}
	a.fails(409, "INVALID_REQUEST", "POST", "/api/v1/clock/step", `{"ms":100}`)
	a.fails(409, "INVALID_REQUEST", "POST", "/api/v1/brokers/1/fetch", "")
	a.ok(200, "POST", "/api/v1/clock/pause", "", &ck)
	if !ck.Paused {
		t.Fatalf("pause = %+v", ck)
	}
	var f web.FetchResponse
	a.ok(200, "POST", "/api/v1/brokers/2/fetch", "", &f)
	if f.Broker != 2 {
		t.Fatalf("fetch = %+v", f)
	}
}

// TestAPIClockRateAndStepEvent sets the clock's rate (refusing any but
// 0.25, 1 and 4), steps a paused lab to its next event (the ISR shrink of
// demo's partitions, whose followers never fetched) and then finds nothing
// within a short limit; both need a paused clock. The page's forms reach
// the same routes.
func TestAPIClockRateAndStepEvent(t *testing.T) {
	a := newAPILab(t)
	var ck web.ClockResponse
	a.ok(200, "POST", "/api/v1/clock/rate", `{"rate":0.25}`, &ck)
	if ck.Rate != 0.25 || !ck.Paused {
		t.Fatalf("rate 0.25 = %+v", ck)
	}
	for _, body := range []string{`{}`, `{"rate":0}`, `{"rate":2}`, `{"rate":-1}`, `{"rate":"4"}`, `{"rate":1e400}`, `{`} {
		a.fails(400, "INVALID_REQUEST", "POST", "/api/v1/clock/rate", body)
	}
	if r := a.cl.Clock().Rate(); r != 0.25 {
		t.Fatalf("a refused rate left the clock at %v", r)
	}

	var st web.StepEventResponse
	a.ok(200, "POST", "/api/v1/clock/step-event", "", &st)
	if !st.Found || st.SteppedMs <= 0 || len(st.Events) == 0 {
		t.Fatalf("step-event = %+v, want the ISR shrinks", st)
	}
	for _, e := range st.Events {
		if e.Kind != events.KindISR {
			t.Errorf("reached a %s event, want ISR shrinks only", e.Kind)
		}
	}
	a.ok(200, "POST", "/api/v1/clock/step-event", `{"max_ms":500}`, &st)
	if st.Found || st.SteppedMs != 500 || len(st.Events) != 0 {
		t.Fatalf("step-event with nothing to come = %+v, want 500 ms and no event", st)
	}
	for _, body := range []string{`{"max_ms":0}`, `{"max_ms":60001}`, `{"max_ms":"5"}`, `{"max":5}`} {
		a.fails(400, "INVALID_REQUEST", "POST", "/api/v1/clock/step-event", body)
	}

	action := func(form string) web.ActionResult {
		rec := a.do("POST", "/ui/action", form, "Content-Type", "application/x-www-form-urlencoded", "Accept", "application/json")
		var r web.ActionResult
		if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil {
			t.Fatalf("form %s: %d %s", form, rec.Code, rec.Body)
		}
		return r
	}
	if r := action("action=rate&rate=1"); !r.OK || a.cl.Clock().Rate() != 1 || !strings.Contains(r.Text, "1×") {
		t.Errorf("rate form: %+v, clock rate %v", r, a.cl.Clock().Rate())
	}
	if r := action("action=rate&rate=NaN"); r.OK || r.Code != "INVALID_REQUEST" {
		t.Errorf("rate form with NaN: %+v", r)
	}
	if r := action("action=step-event"); !r.OK || !strings.Contains(r.Text, "60000 ms") {
		t.Errorf("step-event form with nothing to come: %+v", r)
	}
	a.ok(200, "POST", "/api/v1/clock/resume", "", &ck)
	a.fails(409, "INVALID_REQUEST", "POST", "/api/v1/clock/step-event", "")
	a.ok(200, "POST", "/api/v1/clock/rate", `{"rate":4}`, &ck)
	if ck.Rate != 4 || ck.Paused {
		t.Fatalf("rate 4 while running = %+v", ck)
	}
}

// TestAPIWrongMethods checks that the routes answer other methods with a
// JSON 405, never a crash.
func TestAPIWrongMethods(t *testing.T) {
	a := newAPILab(t)
	for _, c := range [][2]string{
		{"PUT", "/api/v1/topics"}, {"POST", "/api/v1/topics/demo"}, {"GET", "/api/v1/topics/demo/configs"},
		{"GET", "/api/v1/topics/demo/records"}, {"POST", "/api/v1/topics/demo/partitions/0"},
		{"GET", "/api/v1/brokers/1/crash"}, {"GET", "/api/v1/network/cuts"}, {"GET", "/api/v1/clock/step"},
	} {
		a.fails(405, web.CodeMethodNotAllowed, c[0], c[1], "")
	}

}

// TestAPIFencingRule: the rule is in the snapshot, switched through the
// API (and through the overview's form), and an unknown one is refused.
func TestAPIFencingRule(t *testing.T) {
	a := newAPILab(t)
	var got web.FencingRuleBody
	a.ok(200, "GET", "/api/v1/cluster/fencing-rule", "", &got)
	if got.Rule != "kraft-elr" {
		t.Fatalf("default rule %q, want kraft-elr", got.Rule)
	}
	a.ok(200, "PUT", "/api/v1/cluster/fencing-rule", `{"rule":"zookeeper"}`, &got)
	if got.Rule != "zookeeper" || a.cl.Snapshot().Configs["fencing.rule"] != "zookeeper" {
		t.Fatalf("after PUT: %q, snapshot %v", got.Rule, a.cl.Snapshot().Configs)
	}
	a.fails(400, "INVALID_CONFIG", "PUT", "/api/v1/cluster/fencing-rule", `{"rule":"raft"}`)
	rec := a.do("POST", "/ui/action", "action=fencing-rule&rule=kraft", "Content-Type", "application/x-www-form-urlencoded", "Accept", "application/json")
	if rec.Code != 200 || a.cl.FencingRule() != "kraft" {
		t.Fatalf("form: %d %s; rule %s", rec.Code, rec.Body, a.cl.FencingRule())
	}
	body := a.do("GET", "/", "").Body.String()
	if !strings.Contains(body, `id="fencing-rule">kraft<`) {
		t.Fatal("the overview does not show the rule in force")
	}
}

// TestAPIDiskFailure: a failed disk refuses the next produce with
// KAFKA_STORAGE_ERROR, the broker halts, and restart brings it back.
func TestAPIDiskFailure(t *testing.T) {
	a := newAPILab(t)
	snap := a.cl.Snapshot()
	leader := snap.Partition("demo", 0).Leader
	path := fmt.Sprintf("/api/v1/brokers/%d/disk-failure", leader)
	a.ok(200, "POST", path, "", nil)
	a.fails(503, "KAFKA_STORAGE_ERROR", "POST", "/api/v1/topics/demo/records", `{"partition":0,"acks":"1","records":[{"value":"x"}]}`)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.cl.AwaitStopped(ctx, leader); err != nil {
		t.Fatalf("the broker did not halt: %v", err)
	}
	a.fails(409, "BROKER_NOT_AVAILABLE", "POST", path, "")
	a.ok(200, "POST", fmt.Sprintf("/api/v1/brokers/%d/restart", leader), "", nil)
	if a.cl.Broker(leader) == nil {
		t.Fatal("not restarted")
	}
}

// TestAPIFetchPartitionErrorsCarryCode: a stepped fetch round whose
// partitions answer with Kafka errors (here a leader elected while broker 2
// was down, which has not yet applied the metadata that made it leader)
// answers with Kafka's code, never a bare 500.
func TestAPIFetchPartitionErrorsCarryCode(t *testing.T) {
	a := newAPILab(t)
	a.ok(200, "POST", "/api/v1/brokers/2/crash", "", nil)
	a.ok(200, "POST", "/api/v1/brokers/2/restart", "", nil)
	rec := a.do("POST", "/api/v1/brokers/2/fetch", "")
	if rec.Code >= 500 && rec.Code != 503 || strings.Contains(rec.Body.String(), "UNKNOWN_SERVER_ERROR") {
		t.Fatalf("fetch after restart: %d %s; want 200 or Kafka's code", rec.Code, rec.Body)
	}
	if rec.Code != 200 && (!strings.Contains(rec.Body.String(), `"NOT_LEADER_OR_FOLLOWER"`) || strings.Contains(rec.Body.String(), `\n`) || strings.Contains(rec.Body.String(), `: "`)) {
		t.Fatalf("fetch after restart: %d %s; want Kafka's code and a one-line message", rec.Code, rec.Body)
	}
	// The fetch-response event names the code as Kafka does today, alone.
	evs, _ := a.cl.Bus().Since(0, 0)
	for _, e := range evs {
		if e.Kind == events.KindFetchResponse && e.Error != "" && strings.Contains(e.Error, " ") {
			t.Errorf("fetch-response event error %q; want the code's name alone", e.Error)
		}
	}
}
