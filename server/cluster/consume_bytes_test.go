package cluster

import (
	"bytes"
	"context"
	"testing"
	"time"
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
