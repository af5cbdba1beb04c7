package broker

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	"tidemark/replication"
	"tidemark/server/controller"
	"tidemark/storage"
)

// raftByMap delivers Raft messages straight to the brokers of a test.
type raftByMap struct {
	mu sync.Mutex
	bs map[int32]*Broker
}

func (m *raftByMap) SendRaft(from, to int32, tp storage.TopicPartition, msg []byte) error {
	m.mu.Lock()
	b := m.bs[to]
	m.mu.Unlock()
	if b == nil {
		return errNoRaftTransport
	}
	return b.ReceiveRaft(from, tp, msg)
}

// TestQuorumTickDeadlines: a broker hosting quorum replicas of an idle
// partition does not tick every TickInterval: the leader's broker is due
// at its next heartbeat (2 ticks), a follower's not before its election
// timeout (10 ticks after it last heard from the leader). Before, every
// one ticked every 50 ms.
func TestQuorumTickDeadlines(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := &steppedClock{t: t0}
	ctl, err := controller.Open(filepath.Join(dir, "meta"), controller.Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctl.Close() })
	transport := &raftByMap{bs: map[int32]*Broker{}}
	for id := int32(1); id <= 3; id++ {
		b, err := Start(Config{ID: id, LogDir: LogDirPath(dir, id), ListenAddr: "127.0.0.1:0",
			Controller: directController{ctl}, Network: openNetwork{}, Clock: clk, Raft: transport})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Crash() })
		b.Heartbeat()
		transport.mu.Lock()
		transport.bs[id] = b
		transport.mu.Unlock()
	}
	if _, err := ctl.CreateTopic("q", 1, 3, map[string]string{"replication.protocol": "quorum"}); err != nil {
		t.Fatal(err)
	}
	now := t0
	// step moves the clock one tick and runs it on every broker, as the
	// paused lab's Step does.
	step := func() {
		now = now.Add(50 * time.Millisecond)
		clk.set(now)
		for id := int32(1); id <= 3; id++ {
			transport.bs[id].Heartbeat()
			transport.bs[id].RefreshMetadata()
			transport.bs[id].Tick()
		}
	}
	var leader *Broker
	for range 100 {
		step()
		for _, b := range transport.bs {
			if st := b.Replica("q", 0).Status(); st.Role == replication.RoleLeader {
				leader = b
			}
		}
		if leader != nil {
			break
		}
	}
	if leader == nil {
		t.Fatal("no Raft leader after 5 s")
	}
	step()
	step()
	ms := now.UnixMilli()
	for id, b := range transport.bs {
		next := b.nextTickMs.Load() - ms
		if b == leader {
			if next < 50 || next > 100 {
				t.Errorf("leader %d: next tick in %d ms; want at its next heartbeat, 50–100 ms", id, next)
			}
			continue
		}
		// It heard a heartbeat at most 2 ticks ago (one per 2 ticks);
		// the retention check on the whole second may come first.
		toSecond := nextOnGrid(now, RetentionCheckInterval).UnixMilli() - ms
		if next != min(next, toSecond) || next < min(400, toSecond) || next > 500 {
			t.Errorf("follower %d: next tick in %d ms; want at its election timeout, 400–500 ms, or the whole second (%d ms) if sooner", id, next, toSecond)
		}
	}
}
