package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"tidemark/events"
)

// The gauges read from a Snapshot at scrape time, and the checker's counts.
var (
	underReplicatedDesc = prometheus.NewDesc("kafka_server_replicamanager_underreplicatedpartitions",
		"Partitions the broker leads whose ISR is smaller than their replica set.", []string{"cluster", "broker"}, nil)
	underMinISRDesc = prometheus.NewDesc("kafka_cluster_partition_underminisr",
		"1 when the partition's ISR is below its min.insync.replicas (acks=all produces fail), reported by its leader.",
		[]string{"cluster", "broker", "topic", "partition"}, nil)
	offlineDesc = prometheus.NewDesc("kafka_controller_kafkacontroller_offlinepartitionscount",
		"Partitions without a leader, reported by the active controller.", []string{"cluster", "broker"}, nil)
	activeControllerDesc = prometheus.NewDesc("kafka_controller_kafkacontroller_activecontrollercount",
		"1 on the active controller, 0 on every other node.", []string{"cluster", "broker"}, nil)
	logEndOffsetDesc = prometheus.NewDesc("kafka_log_log_logendoffset",
		"The replica's log end offset (LEO).", []string{"cluster", "broker", "topic", "partition"}, nil)
	logStartOffsetDesc = prometheus.NewDesc("kafka_log_log_logstartoffset",
		"The replica's log start offset.", []string{"cluster", "broker", "topic", "partition"}, nil)
	chaosAckedDesc = prometheus.NewDesc("tidemark_chaos_acknowledged_writes",
		"Writes a finished chaos run's producers saw acknowledged.", []string{"run", "config"}, nil)
	chaosLostDesc = prometheus.NewDesc("tidemark_chaos_lost_writes",
		"Acknowledged writes a finished chaos run could not read back (a setting could have kept them).", []string{"run", "config"}, nil)
	chaosUnsyncedLostDesc = prometheus.NewDesc("tidemark_chaos_unsynced_lost_writes",
		"Acknowledged writes a finished chaos run lost to power loss before any replica fsynced them.", []string{"run", "config"}, nil)
)

// snapshotCollector reads every source's Snapshot when scraped: the
// cluster owns the state; nothing here keeps a copy.
type snapshotCollector struct{ m *Metrics }

// Describe sends every descriptor the collector may send.
func (c snapshotCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{underReplicatedDesc, underMinISRDesc, offlineDesc, activeControllerDesc,
		logEndOffsetDesc, logStartOffsetDesc, chaosAckedDesc, chaosLostDesc, chaosUnsyncedLostDesc} {
		ch <- d
	}
}

// Collect sends the gauges of every source and finished chaos run.
func (c snapshotCollector) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.Lock()
	srcs := make(map[string]Source, len(c.m.sources))
	for id, w := range c.m.sources {
		srcs[id] = w.src
	}
	runs := c.m.chaos
	c.m.mu.Unlock()
	for id, src := range srcs {
		collectSnapshot(ch, id, src.Snapshot())
	}
	if runs == nil {
		return
	}
	for _, st := range runs.List() {
		if st.Result == nil {
			continue
		}
		n := st.Result.Counts
		ch <- prometheus.MustNewConstMetric(chaosAckedDesc, prometheus.GaugeValue, float64(n.Acked), st.ID, string(st.Config))
		ch <- prometheus.MustNewConstMetric(chaosLostDesc, prometheus.GaugeValue, float64(n.Lost), st.ID, string(st.Config))
		ch <- prometheus.MustNewConstMetric(chaosUnsyncedLostDesc, prometheus.GaugeValue, float64(n.UnsyncedLost), st.ID, string(st.Config))
	}
}

// collectSnapshot sends one cluster's gauges. A crashed broker reports
// nothing, as a stopped Kafka broker's JMX does not.
func collectSnapshot(ch chan<- prometheus.Metric, id string, snap events.Snapshot) {
	gauge := func(d *prometheus.Desc, v int, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), append([]string{id}, labels...)...)
	}
	running := map[int32]bool{}
	urp := map[int32]int{}
	for _, b := range snap.Brokers {
		if b.State != events.BrokerCrashed {
			running[b.ID] = true
			urp[b.ID] = 0
		}
	}
	offline := 0
	for _, t := range snap.Topics {
		minISR := 1
		if v, err := strconv.Atoi(t.Configs["min.insync.replicas"]); err == nil {
			minISR = v
		}
		for i := range t.Partitions {
			p := &t.Partitions[i]
			part := strconv.Itoa(int(p.Partition))
			if p.Offline() {
				offline++
			} else if running[p.Leader] {
				if p.UnderReplicated() {
					urp[p.Leader]++
				}
				gauge(underMinISRDesc, b2i(len(p.ISR) < minISR), brokerLabel(p.Leader), t.Name, part)
			}
			for _, r := range p.ReplicaLogs {
				if running[r.Broker] {
					gauge(logEndOffsetDesc, int(r.LEO), brokerLabel(r.Broker), t.Name, part)
					gauge(logStartOffsetDesc, int(r.LogStartOffset), brokerLabel(r.Broker), t.Name, part)
				}
			}
		}
	}
	for b, n := range urp {
		gauge(underReplicatedDesc, n, brokerLabel(b))
		if b != snap.Controller {
			gauge(activeControllerDesc, 0, brokerLabel(b))
		}
	}
	if snap.Controller != events.NoBroker {
		gauge(activeControllerDesc, 1, brokerLabel(snap.Controller))
		gauge(offlineDesc, offline, brokerLabel(snap.Controller))
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
