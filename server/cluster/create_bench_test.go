package cluster

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"tidemark/server/broker"
)

// TestCreateThousandPartitionTopicFencesNobody creates a topic of 1,000
// partitions with replication factor 3 (an allowed size) on a paused lab and
// then moves the clock past the session timeout: every broker hosts its
// 1,000 replicas, none was fenced or had to register again, and every
// partition has a leader and its full ISR. The new logs are directories
// only until their first write (no segment files, no fsyncs yet).
func TestCreateThousandPartitionTopicFencesNobody(t *testing.T) {
	c := openPaused(t)
	epochs := map[int32]int64{}
	for _, b := range c.liveBrokers() {
		epochs[b.ID()] = b.BrokerEpoch()
	}
	if _, err := c.CreateTopic("wide", 1000, 3, nil); err != nil {
		t.Fatal(err)
	}
	for _, b := range c.liveBrokers() {
		if n := hostedOf(b, "wide"); n != 1000 {
			t.Fatalf("broker %d hosts %d replicas of wide, want 1000", b.ID(), n)
		}
		entries, err := os.ReadDir(b.LogDir().Path() + "/wide-7")
		if err != nil || len(entries) != 0 {
			t.Fatalf("broker %d: a new log holds %d files (%v), want none before its first write", b.ID(), len(entries), err)
		}
	}
	for range 3 {
		if err := c.Step(time.Second); err != nil { // 3 s: past the 2 s session timeout
			t.Fatal(err)
		}
	}
	md := c.Controller().Metadata()
	for _, b := range md.Brokers {
		if b.Fenced {
			t.Errorf("broker %d fenced", b.ID)
		}
	}
	for _, b := range c.liveBrokers() {
		if b.BrokerEpoch() != epochs[b.ID()] {
			t.Errorf("broker %d registered again (epoch %d, was %d)", b.ID(), b.BrokerEpoch(), epochs[b.ID()])
		}
	}
	for _, p := range md.Topic("wide").Partitions {
		if p.Leader < 1 || len(p.ISR) != 3 {
			t.Fatalf("partition %d: leader %d, ISR %v", p.Partition, p.Leader, p.ISR)
		}
	}
}

func hostedOf(b *broker.Broker, topic string) int {
	n := 0
	for _, l := range b.LogDir().Logs() {
		if l.TopicPartition().Topic == topic {
			n++
		}
	}
	return n
}

// BenchmarkCreateTopic1000 times creating a topic of 1,000 partitions with
// replication factor 3 on a running 3-broker lab (the clock running, so the
// brokers heartbeat and tick meanwhile), and reports the seconds per
// creation (target < 1 s) and how many brokers were fenced meanwhile
// (target 0).
func BenchmarkCreateTopic1000(b *testing.B) {
	c, err := Open(Options{DataDir: b.TempDir(), Brokers: 3, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	b.ResetTimer()
	var total time.Duration
	fenced := 0
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if _, err := c.CreateTopic(fmt.Sprintf("wide%d", i), 1000, 3, nil); err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
		md := c.Controller().Metadata()
		for _, br := range md.Brokers {
			if br.Fenced {
				fenced++
			}
		}
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(total.Seconds()/float64(b.N), "s/create")
	b.ReportMetric(float64(fenced), "fenced")
}
