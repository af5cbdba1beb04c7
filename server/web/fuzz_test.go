package web

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/events"
	"tidemark/storage"
)

// fuzzLab accepts every control it decodes: topics are created with at
// most 4 partitions, each one replica on broker 1 with a real, empty log;
// produce succeeds.
type fuzzLab struct {
	*testLab
	dir *storage.LogDir
}

func (l fuzzLab) CreateTopic(name string, partitions int32, rf int16, _ map[string]string) error {
	t := &events.Topic{Name: name}
	for p := range min(partitions, 4) {
		t.Partitions = append(t.Partitions, events.Partition{Partition: p, Leader: 1, Replicas: []int32{1}, ISR: []int32{1}})
		if _, err := l.dir.CreateLog(storage.TopicPartition{Topic: name, Partition: p}, storage.DefaultConfig()); err != nil {
			return err
		}
	}
	l.publish(events.Event{Kind: events.KindTopic, Topic: name, TopicCreated: t})
	return nil
}
func (fuzzLab) DeleteTopic(string) error                      { return nil }
func (fuzzLab) AlterConfigs(string, map[string]*string) error { return nil }
func (l fuzzLab) ReplicaLog(broker int32, topic string, partition int32) (ReplicaLog, int64, error) {
	if lg, ok := l.dir.Log(storage.TopicPartition{Topic: topic, Partition: partition}); ok && broker == 1 {
		return lg, 0, nil
	}
	return nil, 0, kerr.UnknownTopicOrPartition
}
func (fuzzLab) Produce(_ context.Context, _ string, p int32, _ int16, recs []Record, _ time.Duration) (ProduceResult, error) {
	return ProduceResult{Partition: p, Leader: 1}, nil
}

// fuzzRoutes are the API requests whose decoding FuzzAPIRequest drives:
// {t}, {p} and {b} take the fuzzed path segments, the query and the body
// are the fuzzer's.
var fuzzRoutes = []struct{ method, path string }{
	{"POST", "/api/v1/topics"},
	{"PATCH", "/api/v1/topics/{t}/configs"},
	{"POST", "/api/v1/topics/{t}/records"},
	{"GET", "/api/v1/topics/{t}/partitions/{p}"},
	{"GET", "/api/v1/topics/{t}/partitions/{p}/records"},
	{"GET", "/api/v1/brokers/{b}/partitions/{t}/{p}/lookup"},
	{"GET", "/api/v1/brokers/{b}/partitions/{t}/{p}/segments"},
	{"POST", "/api/v1/clock/step"},
	{"POST", "/api/v1/clock/step-event"},
	{"POST", "/api/v1/clock/rate"},
	{"POST", "/api/v1/network/cuts"},
	{"PUT", "/api/v1/cluster/fencing-rule"},
	{"GET", "/api/v1/events"},
	{"DELETE", "/api/v1/topics/{t}"},
}

// FuzzAPIRequest sends the HTTP API fuzzed topics, partitions, brokers,
// query parameters and JSON bodies (topics, produce bodies, configs, steps,
// cuts). Whatever comes in, the answer is never a 500 or a panic, every
// refusal is the JSON error body with a code, and a body that is not
// valid UTF-8 is never accepted (encoding/json would silently replace it).
// Its seed corpus runs with go test; go tool task fuzz -- -fuzz
// FuzzAPIRequest ./server/web explores further.
func FuzzAPIRequest(f *testing.F) {
	for _, s := range []struct {
		route       uint8
		t, p, query string
		body        string
	}{
		{0, "", "", "", `{"name":"demo","partitions":3,"replication_factor":1,"configs":{"min.insync.replicas":"1"}}`},
		{0, "", "", "", `{"name":"x","partitions":-1,"replication_factor":70000}`},
		{0, "", "", "", `{"name":"\xff\xfe","partitions":1,"replication_factor":1}`},
		{0, "", "", "", `{"name":"a","partitions":1e400}`},
		{0, "", "", "", `{"na\xffme":"a"}`},
		{0, "", "", "", `[1,2]`},
		{1, "demo", "", "", `{"retention.ms":"1000","segment.bytes":null,"x":{"y":1}}`},
		{1, "demo", "", "", `{"min.insync.replicas":2}`},
		{2, "demo", "", "", `{"acks":"all","records":[{"key":"k","value":"v"}]}`},
		{2, "demo", "", "", `{"acks":"2","partition":99999999999,"records":[]}`},
		{2, "../x", "", "", `{"acks":0,"records":[{"value":"\ud800"}]}`},
		{2, "demo", "", "", "{\"acks\":\"1\",\"records\":[{\"value\":\"caf\xe9\"}]}"}, // Latin-1, not UTF-8
		{3, "demo", "0", "", ""},
		{3, "demo", "-1", "", ""},
		{4, "demo", "0", "offset=-5&limit=1000000000", ""},
		{4, "demo", "0", "offset=%zz&limit=x", ""},
		{5, "demo", "0", "offset=9223372036854775808", ""},
		{6, "demo", "2147483648", "", ""},
		{7, "", "", "", `{"ms":-1}`},
		{7, "", "", "", `{"ms":1e18}`},
		{8, "", "", "", `{"from":1,"to":1,"one_way":"yes"}`},
		{9, "", "", "", `{"rule":"kraft\u0000"}`},
		{10, "", "", "after=-1&limit=99999999999", ""},
		{11, "a%2Fb", "", "", ""},
	} {
		f.Add(s.route, s.t, s.p, s.query, []byte(s.body))
	}
	dir, err := storage.OpenLogDir(f.TempDir(), storage.Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(dir.Crash)
	srv := newTestServer(f, fuzzLab{newTestLab(events.BusOptions{}), dir}, Options{})
	h := srv.Handler()
	f.Fuzz(func(t *testing.T, route uint8, topic, partition, query string, body []byte) {
		r := fuzzRoutes[int(route)%len(fuzzRoutes)]
		path := strings.NewReplacer("{t}", url.PathEscape(topic), "{p}", url.PathEscape(partition), "{b}", url.PathEscape(partition)).Replace(r.path)
		req := loopbackRequest(r.method, "/", strings.NewReader(string(body)))
		u, err := url.Parse(path)
		if err != nil {
			t.Skip()
		}
		u.RawQuery = query
		req.URL = u
		req.RequestURI = u.RequestURI()
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 && rec.Code != http.StatusNotImplemented {
			t.Fatalf("%s %s?%s %q: %d %s", r.method, path, query, body, rec.Code, rec.Body)
		}
		if rec.Code >= 400 {
			var eb struct{ Error *Error }
			if err := json.Unmarshal(rec.Body.Bytes(), &eb); err != nil || eb.Error == nil || eb.Error.Code == "" || eb.Error.Message == "" {
				t.Fatalf("%s %s: %d with body %q, want the JSON error body", r.method, path, rec.Code, rec.Body)
			}
			return
		}
		if len(body) > 0 && r.method != "GET" && r.method != "DELETE" && !utf8.Valid(body) {
			t.Fatalf("%s %s accepted (%d) a body that is not UTF-8: %q", r.method, path, rec.Code, body)
		}
	})
}
