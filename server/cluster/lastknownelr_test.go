package cluster

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDescribeLastKnownELR: DescribeTopicPartitions reports KIP-966's last
// known ELR. Under kraft-elr (Kafka 4.1) with min.insync.replicas=3,
// crashing the two followers and then the leader leaves the partition
// leaderless with all three in the ELR and the leader kept as the last
// known leader (PartitionChangeBuilder.maybeUpdateLastKnownLeader); each
// follower back from its crash (unclean: no clean-shutdown marker) leaves
// the ELR; once the leader is back too, it leaves the ELR, and as the last
// known leader it leads again and the list is empty. Before, the list was
// always empty.
func TestDescribeLastKnownELR(t *testing.T) {
	c := openPaused(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.CreateTopic("elr", 1, 3, map[string]string{"min.insync.replicas": "3"}); err != nil {
		t.Fatal(err)
	}
	snap := c.Snapshot()
	p := snap.Partition("elr", 0)
	leader := p.Leader
	var followers []int32
	for _, r := range p.Replicas {
		if r != leader {
			followers = append(followers, r)
		}
	}
	fence := func() { // past the session timeout, then heartbeats spread the metadata
		t.Helper()
		for _, d := range []time.Duration{10 * time.Second, 10 * time.Second, time.Second} {
			if err := c.Step(d); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, id := range append(slices.Clone(followers), leader) {
		if err := c.Crash(id); err != nil {
			t.Fatal(err)
		}
		fence()
	}
	for _, id := range followers {
		if err := c.Restart(id); err != nil {
			t.Fatal(err)
		}
		fence()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(c)...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	describe := func() kmsg.DescribeTopicPartitionsResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		req.Topics = []kmsg.DescribeTopicPartitionsRequestTopic{{Topic: "elr"}}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("DescribeTopicPartitions: %v %+v", err, resp)
		}
		return resp.Topics[0].Partitions[0]
	}
	got := describe()
	want, _ := c.Controller().Topic("elr")
	if got.LeaderID != -1 || !slices.Equal(got.EligibleLeaderReplicas, []int32{leader}) ||
		!slices.Equal(got.LastKnownELR, []int32{leader}) ||
		!slices.Equal(got.LastKnownELR, want.Partitions[0].LastKnownELR) {
		t.Fatalf("leaderless, followers back uncleanly: leader %d, ELR %v, last known ELR %v; want -1, [%d], [%d] (controller %+v)",
			got.LeaderID, got.EligibleLeaderReplicas, got.LastKnownELR, leader, leader, want.Partitions[0])
	}

	if err := c.Restart(leader); err != nil {
		t.Fatal(err)
	}
	fence()
	if got := describe(); got.LeaderID != leader || len(got.LastKnownELR) != 0 {
		t.Fatalf("every replica back: leader %d, last known ELR %v; want the last known leader %d and none", got.LeaderID, got.LastKnownELR, leader)
	}
}
