package coordinator

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (f *fakeClock) Now() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return f.now }
func (f *fakeClock) Add(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	f.mu.Unlock()
}

func open(t *testing.T, dir string, clk *fakeClock) *Coordinator {
	t.Helper()
	c, err := Open(Options{Dir: dir, Now: clk.Now, TickInterval: -1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func joinReq(member string) *kmsg.JoinGroupRequest {
	r := kmsg.NewPtrJoinGroupRequest()
	r.SetVersion(9)
	r.Group, r.MemberID, r.ProtocolType = "g", member, "consumer"
	r.SessionTimeoutMillis, r.RebalanceTimeoutMillis = 10000, 20000
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", []byte("meta-"+member)
	r.Protocols = []kmsg.JoinGroupRequestProtocol{p}
	return r
}

// join runs the KIP-394 two-step join and returns the member id and the
// channel its JoinGroup answer arrives on.
func join(t *testing.T, c *Coordinator) (string, chan *kmsg.JoinGroupResponse) {
	t.Helper()
	r := c.JoinGroup(context.Background(), joinReq(""), "client", "/127.0.0.1")
	if r.ErrorCode != kerr.MemberIDRequired.Code || r.MemberID == "" {
		t.Fatalf("first join: code %d id %q", r.ErrorCode, r.MemberID)
	}
	return r.MemberID, rejoin(c, r.MemberID)
}

func rejoin(c *Coordinator, id string) chan *kmsg.JoinGroupResponse {
	ch := make(chan *kmsg.JoinGroupResponse, 1)
	go func() { ch <- c.JoinGroup(context.Background(), joinReq(id), "client", "/127.0.0.1") }()
	return ch
}

// waitJoined waits until n members of g wait in JoinGroup (the joins run
// in goroutines).
func waitJoined(t *testing.T, c *Coordinator, n int) {
	t.Helper()
	for i := 0; i < 5000; i++ {
		c.mu.Lock()
		waiting := 0
		if g := c.groups["g"]; g != nil {
			for _, m := range g.members {
				if m.join != nil {
					waiting++
				}
			}
		}
		c.mu.Unlock()
		if waiting >= n {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("%d members never waited in JoinGroup", n)
}

func heartbeat(c *Coordinator, id string, gen int32) int16 {
	r := kmsg.NewPtrHeartbeatRequest()
	r.Group, r.MemberID, r.Generation = "g", id, gen
	return c.Heartbeat(r).ErrorCode
}

func sync1(c *Coordinator, id string, gen int32, assign map[string]string) *kmsg.SyncGroupResponse {
	r := kmsg.NewPtrSyncGroupRequest()
	r.Group, r.MemberID, r.Generation = "g", id, gen
	for m, a := range assign {
		ga := kmsg.NewSyncGroupRequestGroupAssignment()
		ga.MemberID, ga.MemberAssignment = m, []byte(a)
		r.GroupAssignment = append(r.GroupAssignment, ga)
	}
	return c.SyncGroup(context.Background(), r)
}

// TestRebalanceAndSessionTimeout walks a group through Kafka's classic
// protocol: a lone member, a second member forcing a rebalance, and the
// first member's session timing out.
func TestRebalanceAndSessionTimeout(t *testing.T) {
	clk := &fakeClock{now: time.Unix(1000, 0)}
	c := open(t, t.TempDir(), clk)

	a, ach := join(t, c)
	ja := <-ach
	if ja.ErrorCode != 0 || ja.Generation != 1 || ja.LeaderID != a || len(ja.Members) != 1 {
		t.Fatalf("lone join: %+v", ja)
	}
	if s := sync1(c, a, 1, map[string]string{a: "all"}); s.ErrorCode != 0 || string(s.MemberAssignment) != "all" {
		t.Fatalf("sync: %+v", s)
	}
	if code := heartbeat(c, a, 1); code != 0 {
		t.Fatalf("heartbeat: %v", kerr.ErrorForCode(code))
	}

	// A second member joins: the leader learns of the rebalance from its
	// heartbeat and rejoins; both get generation 2.
	b, bch := join(t, c)
	waitJoined(t, c, 1)
	if code := heartbeat(c, a, 1); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("heartbeat during rebalance: %v", kerr.ErrorForCode(code))
	}
	ach = rejoin(c, a)
	ja, jb := <-ach, <-bch
	if ja.Generation != 2 || jb.Generation != 2 || ja.LeaderID != a || len(ja.Members) != 2 || len(jb.Members) != 0 {
		t.Fatalf("second rebalance: leader %+v follower %+v", ja, jb)
	}
	// The follower's SyncGroup waits for the leader's.
	sb := make(chan *kmsg.SyncGroupResponse, 1)
	go func() { sb <- sync1(c, b, 2, nil) }()
	if s := sync1(c, a, 2, map[string]string{a: "p0", b: "p1"}); string(s.MemberAssignment) != "p0" {
		t.Fatalf("leader sync: %+v", s)
	}
	if s := <-sb; s.ErrorCode != 0 || string(s.MemberAssignment) != "p1" {
		t.Fatalf("follower sync: %+v", s)
	}
	if code := heartbeat(c, b, 1); code != kerr.IllegalGeneration.Code {
		t.Fatalf("old generation: %v", kerr.ErrorForCode(code))
	}

	// a stops heartbeating; b keeps going. After a's session timeout, a is
	// gone and b rebalances alone, becoming leader.
	for i := 0; i < 11; i++ {
		clk.Add(time.Second)
		heartbeat(c, b, 2)
		c.Tick()
	}
	if code := heartbeat(c, a, 2); code != kerr.UnknownMemberID.Code {
		t.Fatalf("expired member: %v", kerr.ErrorForCode(code))
	}
	if code := heartbeat(c, b, 2); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("survivor: %v", kerr.ErrorForCode(code))
	}
	jb = <-rejoin(c, b)
	if jb.Generation != 3 || jb.LeaderID != b {
		t.Fatalf("after expiry: %+v", jb)
	}
}

// TestRebalanceTimeoutRemovesLaggards: a member that neither heartbeats nor
// rejoins within the rebalance timeout is dropped from the new generation.
func TestRebalanceTimeoutRemovesLaggards(t *testing.T) {
	clk := &fakeClock{now: time.Unix(1000, 0)}
	c := open(t, t.TempDir(), clk)
	a, ach := join(t, c)
	<-ach
	sync1(c, a, 1, nil)
	_, bch := join(t, c)
	waitJoined(t, c, 1)
	clk.Add(21 * time.Second) // past the 20s rebalance timeout
	c.Tick()
	jb := <-bch
	if jb.ErrorCode != 0 || jb.Generation != 2 || len(jb.Members) != 1 {
		t.Fatalf("after the rebalance timeout: %+v", jb)
	}
}

// TestOffsetsDurable: commits survive reopening; a simple commit is refused
// while the group has members; producer ids are never handed out twice.
func TestOffsetsDurable(t *testing.T) {
	dir := t.TempDir()
	clk := &fakeClock{now: time.Unix(1000, 0)}
	c := open(t, dir, clk)
	commit := func(c *Coordinator, gen int32, member string, off int64) int16 {
		r := kmsg.NewPtrOffsetCommitRequest()
		r.SetVersion(8)
		r.Group, r.Generation, r.MemberID = "g", gen, member
		tp := kmsg.NewOffsetCommitRequestTopic()
		tp.Topic = "orders"
		p := kmsg.NewOffsetCommitRequestTopicPartition()
		p.Partition, p.Offset, p.LeaderEpoch = 2, off, 7
		tp.Partitions = append(tp.Partitions, p)
		r.Topics = append(r.Topics, tp)
		return c.OffsetCommit(r).Topics[0].Partitions[0].ErrorCode
	}
	if code := commit(c, -1, "", 42); code != 0 {
		t.Fatalf("simple commit: %v", kerr.ErrorForCode(code))
	}
	a, ach := join(t, c)
	<-ach
	if code := commit(c, -1, "", 50); code != kerr.UnknownMemberID.Code {
		t.Fatalf("simple commit into a live group: %v", kerr.ErrorForCode(code))
	}
	if code := commit(c, 1, a, 43); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("commit before sync: %v", kerr.ErrorForCode(code))
	}
	sync1(c, a, 1, nil)
	if code := commit(c, 1, a, 44); code != 0 {
		t.Fatalf("member commit: %v", kerr.ErrorForCode(code))
	}
	pid1 := c.InitProducerID(kmsg.NewPtrInitProducerIDRequest()).ProducerID
	c.Close()

	c = open(t, dir, clk)
	fr := kmsg.NewPtrOffsetFetchRequest()
	fr.SetVersion(8)
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group = "g"
	fr.Groups = append(fr.Groups, g) // nil topics: all
	resp := c.OffsetFetch(fr)
	if len(resp.Groups) != 1 || len(resp.Groups[0].Topics) != 1 {
		t.Fatalf("offset fetch after reopen: %+v", resp)
	}
	p := resp.Groups[0].Topics[0].Partitions[0]
	if p.Partition != 2 || p.Offset != 44 || p.LeaderEpoch != 7 {
		t.Fatalf("committed after reopen: %+v", p)
	}
	if pid2 := c.InitProducerID(kmsg.NewPtrInitProducerIDRequest()).ProducerID; pid2 <= pid1 {
		t.Fatalf("producer id %d handed out after %d", pid2, pid1)
	}
}

// TestTimerSleepsWithoutMembers: the coordinator's own timer does nothing
// while no group has a member (an idle lab wakes for nothing), and after a
// join it still expires the member's session by itself.
func TestTimerSleepsWithoutMembers(t *testing.T) {
	clk := &fakeClock{now: time.Unix(1000, 0)}
	c, err := Open(Options{Dir: t.TempDir(), Now: clk.Now, TickInterval: time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.timersRunning() {
		t.Fatal("timers running with no group")
	}
	id, ch := join(t, c)
	r := <-ch
	if r.ErrorCode != 0 {
		t.Fatalf("join: code %d", r.ErrorCode)
	}
	if !c.timersRunning() {
		t.Fatal("no timers running with a member")
	}
	clk.Add(11 * time.Second) // past the 10 s session, no heartbeat
	member := func() bool {   // not a heartbeat: that would renew the session
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.groups["g"].members[id] != nil
	}
	for i := 0; member(); i++ {
		if i == 10000 {
			t.Fatal("the timer never expired the member's session")
		}
		time.Sleep(time.Millisecond)
	}
	if c.timersRunning() {
		t.Fatal("timers still running once the group is empty")
	}
}
