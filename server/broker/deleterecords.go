package broker

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"tidemark/replication"
	"tidemark/server/controller"
)

// DeleteRecords answers as Kafka's DelayedDeleteRecords does: once the
// leader moved its log start offset, the answer waits until the
// partition's low watermark (Partition.lowWatermarkIfLeader: the least log
// start offset of the leader and its followers on live, unfenced brokers,
// as their fetches say) reaches the requested offset, or until the
// request's timeout, when what is still pending is REQUEST_TIMED_OUT.

// lowWatermarkSignal wakes waiting DeleteRecords when a follower's log
// start offset, as its fetch says, changes.
type lowWatermarkSignal struct {
	mu sync.Mutex
	ch chan struct{}
}

func (s *lowWatermarkSignal) wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

func (s *lowWatermarkSignal) notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}

// noteFollowerStart records the log start offset a follower's fetch
// carries (-1 when it does not say). Callers hold r.mu.
func (r *replica) noteFollowerStart(follower int32, start int64) {
	if start < 0 {
		return
	}
	if r.followerStarts == nil {
		r.followerStarts = map[int32]int64{}
	}
	if old, ok := r.followerStarts[follower]; ok && old == start {
		return
	}
	r.followerStarts[follower] = start
	r.b.lowWatermarks.notify()
}

// lowWatermark is Kafka's Partition.lowWatermarkIfLeader, with md the
// metadata whose unfenced brokers count as live: a follower that has not
// said its log start offset yet counts as -1, as Kafka's unknown offset.
func (r *replica) lowWatermark(md *controller.Metadata) (int64, *kerr.Error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped || r.status().Role != replication.RoleLeader {
		return -1, kerr.NotLeaderForPartition
	}
	lw := r.log.LogStartOffset()
	for _, id := range r.applied.Replicas {
		if id == r.b.cfg.ID {
			continue
		}
		if br := md.Broker(id); br == nil || br.Fenced {
			continue
		}
		start, ok := r.followerStarts[id]
		if !ok {
			start = -1
		}
		lw = min(lw, start)
	}
	return lw, nil
}

// deleteWait is one partition of a DeleteRecords answer waiting for its
// low watermark.
type deleteWait struct {
	out  *kmsg.DeleteRecordsResponseTopicPartition
	r    *replica
	want int64
}

// awaitLowWatermarks completes each wait once its partition's low
// watermark reaches its offset (the answer carries the low watermark), or
// with NOT_LEADER_OR_FOLLOWER if this broker no longer leads it; those
// still waiting when timeout passes (or ctx ends) keep REQUEST_TIMED_OUT.
// Besides the followers' fetches, a broker's fencing and a change of
// leader end waits, which are looked at again every recheck.
func (b *Broker) awaitLowWatermarks(ctx context.Context, timeout time.Duration, waits []deleteWait) {
	const recheck = 100 * time.Millisecond
	for _, w := range waits {
		w.out.ErrorCode, w.out.LowWatermark = kerr.RequestTimedOut.Code, -1
	}
	deadline := time.NewTimer(max(timeout, 0))
	defer deadline.Stop()
	tick := time.NewTicker(recheck)
	defer tick.Stop()
	for {
		moved := b.lowWatermarks.wait() // before looking, so no change is missed
		b.mu.Lock()
		md := b.metadata
		b.mu.Unlock()
		pending := waits[:0]
		for _, w := range waits {
			lw, err := w.r.lowWatermark(&md)
			switch {
			case err != nil:
				w.out.ErrorCode = err.Code
			case lw >= w.want:
				w.out.ErrorCode, w.out.LowWatermark = 0, lw
			default:
				pending = append(pending, w)
			}
		}
		waits = pending
		if len(waits) == 0 {
			return
		}
		select {
		case <-moved:
		case <-tick.C:
		case <-deadline.C:
			return
		case <-ctx.Done():
			return
		}
	}
}
