package cluster

import (
	"context"
	"slices"
	"testing"
	"time"
)

// delayedPair creates topic t (1 partition, RF 3, replica.lag.time.max.ms
// 3000) on a paused lab, has every follower caught up, and returns the
// leader, one follower and the other.
func delayedPair(t *testing.T, c *Cluster) (leader, follower, other int32) {
	t.Helper()
	if _, err := c.CreateTopic("t", 1, 3, map[string]string{"replica.lag.time.max.ms": "3000"}); err != nil {
		t.Fatal(err)
	}
	md, _ := c.controller.Topic("t")
	leader = md.Partitions[0].Leader
	for _, id := range md.Partitions[0].Replicas {
		switch {
		case id == leader:
		case follower == 0:
			follower = id
		default:
			other = id
		}
	}
	stepFetchAll(t, c, c.BrokerIDs()...)
	return leader, follower, other
}

// isrOf is the controller's ISR of t-0, sorted.
func isrOf(c *Cluster) []int32 {
	md, _ := c.controller.Topic("t")
	return slices.Sorted(slices.Values(md.Partitions[0].ISR))
}

func produceAcks1(t *testing.T, c *Cluster, value string) {
	t.Helper()
	if _, err := c.Produce(context.Background(), "t", 0, 1, []Record{{Value: []byte(value)}}, time.Second); err != nil {
		t.Fatal(err)
	}
}

func leoOf(c *Cluster, id int32) int64 {
	return c.Broker(id).Replica("t", 0).Status().LogEndOffset
}

// TestDelayedFetchLeavesAndRejoinsISR is the scenario
// lessons/scenarios/delayed-fetch-leaves-isr.scenario.

// TestDelayUnderLagKeepsISR: a follower whose link is delayed 400 ms each
// way fetches one round at a time while records keep coming and stays in
// the ISR (a leader counts a follower caught up at its fetch before last,
// so the lag reaches two round trips and the steps' half second: 2.6 s,
// under replica.lag.time.max.ms); a cut while its Fetch is on its way
// loses it even once healed.
func TestDelayUnderLagKeepsISR(t *testing.T) {
	c := openPaused(t)
	leader, follower, other := delayedPair(t, c)
	if err := c.DelayLink(follower, leader, 400*time.Millisecond, false); err != nil {
		t.Fatal(err)
	}
	for i := range 20 { // 10 s of lab time
		produceAcks1(t, c, "v")
		stepFetchAll(t, c, follower, other)
		if err := c.Step(500 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if isr := isrOf(c); !slices.Contains(isr, follower) {
			t.Fatalf("step %d: ISR %v; a 2 s round trip keeps broker %d in", i, isr, follower)
		}
	}
	if leo := leoOf(c, follower); leo < 18 {
		t.Fatalf("the follower has LEO %d of 20 records: its delayed fetches did not go on", leo)
	}

	// A cut and a heal while a Fetch is on its way: it is lost.
	leo := leoOf(c, follower)
	produceAcks1(t, c, "w")
	stepFetchAll(t, c, follower)
	if err := c.Cut(follower, leader, true); err != nil {
		t.Fatal(err)
	}
	c.Heal() // the Fetch was on the link when it was cut
	for range 6 {
		if err := c.Step(500 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	if got := leoOf(c, follower); got != leo {
		t.Fatalf("the follower's LEO went from %d to %d: the Fetch cut on its way still arrived", leo, got)
	}
	if n := c.MessagesInFlight(); n != 0 {
		t.Fatalf("%d messages in flight after the lost Fetch's time", n)
	}
}

// TestDelayedHeartbeatFencesBroker: a broker whose heartbeats take 2.5 s
// to reach the controller (past the 2 s session) is fenced as if its link
// were cut (until the late heartbeat arrives); one whose take 300 ms each
// way never is, even within steps longer than the session.
func TestDelayedHeartbeatFencesBroker(t *testing.T) {
	c := openPaused(t)
	if err := c.DelayLink(1, ControllerNode, 300*time.Millisecond, false); err != nil {
		t.Fatal(err)
	}
	if err := c.DelayLink(2, ControllerNode, 2500*time.Millisecond, true); err != nil {
		t.Fatal(err)
	}
	fenced := func(id int32) bool { md := c.controller.Metadata(); return md.Broker(id).Fenced }
	var was2 bool
	for range 8 {
		if err := c.Step(500 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if fenced(1) {
			t.Fatal("broker 1 fenced with heartbeats 300 ms late each way")
		}
		was2 = was2 || fenced(2)
	}
	if !was2 {
		t.Fatal("broker 2 never fenced with heartbeats 2.5 s late (session 2 s)")
	}
	for range 2 { // steps past the session: broker 1 heartbeats within them
		if err := c.Step(2500 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if fenced(1) {
			t.Fatal("broker 1 fenced within a 2.5 s step with heartbeats 300 ms late each way")
		}
	}
	c.Heal()
	for range 4 {
		if err := c.Step(500 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	if fenced(2) {
		t.Fatal("broker 2 still fenced after the delay healed")
	}
}

// TestDelayedAlterPartitionArrivesLate: a leader whose link to the
// controller is delayed 400 ms each way proposes a shrink when its
// follower lags; the controller takes it 400 ms later, and the leader
// learns the answer (its ISR no longer pending) 400 ms after that.
func TestDelayedAlterPartitionArrivesLate(t *testing.T) {
	c := openPaused(t)
	leader, follower, other := delayedPair(t, c)
	produceAcks1(t, c, "a")
	stepFetchAll(t, c, other)
	if err := c.DelayLink(leader, ControllerNode, 400*time.Millisecond, false); err != nil {
		t.Fatal(err)
	}
	pending := func() []int32 { return c.Broker(leader).Replica("t", 0).Status().PendingISR }
	var proposedAt time.Duration
	start := c.clock.Now()
	for range 80 { // 4 s in 50 ms steps
		stepFetchAll(t, c, other)
		if err := c.Step(50 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if len(pending()) > 0 {
			proposedAt = c.clock.Now().Sub(start)
			break
		}
	}
	if proposedAt == 0 {
		t.Fatal("the leader never proposed to shrink the ISR")
	}
	if isr := isrOf(c); !slices.Contains(isr, follower) {
		t.Fatalf("the controller has ISR %v as soon as the leader proposed it", isr)
	}
	at := func(what string, cond func() bool) time.Duration {
		t.Helper()
		for range 40 {
			if cond() {
				return c.clock.Now().Sub(start) - proposedAt
			}
			stepFetchAll(t, c, other)
			if err := c.Step(50 * time.Millisecond); err != nil {
				t.Fatal(err)
			}
		}
		t.Fatalf("%s never happened", what)
		return 0
	}
	taken := at("the controller taking the shrink", func() bool { return !slices.Contains(isrOf(c), follower) })
	answered := at("the leader learning the answer", func() bool { return len(pending()) == 0 })
	if taken < 350*time.Millisecond || taken > 450*time.Millisecond {
		t.Errorf("the controller took the shrink %v after it was proposed; want 400ms", taken)
	}
	if answered < 750*time.Millisecond || answered > 850*time.Millisecond {
		t.Errorf("the leader learnt the answer %v after it proposed; want 800ms", answered)
	}
}
