// Package metrics serves /metrics: the lab's state in Prometheus's text
// format under the names Kafka's JMX metrics get from the Prometheus JMX
// exporter (kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions
// becomes kafka_server_replicamanager_underreplicatedpartitions), so what a
// learner reads here is what an operator graphs for a real cluster. Every
// series carries the lab cluster ("cluster") and, where Kafka reports it per
// broker, the broker ("broker").
//
// Gauges are read from each cluster's Snapshot at scrape time (the
// cluster stays the one owner of its state); counters (ISR shrinks and
// expands, messages in) are fed by the cluster's events; the request
// histogram by the Kafka listeners (broker.Config.OnRequest).
package metrics

import (
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/twmb/franz-go/pkg/kmsg"

	"tidemark/events"
	"tidemark/server/chaos"
)

// Source is a lab cluster as /metrics reads it: a Snapshot at scrape time
// and the Bus its changes are published on. *cluster.Cluster is one; so is
// an observed Kafka cluster.
type Source interface {
	Snapshot() events.Snapshot
	Bus() *events.Bus
}

// ChaosRuns lists the durability checker's runs (*chaos.Service).
type ChaosRuns interface {
	List() []chaos.RunState
}

// Metrics is the registry behind /metrics. Its methods are safe for
// concurrent use.
type Metrics struct {
	reg    *prometheus.Registry
	logger *slog.Logger

	isrShrinks  *prometheus.CounterVec
	isrExpands  *prometheus.CounterVec
	messagesIn  *prometheus.CounterVec
	requestTime *prometheus.HistogramVec

	mu      sync.Mutex // guards sources and chaos
	sources map[string]*watch
	chaos   ChaosRuns
}

// New returns a Metrics with no cluster yet (Add one); logger nil means
// slog.Default().
func New(logger *slog.Logger) *Metrics {
	if logger == nil {
		logger = slog.Default()
	}
	m := &Metrics{reg: prometheus.NewRegistry(), logger: logger, sources: map[string]*watch{}}
	m.isrShrinks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kafka_server_replicamanager_isrshrinks_total",
		Help: "ISR shrinks of the partitions the broker leads (Kafka's IsrShrinksPerSec).",
	}, []string{"cluster", "broker"})
	m.isrExpands = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kafka_server_replicamanager_isrexpands_total",
		Help: "ISR expansions of the partitions the broker leads (Kafka's IsrExpandsPerSec).",
	}, []string{"cluster", "broker"})
	m.messagesIn = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kafka_server_brokertopicmetrics_messagesin_total",
		Help: "Records appended by the broker as a partition's leader (Kafka's MessagesInPerSec).",
	}, []string{"cluster", "broker", "topic"})
	m.requestTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "kafka_network_requestmetrics_totaltimems",
		Help:    "Milliseconds from a Kafka request's frame read to its response written (Kafka's TotalTimeMs).",
		Buckets: []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000},
	}, []string{"cluster", "broker", "request"})
	m.reg.MustRegister(m.isrShrinks, m.isrExpands, m.messagesIn, m.requestTime, snapshotCollector{m})
	return m
}

// Handler serves the registry in Prometheus's text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorLog: slogPrinter{m.logger}})
}

// Registry returns the registry (tests gather from it directly).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// SetChaos adds the checker's finished runs to /metrics.
func (m *Metrics) SetChaos(runs ChaosRuns) {
	m.mu.Lock()
	m.chaos = runs
	m.mu.Unlock()
}

// RequestObserver returns the broker.Config.OnRequest hook of cluster id:
// it puts each request's total time into the request histogram.
func (m *Metrics) RequestObserver(id string) func(broker int32, apiKey int16, total time.Duration) {
	return func(broker int32, apiKey int16, total time.Duration) {
		name := kmsg.NameForKey(apiKey)
		if name == "" {
			name = "Unknown"
		}
		m.requestTime.WithLabelValues(id, strconv.Itoa(int(broker)), name).Observe(float64(total) / float64(time.Millisecond))
	}
}

// Add starts reporting src as cluster id, replacing a source of that id,
// and returns the function that stops reporting it (its counters and
// request times go too).
func (m *Metrics) Add(id string, src Source) (remove func()) {
	w := startWatch(m, id, src)
	m.mu.Lock()
	old := m.sources[id]
	m.sources[id] = w
	m.mu.Unlock()
	if old != nil {
		old.stop()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			m.mu.Lock()
			if m.sources[id] == w {
				delete(m.sources, id)
			}
			m.mu.Unlock()
			w.stop()
			l := prometheus.Labels{"cluster": id}
			m.isrShrinks.DeletePartialMatch(l)
			m.isrExpands.DeletePartialMatch(l)
			m.messagesIn.DeletePartialMatch(l)
			m.requestTime.DeletePartialMatch(l)
		})
	}
}

// slogPrinter lets promhttp log its errors through slog.
type slogPrinter struct{ l *slog.Logger }

func (p slogPrinter) Println(v ...any) { p.l.Warn("metrics", "error", v) }
