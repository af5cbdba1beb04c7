package cluster

import (
	"context"
	"encoding/binary"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// latencyRecords is how many records one side of BenchmarkProduceConsumeLatency
// sends, one a millisecond.
const latencyRecords = 3000

// BenchmarkProduceConsumeLatency measures the time from a franz-go
// producer's send (acks=all, RF=3, min.insync.replicas=2, one partition, one
// record a millisecond) to a franz-go consumer receiving the record, on a
// Tidemark lab and on kfake in the same run. A record can only be consumed
// once the HW passes it, so this is the commit latency of the replication
// plus the wake-up of the waiting consumer fetch. Target: p99 ≤ 10 ms.
func BenchmarkProduceConsumeLatency(b *testing.B) {
	c, err := Open(Options{DataDir: b.TempDir(), Brokers: 3, Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if _, err := c.CreateTopic("lat", 1, 3, map[string]string{"min.insync.replicas": "2"}); err != nil {
		b.Fatal(err)
	}
	fake, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(1, "lat"))
	if err != nil {
		b.Fatal(err)
	}
	defer fake.Close()
	sides := []struct {
		name  string
		seeds []string
	}{{"tidemark", seeds(c)}, {"kfake", fake.ListenAddrs()}}
	lat := map[string][]float64{}
	for b.Loop() {
		for _, s := range sides {
			lat[s.name] = append(lat[s.name], measureLatency(b, s.seeds)...)
		}
	}
	pct := func(v []float64, q float64) float64 {
		slices.Sort(v)
		return v[min(len(v)-1, int(q*float64(len(v))))]
	}
	tm50, tm99 := pct(lat["tidemark"], 0.50), pct(lat["tidemark"], 0.99)
	kf99 := pct(lat["kfake"], 0.99)
	b.ReportMetric(tm50, "tidemark-p50-ms")
	b.ReportMetric(tm99, "tidemark-p99-ms")
	b.ReportMetric(pct(lat["kfake"], 0.50), "kfake-p50-ms")
	b.ReportMetric(kf99, "kfake-p99-ms")
	b.ReportMetric(tm99/kf99, "p99-ratio")
	b.ReportMetric(0, "ns/op")
}

// measureLatency produces latencyRecords records stamped with their send
// time, one a millisecond, and returns each one's send→receive latency in
// milliseconds, as the consumer saw it.
func measureLatency(b *testing.B, seeds []string) []float64 {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// No linger: every record is sent at once, so the figure is the
	// cluster's, not the client's batching delay.
	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic("lat"), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(0))
	if err != nil {
		b.Fatal(err)
	}
	defer prod.Close()
	// Start the consumer at the end, so it only sees this round's records.
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: make([]byte, 8)}).FirstErr(); err != nil {
		b.Fatal(err)
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		"lat": {0: kgo.NewOffset().AtEnd()}}), kgo.FetchMaxWait(time.Second))
	if err != nil {
		b.Fatal(err)
	}
	defer cons.Close()
	out := make([]float64, 0, latencyRecords)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for len(out) < latencyRecords && ctx.Err() == nil {
			fs := cons.PollFetches(ctx)
			now := time.Now()
			fs.EachRecord(func(r *kgo.Record) {
				if len(r.Value) == 8 && binary.BigEndian.Uint64(r.Value) != 0 {
					sent := time.Unix(0, int64(binary.BigEndian.Uint64(r.Value)))
					out = append(out, float64(now.Sub(sent).Microseconds())/1000)
				}
			})
		}
	}()
	// The consumer must be fetching before the first timed record.
	time.Sleep(200 * time.Millisecond)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for i := 0; i < latencyRecords; i++ {
		<-tick.C
		v := make([]byte, 8)
		binary.BigEndian.PutUint64(v, uint64(time.Now().UnixNano()))
		prod.Produce(ctx, &kgo.Record{Value: v}, func(_ *kgo.Record, err error) {
			if err != nil && ctx.Err() == nil {
				b.Error(err)
			}
		})
	}
	<-done
	if err := prod.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	if len(out) < latencyRecords {
		b.Fatalf("consumed %d of %d records", len(out), latencyRecords)
	}
	return out
}
