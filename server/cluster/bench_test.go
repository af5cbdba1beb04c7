package cluster

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"tidemark/server/broker"
)

// produceTimed produces n records of 100 bytes through cl without waiting
// for each, flushes, and returns how long it all took.
func produceTimed(b *testing.B, cl *kgo.Client, n int, timeout time.Duration) time.Duration {
	value := bytes.Repeat([]byte("x"), 100)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	for i := 0; i < n; i++ {
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				b.Error(err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

func medianDuration(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkProduceReplication measures franz-go producing 100-byte records
// in batches to a topic with replication factor 3 and acks=all against one
// with replication factor 1 and acks=1, on the same cluster, alternating
// rounds. ratio is the RF=3 acks=all throughput over the RF=1 acks=1
// throughput (the target is ≥ 0.5; Kafka's 2014 benchmark showed 0.51).
func BenchmarkProduceReplication(b *testing.B) {
	c, err := Open(Options{DataDir: b.TempDir(), Brokers: 3, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if _, err := c.CreateTopic("rf1", 1, 1, nil); err != nil {
		b.Fatal(err)
	}
	if _, err := c.CreateTopic("rf3", 1, 3, map[string]string{"min.insync.replicas": "2"}); err != nil {
		b.Fatal(err)
	}
	client := func(acks kgo.Acks, topic string) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(c)...), kgo.DisableIdempotentWrite(), kgo.RequiredAcks(acks),
			kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5*time.Millisecond), kgo.ProducerBatchMaxBytes(1<<20),
			kgo.MaxBufferedRecords(1<<20))
		if err != nil {
			b.Fatal(err)
		}
		return cl
	}
	one, three := client(kgo.LeaderAck(), "rf1"), client(kgo.AllISRAcks(), "rf3")
	defer one.Close()
	defer three.Close()
	const perRound = 50_000
	produce := func(cl *kgo.Client) time.Duration { return produceTimed(b, cl, perRound, time.Minute) }
	produce(one) // warm up connections and metadata
	produce(three)
	var d1, d3 []time.Duration
	for b.Loop() {
		for r := 0; r < 3; r++ {
			d1 = append(d1, produce(one))
			d3 = append(d3, produce(three))
		}
	}
	m1, m3 := medianDuration(d1), medianDuration(d3)
	b.ReportMetric(float64(perRound)/m1.Seconds(), "rf1-acks1-rec/s")
	b.ReportMetric(float64(perRound)/m3.Seconds(), "rf3-acksall-rec/s")
	b.ReportMetric(m1.Seconds()/m3.Seconds(), "ratio")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkFollowerFetch measures how fast a follower catches up 32 MiB
// when its leader serves record data with sendfile (zero copy) and when it
// copies the same file regions through user space. ratio is the sendfile
// throughput over the copy throughput.
func BenchmarkFollowerFetch(b *testing.B) {
	open := func(copyRegions bool) *Cluster {
		c, err := Open(Options{DataDir: b.TempDir(), Brokers: 2, Paused: true,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Broker: broker.Config{CopyFileRegions: copyRegions, FetchMaxBytes: 4 << 20}})
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	zero, copied := open(false), open(true)
	defer zero.Close()
	defer copied.Close()
	const total = 32 << 20
	value := bytes.Repeat([]byte("z"), 1000)
	round := 0
	catchUp := func(c *Cluster) time.Duration {
		round++
		topic := fmt.Sprintf("t%d", round)
		if _, err := c.CreateTopic(topic, 1, 2, nil); err != nil {
			b.Fatal(err)
		}
		recs := make([]Record, 16)
		for i := range recs {
			recs[i] = Record{Value: value}
		}
		for n := 0; n < total; n += 16 * len(value) {
			if _, err := c.Produce(context.Background(), topic, 0, 1, recs, time.Second); err != nil {
				b.Fatal(err)
			}
		}
		leo := c.Broker(1).Replica(topic, 0).Status().LogEndOffset
		follower := c.Broker(2)
		start := time.Now()
		for follower.Replica(topic, 0).Status().LogEndOffset < leo {
			if err := c.StepFetch(context.Background(), 2); err != nil {
				b.Fatal(err)
			}
		}
		d := time.Since(start)
		if err := c.DeleteTopic(topic); err != nil {
			b.Fatal(err)
		}
		return d
	}
	var dz, dc []time.Duration
	for b.Loop() {
		for r := 0; r < 3; r++ {
			dz = append(dz, catchUp(zero))
			dc = append(dc, catchUp(copied))
		}
	}
	mz, mc := medianDuration(dz), medianDuration(dc)
	b.ReportMetric(total/1e6/mz.Seconds(), "sendfile-MB/s")
	b.ReportMetric(total/1e6/mc.Seconds(), "copy-MB/s")
	b.ReportMetric(mc.Seconds()/mz.Seconds(), "ratio")
	b.ReportMetric(0, "ns/op")
}
