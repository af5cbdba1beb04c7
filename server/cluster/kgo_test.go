package cluster

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// openRunning starts a running (not paused) cluster with free ports.
func openRunning(t testing.TB, brokers int) *Cluster {
	t.Helper()
	c, err := Open(Options{DataDir: t.TempDir(), Brokers: brokers, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func seeds(c *Cluster) []string {
	var out []string
	for _, b := range c.liveBrokers() {
		out = append(out, b.Addr())
	}
	return out
}

// TestKgoProduceConsume drives the lab with franz-go, a real Kafka client:
// non-idempotent produce with acks=all to every partition, then a direct
// partition consumer reads everything back in order.
func TestKgoProduceConsume(t *testing.T) {
	c := openRunning(t, 3)
	if _, err := c.CreateTopic("orders", 3, 3, map[string]string{"min.insync.replicas": "2"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds(c)...), kgo.DisableIdempotentWrite(),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	const n = 300
	for i := 0; i < n; i++ {
		r := &kgo.Record{Key: []byte(fmt.Sprintf("k%d", i%7)), Value: []byte(fmt.Sprintf("v%d", i))}
		if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	// Every acks=all record is below the HW, so a consumer reads all of them.
	cons, err := kgo.NewClient(kgo.SeedBrokers(seeds(c)...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		"orders": {0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart(), 2: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	seen := map[string]bool{}
	last := map[int32]int64{0: -1, 1: -1, 2: -1}
	for len(seen) < n {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records", len(seen), n)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != last[r.Partition]+1 {
				t.Fatalf("partition %d: offset %d after %d", r.Partition, r.Offset, last[r.Partition])
			}
			last[r.Partition] = r.Offset
			if seen[string(r.Value)] {
				t.Fatalf("record %s read twice", r.Value)
			}
			seen[string(r.Value)] = true
			// The lab partitions keys as Kafka's Java client and kgo do.
			if want := PartitionForKey(r.Key, 3); r.Partition != want {
				t.Fatalf("key %s in partition %d, the murmur2 partitioner says %d", r.Key, r.Partition, want)
			}
		})
	}
}
