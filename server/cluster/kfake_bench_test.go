package cluster

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// kfakeBenchRecords is how many 100-byte records each round produces or
// consumes, enough for -benchtime 1x to measure throughput, not start-up.
const kfakeBenchRecords = 200_000

// kfakeBenchRounds is how many timed rounds each side runs per op.
const kfakeBenchRounds = 5

// BenchmarkVersusKfake measures franz-go against Tidemark and against
// franz-go's in-memory fake cluster (kfake) in the same run, 100-byte
// records to a one-partition topic, 5 ms linger: producing at RF=1 acks=1
// (non-idempotent) and at RF=3 acks=all (min.insync.replicas=2, idempotent,
// franz-go's default), and consuming back. Each ratio is Tidemark's
// throughput over kfake's (targets: ≥ 1.0 for RF=1 acks=1, ≥ 0.7 for RF=3
// acks=all). Medians of kfakeBenchRounds rounds per op; the side that goes
// first alternates from round to round, so load from other processes and
// the collector's cycle hit both alike.
func BenchmarkVersusKfake(b *testing.B) {
	c, err := Open(Options{DataDir: b.TempDir(), Brokers: 3, Logger: quietLogger()})
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
	fake, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(1, "rf1", "rf3"))
	if err != nil {
		b.Fatal(err)
	}
	defer fake.Close()

	type target struct {
		name  string
		seeds []string
	}
	targets := []target{{"tidemark", seeds(c)}, {"kfake", fake.ListenAddrs()}}
	producer := func(seeds []string, topic string, acksAll bool) *kgo.Client {
		opts := []kgo.Opt{kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5 * time.Millisecond),
			kgo.ProducerBatchMaxBytes(1 << 20), kgo.MaxBufferedRecords(1 << 20)}
		if acksAll {
			opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
		} else {
			opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			b.Fatal(err)
		}
		return cl
	}
	produce := func(cl *kgo.Client) time.Duration { return produceTimed(b, cl, kfakeBenchRecords, 2*time.Minute) }
	// consume reads the first kfakeBenchRecords records of topic with a new
	// consumer.
	consume := func(seeds []string, topic string) time.Duration {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
			topic: {0: kgo.NewOffset().AtStart()}}), kgo.FetchMaxBytes(16<<20))
		if err != nil {
			b.Fatal(err)
		}
		defer cl.Close()
		start := time.Now()
		n := 0
		for n < kfakeBenchRecords {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				b.Fatalf("consumed %d of %d", n, kfakeBenchRecords)
			}
			n += fs.NumRecords()
		}
		return time.Since(start)
	}

	durations := map[string][]time.Duration{}
	clients := map[string]*kgo.Client{}
	for _, t := range targets {
		clients[t.name+"/rf1"] = producer(t.seeds, "rf1", false)
		clients[t.name+"/rf3"] = producer(t.seeds, "rf3", true)
		defer clients[t.name+"/rf1"].Close()
		defer clients[t.name+"/rf3"].Close()
		produce(clients[t.name+"/rf1"]) // warm up: connections, metadata, producer id
		produce(clients[t.name+"/rf3"])
	}
	for b.Loop() {
		for r := 0; r < kfakeBenchRounds; r++ {
			for _, t := range rotate(targets, r) {
				durations[t.name+"/produce-rf1"] = append(durations[t.name+"/produce-rf1"], produce(clients[t.name+"/rf1"]))
				durations[t.name+"/produce-rf3"] = append(durations[t.name+"/produce-rf3"], produce(clients[t.name+"/rf3"]))
				durations[t.name+"/consume"] = append(durations[t.name+"/consume"], consume(t.seeds, "rf3"))
			}
		}
	}
	rate := func(key string) float64 { return kfakeBenchRecords / medianDuration(durations[key]).Seconds() }
	for _, m := range []struct{ key, unit string }{
		{"produce-rf1", "rf1-acks1"}, {"produce-rf3", "rf3-acksall"}, {"consume", "consume"},
	} {
		tm, kf := rate("tidemark/"+m.key), rate("kfake/"+m.key)
		b.ReportMetric(tm, "tidemark-"+m.unit+"-rec/s")
		b.ReportMetric(kf, "kfake-"+m.unit+"-rec/s")
		b.ReportMetric(tm/kf, m.unit+"-ratio")
	}
	b.ReportMetric(0, "ns/op")
}

// rotate returns s rotated left by r: a different element first each round.
func rotate[T any](s []T, r int) []T {
	r %= len(s)
	return append(slices.Clone(s[r:]), s[:r]...)
}
