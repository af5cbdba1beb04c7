package metrics

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kgo"

	"tidemark/server/broker"
	"tidemark/server/cluster"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// scrape fetches /metrics over HTTP and parses it with Prometheus's text
// parser, as a Prometheus server would.
func scrape(t *testing.T, srv *httptest.Server) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("Content-Type %q", ct)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return fams
}

// value returns the value of the series of name whose labels include
// want; ok is false when there is none.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) (v float64, ok bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		for k, w := range want {
			if have[k] != w {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

func mustValue(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	t.Helper()
	v, ok := value(fams, name, want)
	if !ok {
		t.Fatalf("no %s%v in the scrape", name, want)
	}
	return v
}

// caughtUp waits (bounded) until the counters have counted every event
// the cluster published so far.
func caughtUp(t *testing.T, m *Metrics, id string, cl *cluster.Cluster) {
	t.Helper()
	want := cl.Bus().LastSeq()
	m.mu.Lock()
	w := m.sources[id]
	m.mu.Unlock()
	deadline := time.Now().Add(5 * time.Second)
	for w.counted.Load() < want {
		if time.Now().After(deadline) {
			t.Fatalf("counters at event %d, want %d", w.counted.Load(), want)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestMetricsFollowProduceAndCrash scrapes a real lab cluster: a produce
// over the Kafka protocol moves the leader's LEO, messages in and the
// Produce request histogram; a follower's crash, once the clock passes
// replica.lag.time.max.ms, shrinks the ISR and leaves the partition under-replicated.
func TestMetricsFollowProduceAndCrash(t *testing.T) {
	m := New(quiet)
	cl, err := cluster.Open(cluster.Options{DataDir: t.TempDir(), Brokers: 3, Paused: true, Logger: quiet,
		Broker: broker.Config{OnRequest: m.RequestObserver("main")}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	remove := m.Add("main", cl)
	defer remove()
	tp, err := cl.CreateTopic("demo", 1, 3, map[string]string{"min.insync.replicas": "3"})
	if err != nil {
		t.Fatal(err)
	}
	leader := tp.Partitions[0].Leader
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()

	caughtUp(t, m, "main", cl)
	before := scrape(t, srv)
	lb := brokerLabel(leader)
	part := map[string]string{"cluster": "main", "broker": lb, "topic": "demo", "partition": "0"}
	if v := mustValue(t, before, "kafka_log_log_logendoffset", part); v != 0 {
		t.Fatalf("LEO before any produce: %v", v)
	}
	if v := mustValue(t, before, "kafka_controller_kafkacontroller_activecontrollercount", map[string]string{"cluster": "main", "broker": "0"}); v != 1 {
		t.Fatalf("controller node 0: activecontrollercount %v", v)
	}
	if v := mustValue(t, before, "kafka_server_replicamanager_isrshrinks_total", map[string]string{"cluster": "main", "broker": lb}); v != 0 {
		t.Fatalf("isrshrinks before a crash: %v", v)
	}

	var listener string
	for _, b := range cl.Snapshot().Brokers {
		if b.ID == leader {
			listener = b.Listener
		}
	}
	cli, err := kgo.NewClient(kgo.SeedBrokers(listener), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
		kgo.DefaultProduceTopic("demo"))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cli.ProduceSync(ctx, &kgo.Record{Value: []byte("a")}, &kgo.Record{Value: []byte("b")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	caughtUp(t, m, "main", cl)
	// The listener times a request once its response is written, which can
	// be just after the client has read it: wait (bounded) for the count.
	produceTimed := map[string]string{"cluster": "main", "broker": lb, "request": "Produce"}
	after := scrape(t, srv)
	for i := 0; ; i++ {
		if v, ok := value(after, "kafka_network_requestmetrics_totaltimems", produceTimed); ok && v >= 1 {
			break
		}
		if i == 5000 {
			t.Fatal("the Produce request was never timed")
		}
		time.Sleep(time.Millisecond)
		after = scrape(t, srv)
	}
	if v := mustValue(t, after, "kafka_log_log_logendoffset", part); v != 2 {
		t.Fatalf("leader LEO after producing 2 records: %v", v)
	}
	if v := mustValue(t, after, "kafka_server_brokertopicmetrics_messagesin_total", map[string]string{"cluster": "main", "broker": lb, "topic": "demo"}); v != 2 {
		t.Fatalf("messagesin after producing 2 records: %v", v)
	}
	if v := mustValue(t, after, "kafka_server_replicamanager_underreplicatedpartitions", map[string]string{"cluster": "main", "broker": lb}); v != 0 {
		t.Fatalf("under-replicated before the crash: %v", v)
	}

	follower := tp.Partitions[0].Replicas[0]
	if follower == leader {
		follower = tp.Partitions[0].Replicas[1]
	}
	if err := cl.Crash(follower); err != nil {
		t.Fatal(err)
	}
	if err := cl.Step(10 * time.Second); err != nil { // past replica.lag.time.max.ms and the session timeout
		t.Fatal(err)
	}
	caughtUp(t, m, "main", cl)
	crashed := scrape(t, srv)
	if v := mustValue(t, crashed, "kafka_server_replicamanager_isrshrinks_total", map[string]string{"cluster": "main", "broker": lb}); v < 1 {
		t.Fatalf("isrshrinks after a follower crashed: %v", v)
	}
	if v := mustValue(t, crashed, "kafka_server_replicamanager_underreplicatedpartitions", map[string]string{"cluster": "main", "broker": lb}); v != 1 {
		t.Fatalf("under-replicated after a follower crashed: %v", v)
	}
	if v := mustValue(t, crashed, "kafka_cluster_partition_underminisr", part); v != 1 {
		t.Fatalf("underminisr with 2 of min.insync.replicas=3: %v", v)
	}
	if _, ok := value(crashed, "kafka_log_log_logendoffset", map[string]string{"broker": brokerLabel(follower)}); ok {
		t.Fatal("a crashed broker still reports its LEO")
	}
	if v := mustValue(t, crashed, "kafka_controller_kafkacontroller_offlinepartitionscount", map[string]string{"cluster": "main"}); v != 0 {
		t.Fatalf("offline partitions: %v", v)
	}

	remove()
	if _, ok := value(scrape(t, srv), "kafka_server_replicamanager_isrshrinks_total", map[string]string{"cluster": "main"}); ok {
		t.Fatal("a removed cluster's counters are still reported")
	}
}
