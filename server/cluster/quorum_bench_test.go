package cluster

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"tidemark/server/controller"
)

// BenchmarkQuorumVersusISR measures produce throughput at acks=all, RF 3,
// on a replication.protocol=quorum topic and a pipeline topic against an
// isr topic (min.insync.replicas=2; the pipeline's too) of the same lab, in
// the same run: franz-go's idempotent producer, 100-byte records, 5 ms
// linger, kfakeBenchRecords per round, the median of kfakeBenchRounds
// rounds per topic, the order of the topics rotating each round. The
// ratios are quorum's and pipeline's throughput over isr's; the pipeline's
// messages per committed record are reported too.
func BenchmarkQuorumVersusISR(b *testing.B) {
	c, err := Open(Options{DataDir: b.TempDir(), Brokers: 3, Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	topics := []string{"isr", "quorum", "pipeline"}
	for _, topic := range topics {
		if _, err := c.CreateTopic(topic, 1, 3, map[string]string{"min.insync.replicas": "2", "replication.protocol": topic}); err != nil {
			b.Fatal(err)
		}
	}
	clients := map[string]*kgo.Client{}
	for _, topic := range topics {
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(c)...), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5*time.Millisecond),
			kgo.ProducerBatchMaxBytes(1<<20), kgo.MaxBufferedRecords(1<<20), kgo.RequiredAcks(kgo.AllISRAcks()))
		if err != nil {
			b.Fatal(err)
		}
		defer cl.Close()
		clients[topic] = cl
		produceTimed(b, cl, kfakeBenchRecords, 2*time.Minute) // warm up: connections, metadata, producer id, a leader
	}
	durations := map[string][]time.Duration{}
	pipelineSent := func() (n int64) {
		for _, k := range c.ReplicationMessages()[controller.ProtocolPipeline] {
			n += k
		}
		return n
	}
	sent0 := pipelineSent()
	for b.Loop() {
		for r := range kfakeBenchRounds {
			for _, topic := range rotate(topics, r) {
				durations[topic] = append(durations[topic], produceTimed(b, clients[topic], kfakeBenchRecords, 2*time.Minute))
			}
		}
	}
	sent := pipelineSent() - sent0
	rate := func(topic string) float64 { return kfakeBenchRecords / medianDuration(durations[topic]).Seconds() }
	b.ReportMetric(rate("isr"), "isr-rec/s")
	b.ReportMetric(rate("quorum"), "quorum-rec/s")
	b.ReportMetric(rate("pipeline"), "pipeline-rec/s")
	b.ReportMetric(rate("quorum")/rate("isr"), "quorum/isr-ratio")
	b.ReportMetric(rate("pipeline")/rate("isr"), "pipeline/isr-ratio")
	b.ReportMetric(float64(sent)/float64(len(durations["pipeline"])*kfakeBenchRecords), "pipeline-msgs/record")
	b.ReportMetric(0, "ns/op")
}
