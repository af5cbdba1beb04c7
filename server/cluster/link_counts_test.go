package cluster

import (
	"context"
	"testing"

	"tidemark/server/controller"
)

// TestReplicationMessageCounts: one fetch round of a follower is one Fetch
// and one answer on the isr side, a quorum write is Raft appends and their
// answers, and cut links still count what was sent.
func TestReplicationMessageCounts(t *testing.T) {
	c := openPausedN(t, 3)
	if _, err := c.CreateTopic("pull", 1, 3, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic("raft", 1, 3, map[string]string{controller.ConfigReplicationProtocol: "quorum"}); err != nil {
		t.Fatal(err)
	}
	quorumLeader(t, c, "raft")
	before := c.ReplicationMessages()
	tp, _ := c.controller.Topic("pull")
	follower := tp.Partitions[0].Replicas[1]
	if err := c.StepFetch(context.Background(), follower); err != nil {
		t.Fatal(err)
	}
	after := c.ReplicationMessages()
	isr := func(m map[controller.ReplicationProtocol]map[string]int64, kind string) int64 {
		return m[controller.ProtocolISR][kind]
	}
	if d := isr(after, MessageFetchRequest) - isr(before, MessageFetchRequest); d != 1 {
		t.Errorf("one fetch round of broker %d counted %d Fetch requests", follower, d)
	}
	if d := isr(after, MessageFetchResponse) - isr(before, MessageFetchResponse); d != 1 {
		t.Errorf("one fetch round of broker %d counted %d Fetch responses", follower, d)
	}

	before = after
	if err := produceOne(t, c, "raft", "v1"); err != nil {
		t.Fatal(err)
	}
	after = c.ReplicationMessages()
	q := func(m map[controller.ReplicationProtocol]map[string]int64, kind string) int64 {
		return m[controller.ProtocolQuorum][kind]
	}
	if d := q(after, "MsgApp") - q(before, "MsgApp"); d < 2 {
		t.Errorf("a quorum write to RF 3 counted %d MsgApp; want one to each follower at least", d)
	}
	if d := q(after, "MsgAppResp") - q(before, "MsgAppResp"); d < 1 {
		t.Errorf("a quorum write counted %d MsgAppResp", d)
	}
	if n := q(after, "MsgHeartbeat") + q(after, "MsgHeartbeatResp"); n != 0 {
		t.Errorf("heartbeats counted: %d", n)
	}

	// A Fetch over a cut link was sent and lost: it counts, its answer
	// never comes.
	before = c.ReplicationMessages()
	if err := c.Cut(follower, tp.Partitions[0].Leader, true); err != nil {
		t.Fatal(err)
	}
	c.StepFetch(context.Background(), follower) // LINK_CUT
	after = c.ReplicationMessages()
	if d := isr(after, MessageFetchRequest) - isr(before, MessageFetchRequest); d != 1 {
		t.Errorf("a Fetch over a cut link counted %d times", d)
	}
	if d := isr(after, MessageFetchResponse) - isr(before, MessageFetchResponse); d != 0 {
		t.Errorf("a Fetch over a cut link counted %d answers", d)
	}
}
