package broker

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"tidemark/replication"
	"tidemark/server/controller"
	"tidemark/storage"
)

// unreachableController is the controller whose AlterPartition can be made
// undeliverable (the link cut); it keeps every proposal sent to it.
type unreachableController struct {
	directController
	mu   sync.Mutex
	cut  bool
	sent []replication.AlterPartitionRequest
}

func (u *unreachableController) setCut(cut bool) {
	u.mu.Lock()
	u.cut = cut
	u.mu.Unlock()
}

func (u *unreachableController) AlterPartition(topic string, partition, brokerID int32, brokerEpoch int64, req replication.AlterPartitionRequest, answer func(replication.AlterPartitionResponse, error)) {
	u.mu.Lock()
	u.sent = append(u.sent, req)
	cut := u.cut
	u.mu.Unlock()
	if cut {
		answer(replication.AlterPartitionResponse{}, errors.New("controller unreachable"))
		return
	}
	u.directController.AlterPartition(topic, partition, brokerID, brokerEpoch, req, answer)
}

// TestLateAlterPartitionAnswerIgnored: the leader's shrink A is committed;
// its expansion B cannot reach the controller and waits to be sent again;
// then a late copy of A is answered INVALID_UPDATE_VERSION. That answers
// A: B stays in flight and is sent again at the next tick, and the ISR
// grows back. (The answer used to drop B and fence the leader's proposals
// until new metadata, and its delivery forgot that B was still to be sent.)
func TestLateAlterPartitionAnswerIgnored(t *testing.T) {
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := &steppedClock{t: t0}
	var link *unreachableController
	ctl, brokers := startBrokers(t, 2, clk, func(ctl *controller.Controller) Controller {
		link = &unreachableController{directController: directController{ctl}}
		return link
	}, nil, nil)
	_, leader, follower := leaderAndFollower(t, ctl, brokers, map[string]string{"replica.lag.time.max.ms": "500"})
	leaderID := leader.ID()
	r := leader.replicaFor("t", 0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := follower.FetchRound(ctx); err != nil { // caught up at t0
		t.Fatal(err)
	}
	if res := leader.Produce(ctx, "t", 0, 1, storage.NewBatch([]storage.Record{{Value: []byte("m1")}}), time.Second); res.Err != nil {
		t.Fatal(res.Err)
	}
	want := func(when string, isr []int32, pending []int32) {
		t.Helper()
		st := (&Replica{r}).Status()
		md := ctl.Metadata()
		ctlISR := md.Topic("t").Partitions[0].ISR
		same := func(a, b []int32) bool { return slices.Equal(slices.Sorted(slices.Values(a)), b) }
		if !same(st.ISR, isr) || !same(st.PendingISR, pending) || !same(ctlISR, isr) {
			t.Fatalf("%s: leader's ISR %v, pending %v, controller's ISR %v; want %v, pending %v", when, st.ISR, st.PendingISR, ctlISR, isr, pending)
		}
	}

	// A: the follower lags; the shrink is lost on the way, sent again at
	// the next tick and committed.
	link.setCut(true)
	clk.set(t0.Add(501 * time.Millisecond))
	leader.Tick()
	link.setCut(false)
	leader.Tick()
	want("after the shrink", []int32{leaderID}, nil)
	link.mu.Lock()
	a := link.sent[0]
	link.mu.Unlock()

	// B: the follower catches up; the expansion cannot reach the controller.
	link.setCut(true)
	for range 2 { // m1, then at the leader's LEO
		if err := follower.FetchRound(ctx); err != nil {
			t.Fatal(err)
		}
	}
	link.setCut(false)
	want("expansion not delivered", []int32{leaderID}, []int32{1, 2})

	// A late copy of A gets its answer.
	leader.sendAlterPartition(r.proto.(*isrState), a)
	want("after the late answer to the shrink", []int32{leaderID}, []int32{1, 2})

	leader.Tick() // sends B again
	want("after the expansion was sent again", []int32{1, 2}, nil)
}
