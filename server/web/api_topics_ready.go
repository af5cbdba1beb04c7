package web

import (
	"context"
	"slices"
	"time"

	"tidemark/events"
)

// A new topic is usable once every partition has a leader that leads it by
// its own account (it applied the controller's metadata: until then a
// produce gets NOT_LEADER_OR_FOLLOWER) and a full ISR. POST
// /api/v1/topics waits for that, within ready_timeout_ms, so that a
// producer started on its answer does not spend its first half second in
// retry back-off.
const (
	// DefaultTopicReadyTimeout bounds the wait when the request names no
	// ready_timeout_ms: a lab applies a new topic within a heartbeat.
	DefaultTopicReadyTimeout = 5 * time.Second
	// MaxTopicReadyTimeout is the longest one may ask.
	MaxTopicReadyTimeout = 60 * time.Second
	// readyPoll is how often the wait looks again.
	readyPoll = 10 * time.Millisecond
)

// LeaderState tells whether a broker leads a partition by its own account,
// and at which leader epoch (false when it is not running or has no such
// replica).
type LeaderState interface {
	Leading(broker int32, topic string, partition int32) (epoch int32, leading bool)
}

// The reasons a partition is not ready, as PartitionNotReady names them.
const (
	NotReadyNoLeader   = "no-leader"          // the controller has elected none
	NotReadyNotApplied = "leader-not-applied" // the leader has not applied its leadership yet
	NotReadyISRShort   = "isr-short"          // a replica is not in the ISR
	NotReadyBrokerDown = "broker-down"        // a replica's broker is not running
)

// PartitionNotReady is a partition of a new topic that was not usable
// when the wait ended: why (Reason, one of the NotReady constants), its
// leader (-1: none), ISR and replicas.
type PartitionNotReady struct {
	Partition int32   `json:"partition"`
	Reason    string  `json:"reason"`
	Leader    int32   `json:"leader"`
	ISR       []int32 `json:"isr"`
	Replicas  []int32 `json:"replicas"`
}

// notReady returns t's partitions that are not usable yet.
func (s *Server) notReady(snap *events.Snapshot, t *events.Topic) []PartitionNotReady {
	ls, _ := s.opts.Lab.(LeaderState)
	down := func(ids []int32) bool {
		return slices.ContainsFunc(ids, func(id int32) bool { b := snap.Broker(id); return b == nil || b.State != events.BrokerUp })
	}
	out := []PartitionNotReady{}
	for _, p := range t.Partitions {
		nr := PartitionNotReady{Partition: p.Partition, Leader: p.Leader, ISR: nonNil(p.ISR), Replicas: nonNil(p.Replicas)}
		switch {
		case p.Offline():
			nr.Reason = NotReadyNoLeader
		case ls != nil && !leadsAt(ls, p.Leader, t.Name, p.Partition, p.LeaderEpoch):
			nr.Reason = NotReadyNotApplied
		case down(p.Replicas):
			nr.Reason = NotReadyBrokerDown
		case len(p.ISR) < len(p.Replicas) || !sameSet(p.ISR, p.Replicas):
			nr.Reason = NotReadyISRShort
		default:
			continue
		}
		out = append(out, nr)
	}
	return out
}

func leadsAt(ls LeaderState, broker int32, topic string, p, epoch int32) bool {
	e, ok := ls.Leading(broker, topic, p)
	return ok && e >= epoch
}

func sameSet(a, b []int32) bool {
	for _, x := range b {
		if !slices.Contains(a, x) {
			return false
		}
	}
	return true
}

// awaitTopicReady waits until every partition of topic is ready or wait
// has passed, and returns the topic as it then was and the partitions not
// ready (empty when all are). ok is false when the topic is gone.
func (s *Server) awaitTopicReady(ctx context.Context, topic string, wait time.Duration) (t *events.Topic, notReady []PartitionNotReady, ok bool) {
	now, after := time.Now, time.After
	if s.retryClock != nil {
		now, after = s.retryClock.Now, s.retryClock.After
	}
	deadline := now().Add(wait)
	for {
		snap := s.opts.Lab.Snapshot()
		t, err := snapTopic(&snap, topic)
		if err != nil {
			return nil, nil, false
		}
		nr := s.notReady(&snap, t)
		left := deadline.Sub(now())
		if len(nr) == 0 || left <= 0 {
			return t, nr, true
		}
		select {
		case <-ctx.Done():
			return t, nr, true
		case <-after(min(readyPoll, left)):
		}
	}
}
