package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDeleteRecordsWaitsForFollowers: DeleteRecords answers as Kafka's
// DelayedDeleteRecords, once the partition's low watermark (the least log
// start offset of the replicas on live brokers) reaches the offset. A
// follower cut off from the leader holds it back, so a short timeout is
// REQUEST_TIMED_OUT (the leader's log start moved all the same); healed,
// the answer comes once that follower's log start is there. A crashed
// follower holds it back only until the controller fences its broker.
func TestDeleteRecordsWaitsForFollowers(t *testing.T) {
	c := openRunning(t, 3)
	if _, err := c.CreateTopic("lw", 1, 3, nil); err != nil {
		t.Fatal(err)
	}
	produceKgo(t, c, "lw", 10)
	tp, _ := c.Controller().Topic("lw")
	leader := tp.Partitions[0].Leader
	var followers []int32
	for _, id := range tp.Partitions[0].Replicas {
		if id != leader {
			followers = append(followers, id)
		}
	}
	for _, id := range followers {
		b := c.Broker(id)
		waitFor(t, fmt.Sprintf("broker %d to hold the 10 records", id), func() bool { return b.Replica("lw", 0).Log().LogEndOffset() == 10 })
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Broker(leader).Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	deleteTo := func(offset int64, timeout time.Duration) kmsg.DeleteRecordsResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrDeleteRecordsRequest()
		req.TimeoutMillis = int32(timeout.Milliseconds())
		rt := kmsg.NewDeleteRecordsRequestTopic()
		rt.Topic = "lw"
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Partition, rp.Offset = 0, offset
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl.Broker(int(leader)))
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0]
	}

	lagging := c.Broker(followers[0])
	if err := c.Cut(leader, followers[0], false); err != nil {
		t.Fatal(err)
	}
	got := deleteTo(4, 300*time.Millisecond)
	if got.ErrorCode != kerr.RequestTimedOut.Code || got.LowWatermark != -1 {
		t.Fatalf("with broker %d cut off: %v, low watermark %d; want REQUEST_TIMED_OUT", followers[0], kerr.ErrorForCode(got.ErrorCode), got.LowWatermark)
	}
	if s := c.Broker(leader).Replica("lw", 0).Log().LogStartOffset(); s != 4 {
		t.Fatalf("the leader's log start offset is %d, want 4", s)
	}
	if s := lagging.Replica("lw", 0).Log().LogStartOffset(); s != 0 {
		t.Fatalf("the cut-off follower's log start offset is %d, want 0", s)
	}
	c.Heal()
	got = deleteTo(4, 20*time.Second)
	if got.ErrorCode != 0 || got.LowWatermark != 4 {
		t.Fatalf("after the heal: %v, low watermark %d; want 4", kerr.ErrorForCode(got.ErrorCode), got.LowWatermark)
	}
	// The answer waited for it: every follower's log start is there.
	for _, id := range followers {
		if s := c.Broker(id).Replica("lw", 0).Log().LogStartOffset(); s < 4 {
			t.Fatalf("answered while broker %d's log start offset is %d", id, s)
		}
	}

	// A crashed follower's broker, once fenced, no longer counts.
	if err := c.Crash(followers[1]); err != nil {
		t.Fatal(err)
	}
	waitFor(t, fmt.Sprintf("the controller to fence broker %d", followers[1]), func() bool {
		md := c.Controller().Metadata()
		b := md.Broker(followers[1])
		return b == nil || b.Fenced
	})
	got = deleteTo(6, 20*time.Second)
	if got.ErrorCode != 0 || got.LowWatermark != 6 {
		t.Fatalf("with broker %d crashed: %v, low watermark %d; want 6", followers[1], kerr.ErrorForCode(got.ErrorCode), got.LowWatermark)
	}
}
