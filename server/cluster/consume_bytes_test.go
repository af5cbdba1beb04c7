package cluster

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestConsumeStopsAtMaxBytes: one Consume reads up to ConsumeMaxBytes of
// batches (the batch that reaches it included), as Kafka's consumer's
// max.partition.fetch.bytes does, however many records it was asked for;
// the next goes on from there, with the values whole.
func TestConsumeStopsAtMaxBytes(t *testing.T) {
	c := openPaused(t)
	if _, err := c.CreateTopic("big", 1, 3, nil); err != nil {
		t.Fatal(err)
	}
	val := bytes.Repeat([]byte("v"), 400<<10) // 5 batches of 400 KiB
	for range 5 {
		if _, err := c.Produce(context.Background(), "big", 0, 1, []Record{{Value: val}}, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	// Followers fetch a megabyte a round (replica.fetch.max.bytes).
	for i := 0; c.Broker(1).Replica("big", 0).Status().HighWatermark < 5; i++ {
		if i == 20 {
			t.Fatal("the HW did not reach 5 in 20 fetch rounds")
		}
		stepFetchAll(t, c, 2, 3)
	}
	recs, hw, err := c.Consume("big", 0, 0, 100)
	if err != nil || hw != 5 {
		t.Fatalf("consume: hw %d, %v", hw, err)
	}
	// 400 and 800 KiB are under 1 MiB; the third batch reaches it.
	if len(recs) != 3 {
		t.Fatalf("one consume of 5 × 400 KiB gave %d records, want 3 (1 MiB reached in the third)", len(recs))
	}
	rest, _, err := c.Consume("big", 0, 3, 100)
	if err != nil || len(rest) != 2 || rest[0].Offset != 3 {
		t.Fatalf("the next consume from 3: %d records, %v", len(rest), err)
	}
	for _, r := range append(recs, rest...) {
		if !bytes.Equal(r.Value, val) {
			t.Fatalf("record %d: value of %d bytes, want the whole %d", r.Offset, len(r.Value), len(val))
		}
	}
}

// TestConsumeStopsAtMaxBytesDecompressed: the bound counts the records'
// bytes after decompression too: one gzip batch of ten 300 KiB values is a
// few KiB on disk, and one Consume returns the records up to the one that
// reaches ConsumeMaxBytes decompressed (4), not all ten. Before, it
// returned the whole batch however large it inflated.
func TestConsumeStopsAtMaxBytesDecompressed(t *testing.T) {
	c := openRunning(t, 1)
	if _, err := c.CreateTopic("zipped", 1, 1, nil); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(c)...), kgo.DefaultProduceTopic("zipped"),
		kgo.ProducerBatchCompression(kgo.GzipCompression()), kgo.ProducerBatchMaxBytes(8<<20), kgo.ProducerLinger(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	val := bytes.Repeat([]byte("v"), 300<<10)
	recs := make([]*kgo.Record, 10)
	for i := range recs {
		recs[i] = &kgo.Record{Value: val}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	got, hw, err := c.Consume("zipped", 0, 0, 100)
	if err != nil || hw != 10 {
		t.Fatalf("consume: hw %d, %v", hw, err)
	}
	if segs, _ := c.Broker(1).Replica("zipped", 0).Log().Segments(); len(segs) == 0 || segs[0].LogBytes > 64<<10 {
		t.Fatalf("the batch is not small on disk: %+v", segs)
	}
	if len(got) != 4 {
		t.Fatalf("one consume of 10 × 300 KiB in one gzip batch gave %d records, want 4 (1 MiB reached decompressed)", len(got))
	}
	rest, _, err := c.Consume("zipped", 0, 4, 100)
	if err != nil || len(rest) != 4 || rest[0].Offset != 4 {
		t.Fatalf("the next consume from 4: %d records, %v", len(rest), err)
	}
}
