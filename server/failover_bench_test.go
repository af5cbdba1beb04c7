package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"tidemark/server/cluster"
	"tidemark/server/web"
)

// BenchmarkProduceAfterFailover: on a running lab (3 brokers, a topic of
// one partition, RF 3, acks=all), the time from its leader's crash to the
// first acknowledged write, sent at once after the crash through the HTTP
// API (its producer's retries, delivery_timeout_ms 60 s) and through a
// franz-go producer (its own retries), alternating, failoverRounds each.
// Both wait for the controller to notice the crash (the lab's 2 s session
// timeout) and the new leader to take over; what differs is how soon each
// retries after that. Reports p50 and p99 in ms for each, and their ratio.
func BenchmarkProduceAfterFailover(b *testing.B) {
	const failoverRounds = 5
	var api, fr []float64
	for range b.N {
		cl, err := cluster.Open(cluster.Options{DataDir: b.TempDir(), Brokers: 3, Logger: quietLogger()})
		if err != nil {
			b.Fatal(err)
		}
		ws, err := web.New(web.Options{Lab: lab{cl}, Static: fstest.MapFS{"app.css": {Data: []byte("body{}")}}, Logger: quietLogger()})
		if err != nil {
			b.Fatal(err)
		}
		h := ws.Handler()
		call := func(method, path, body string) (int, []byte) {
			req := httptest.NewRequest(method, path, strings.NewReader(body))
			req.Host = "127.0.0.1:8080"
			if body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			return rec.Code, rec.Body.Bytes()
		}
		if code, body := call("POST", "/api/v1/topics", `{"name":"f","partitions":1,"replication_factor":3}`); code != http.StatusCreated {
			b.Fatalf("create: %d %s", code, body)
		}
		client, err := kgo.NewClient(kgo.SeedBrokers(cl.Broker(1).Addr(), cl.Broker(2).Addr(), cl.Broker(3).Addr()),
			kgo.DefaultProduceTopic("f"), kgo.RequiredAcks(kgo.AllISRAcks()))
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		leader := func() int32 {
			code, body := call("GET", "/api/v1/topics/f/partitions/0", "")
			var pv web.PartitionView
			if code != http.StatusOK || json.Unmarshal(body, &pv) != nil {
				b.Fatalf("partition view: %d %s", code, body)
			}
			return pv.Leader
		}
		// healed waits until every broker is back in the ISR, so each
		// round starts from the same state.
		healed := func() {
			for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
				code, body := call("GET", "/api/v1/topics/f/partitions/0", "")
				var pv web.PartitionView
				if code == http.StatusOK && json.Unmarshal(body, &pv) == nil && len(pv.ISR) == 3 && pv.Leader >= 0 {
					return
				}
				if time.Now().After(deadline) {
					b.Fatalf("the ISR did not refill: %s", body)
				}
			}
		}
		crash := func() int32 {
			id := leader()
			if code, body := call("POST", "/api/v1/brokers/"+strconv.Itoa(int(id))+"/crash", ""); code != http.StatusOK {
				b.Fatalf("crash %d: %d %s", id, code, body)
			}
			return id
		}
		restart := func(id int32) {
			if code, body := call("POST", "/api/v1/brokers/"+strconv.Itoa(int(id))+"/restart", ""); code != http.StatusOK {
				b.Fatalf("restart %d: %d %s", id, code, body)
			}
			healed()
		}
		healed()
		if err := client.ProduceSync(ctx, &kgo.Record{Value: []byte("warm")}).FirstErr(); err != nil {
			b.Fatal(err)
		}
		for r := range failoverRounds {
			for _, side := range []string{"api", "franz-go"} {
				id := crash()
				start := time.Now()
				switch side {
				case "api":
					code, body := call("POST", "/api/v1/topics/f/records", `{"acks":"all","records":[{"value":"a`+strconv.Itoa(r)+`"}],"delivery_timeout_ms":60000}`)
					if code != http.StatusOK {
						b.Fatalf("api produce after the crash of %d: %d %s", id, code, body)
					}
					api = append(api, ms(time.Since(start)))
				default:
					if err := client.ProduceSync(ctx, &kgo.Record{Value: []byte("f" + strconv.Itoa(r))}).FirstErr(); err != nil {
						b.Fatalf("franz-go produce after the crash of %d: %v", id, err)
					}
					fr = append(fr, ms(time.Since(start)))
				}
				restart(id)
			}
		}
		cancel()
		client.Close()
		ws.Close()
		cl.Close()
	}
	slices.Sort(api)
	slices.Sort(fr)
	q := func(v []float64, p float64) float64 { return v[min(len(v)-1, int(p*float64(len(v))))] }
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(q(api, 0.5), "api-p50-ms")
	b.ReportMetric(q(api, 0.99), "api-p99-ms")
	b.ReportMetric(q(fr, 0.5), "franz-go-p50-ms")
	b.ReportMetric(q(fr, 0.99), "franz-go-p99-ms")
	b.ReportMetric(q(api, 0.5)/q(fr, 0.5), "p50-ratio")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
