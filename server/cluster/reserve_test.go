package cluster

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"tidemark/internal/fds"
)

// TestFollowerReconnectsShortOfDescriptors: with the process's descriptor
// account past the level at which the Kafka listeners refuse new
// connections, a follower restarted then still connects to its leader,
// fetches what it missed and rejoins the ISR, while another client's new
// connection to that leader is closed at once: the brokers' own
// connections are the reserve. Before, the follower's connection was
// refused like any client's and it stayed out of the ISR.
func TestFollowerReconnectsShortOfDescriptors(t *testing.T) {
	var open atomic.Int64
	defer fds.SetAccount(1000, func() int { return int(open.Load()) })()
	c := openRunning(t, 3)
	if _, err := c.CreateTopic("reserve", 1, 3, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	produce := func(v string) {
		t.Helper()
		if _, err := c.Produce(ctx, "reserve", 0, -1, []Record{{Value: []byte(v)}}, 10*time.Second); err != nil {
			t.Fatalf("produce %s: %v", v, err)
		}
	}
	produce("a")
	snap := c.Snapshot()
	leader := snap.Partition("reserve", 0).Leader
	follower := leader%3 + 1
	if err := c.Crash(follower); err != nil {
		t.Fatal(err)
	}
	produce("b") // acks=all with the follower out of the ISR
	produce("c")

	open.Store(900) // 90 %: connections (and topics) refused
	if err := c.Restart(follower); err != nil {
		t.Fatal(err)
	}
	// Another client's connection to the leader is closed at once.
	conn, err := net.Dial("tcp", c.Broker(leader).Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Fatalf("a client's connection to the leader while short of descriptors: %v, want it closed", err)
	}
	// The follower catches up and is back in the ISR (bounded wait: the
	// lab's clock runs).
	for {
		snap := c.Snapshot()
		p := snap.Partition("reserve", 0)
		inISR := false
		for _, id := range p.ISR {
			inISR = inISR || id == follower
		}
		r := c.Broker(follower).Replica("reserve", 0)
		if inISR && r != nil && r.Log().LogEndOffset() == 3 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("broker %d did not rejoin the ISR while short of descriptors: ISR %v", follower, p.ISR)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
