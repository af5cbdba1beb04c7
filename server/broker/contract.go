package broker

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"tidemark/events"
	"tidemark/replication"
	"tidemark/server/controller"
	"tidemark/storage"
)

// protocol is the replica contract: what a partition's replication
// protocol is to the broker that drives it, as etcd raft's RawNode is to
// its application. Inputs go in (metadata, the time, a produce, a
// follower's fetch, a fetch response, a message from another replica);
// Ready comes out: the protocol applies to the log what its state machine
// decided (truncations, appends, the leader-epoch cache), reports the HW
// and the acks, queues the events, and returns the calls to make once the
// replica's lock is released (its sends to other replicas and to the
// controller); what the log really did goes back to the state machine
// (its Advance) before Ready returns. The driver (drive) runs every
// protocol the same way: lock → step → Ready → unlock → send and report.
//
// Implemented by isrState (isr.go: the replication rules, Kafka's ISR),
// quorumState (quorum.go: etcd raft) and pipelineState (pipeline.go: the
// HDFS write pipeline). An input a protocol does not take (a follower's
// fetch to a Raft replica) is refused as Kafka refuses a request for a
// replica that is not the leader: NOT_LEADER_OR_FOLLOWER. Every method but
// send and clockTicks is called with replica.mu held.
type protocol interface {
	// metadata applies the controller's view of the partition.
	metadata(p controller.Partition, tc controller.TopicConfig)
	// setConfig applies a changed topic config.
	setConfig(tc controller.TopicConfig) error
	// tick shows the protocol the lab time: timeouts, ISR shrink.
	tick(nowMs int64)
	// produce appends (or proposes) a produced record set as the leader.
	produce(acks int16, records []byte, ui []events.Record, nowMs int64, timeout time.Duration) produced
	// retained says retention deleted whole segments (the log start moved).
	retained(deleted int)
	// followerFetch is a follower's fetch on the leader; false when this
	// protocol's replicas do not fetch.
	followerFetch(req replication.FetchRequest, nowMs int64) (replication.FetchResult, bool)
	// nextFetch is the fetch a follower sends leader; false for none.
	nextFetch(leader int32) (replication.FetchRequest, bool)
	// fetched is the leader's answer to a follower's fetch, in phases
	// (drive): a truncation's Ready is applied before the append it
	// allows.
	fetched(f fetchAnswer, n int) (more bool)
	// altered is the controller's answer to an ISR proposal (err: it did
	// not arrive).
	altered(req replication.AlterPartitionRequest, resp replication.AlterPartitionResponse, err error)
	// deleteRecords moves the log start offset up to offset (DeleteRecords
	// on the leader, -1: the HW); the offset the low watermark must reach.
	deleteRecords(offset int64) (int64, error)
	// step takes a message from another replica of the partition;
	// errWrongProtocol when it is not this protocol's.
	step(msg any) error

	// ready applies what the protocol decided and returns the calls to
	// make after replica.mu is released. Called by drive only.
	ready() []func()
	// status is the replica's view in the replication rules' terms.
	status() replication.Status
	// fetchesFrom is the leader this replica fetches from; false when it
	// does not fetch (a leader, or a protocol that replicates otherwise).
	fetchesFrom() (int32, bool)
	// nextTickMs is when the broker must tick for this replica next;
	// math.MaxInt64 when nothing is due.
	nextTickMs() int64
	// stop ends the replica's protocol (its state files closed).
	stop()

	// send delivers what Ready queued for other replicas, outside
	// replica.mu (the pipeline's pump); most protocols send from the calls
	// ready returns.
	send()
	// clockTicks gives a protocol that counts time in ticks (Raft) the
	// ticks due up to nowMs, each driven as a step; outside replica.mu.
	clockTicks(nowMs int64)
}

// phase is one input's step, run with replica.mu held by drive, which
// calls it with n = 0, 1, 2 … for as long as it answers more, applying
// Ready after each call: a step that must see its Ready applied before it
// goes on (a follower's truncation before the append it allows) does so
// under the same hold of the lock. (A counter rather than a returned
// closure: the driver allocates nothing.)
type phase func(n int) (more bool)

// errWrongProtocol is a message for another replication protocol than the
// replica's.
var errWrongProtocol = fmt.Errorf("%w: not this partition's replication protocol", kerr.NotLeaderForPartition)

// drive runs one input through the replica's protocol, the one way every
// protocol is driven: lock, the step, Ready applied (after each phase),
// unlock (which publishes the replica's events in order), then the calls
// Ready returned and the sends. False when the replica was stopped (the
// step did not run).
func (r *replica) drive(step phase) bool {
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return false
	}
	var after []func()
	for n := 0; ; n++ {
		more := step(n)
		after = append(after, r.proto.ready()...)
		if !more {
			break
		}
	}
	flush := r.flushNext
	r.flushNext = false
	r.unlock(after)
	if flush {
		r.flushIfDue()
	}
	r.proto.send()
	return true
}

// fetchAnswer is the leader's answer to a follower's fetch of one
// partition.
type fetchAnswer struct {
	leader    int32
	sent      replication.FetchRequest
	p         *kmsg.FetchResponseTopicPartition
	leaderLEO int64
	stepped   bool
}

// produced is what a protocol did with a produce: answered at once (res),
// or registered a waiter (wait, its id) to be answered when the protocol
// decides; dup is a retried batch whose original the answer waits for.
type produced struct {
	res    ProduceResult
	wait   uint64
	waiter *produceWaiter
	dup    *producerBatch
	epoch  int32
}

// produceWaiter is a produce request waiting for its protocol's answer.
// Guarded by replica.mu.
type produceWaiter struct {
	ch   chan ProduceResult
	acks int16
	// first and last are the offsets of its records; -1 when they are not
	// appended yet (a Raft proposal).
	first, last int64
	// deadlineMs is when a tick answers it REQUEST_TIMED_OUT; 0 when its
	// protocol times it out itself (the ISR rules).
	deadlineMs int64
	// sent is set once the produce's first sends went out (and what came
	// back was handled): from then on it waits for replicas that did not
	// answer, and Status counts it.
	sent bool
}

// wait registers a produce waiting for its protocol's answer. Callers
// hold r.mu.
func (r *replica) wait(acks int16, first, last, deadlineMs int64) produced {
	r.nextID++
	w := &produceWaiter{ch: make(chan ProduceResult, 1), acks: acks, first: first, last: last, deadlineMs: deadlineMs}
	r.waiters[r.nextID] = w
	return produced{wait: r.nextID, waiter: w}
}

// answer completes a waiting produce request and reports it (an ack, or a
// produce error); false when none waits under id. Callers hold r.mu.
func (r *replica) answer(id uint64, res ProduceResult) bool {
	w, ok := r.waiters[id]
	if !ok {
		return false
	}
	delete(r.waiters, id)
	w.ch <- res // buffered: never blocks
	r.emit(r.produceEvent(w.acks, res))
	return true
}

// failWaiters answers err to the waiting produce requests whose records
// reach from or beyond (math.MinInt64: all), in id order, so their events
// come in the same order in every replay. Callers hold r.mu.
func (r *replica) failWaiters(from int64, err error) {
	for _, id := range slices.Sorted(maps.Keys(r.waiters)) {
		if w := r.waiters[id]; w.last >= from {
			r.answer(id, ProduceResult{BaseOffset: w.first, LastOffset: w.last, Err: err})
		}
	}
}

// expireWaiters answers REQUEST_TIMED_OUT to the produce requests whose
// deadline passed. Callers hold r.mu.
func (r *replica) expireWaiters(nowMs int64) {
	for _, id := range slices.Sorted(maps.Keys(r.waiters)) {
		if w := r.waiters[id]; w.deadlineMs > 0 && nowMs >= w.deadlineMs {
			r.answer(id, ProduceResult{BaseOffset: w.first, LastOffset: w.last, Err: kerr.RequestTimedOut})
		}
	}
}

// waitersDeadline is the first produce deadline; math.MaxInt64 for none.
// Callers hold r.mu.
func (r *replica) waitersDeadline() int64 {
	next := int64(math.MaxInt64)
	for _, w := range r.waiters {
		if w.deadlineMs > 0 {
			next = min(next, w.deadlineMs)
		}
	}
	return next
}

// waitingSent counts the produce requests whose sends went out and that
// are not answered yet. Callers hold r.mu.
func (r *replica) waitingSent() int {
	n := 0
	for _, w := range r.waiters {
		if w.sent {
			n++
		}
	}
	return n
}

// await waits for the answer to produce id, whose first sends went out: it
// marks the waiter sent, then waits; when ctx ends first it forgets the
// waiter and answers REQUEST_TIMED_OUT with the offsets it has.
func (r *replica) await(ctx context.Context, id uint64, w *produceWaiter) ProduceResult {
	r.mu.Lock()
	w.sent = true // answered already, its answer waits in w.ch
	r.mu.Unlock()
	select {
	case res := <-w.ch:
		return res
	case <-ctx.Done():
		r.mu.Lock()
		delete(r.waiters, id)
		r.mu.Unlock()
		return ProduceResult{BaseOffset: w.first, LastOffset: w.last, Err: kerr.RequestTimedOut}
	}
}

// produce appends a record set as leader, through the replica's protocol,
// and waits as acks says. records passed validateProduced, so the log
// does not check their CRC again. ui is the batch's newest records for the
// append event, with offsets relative to the batch (uiRecords).
func (r *replica) produce(ctx context.Context, acks int16, records []byte, ui []events.Record, timeout time.Duration) ProduceResult {
	var p produced
	if !r.drive(func(int) bool {
		p = r.proto.produce(acks, records, ui, r.b.nowMs(), timeout)
		return false
	}) {
		return refused(kerr.NotLeaderForPartition)
	}
	switch {
	case p.dup != nil:
		return r.awaitDuplicate(ctx, acks, p.epoch, *p.dup, timeout)
	case p.wait != 0:
		return r.await(ctx, p.wait, p.waiter)
	}
	return p.res
}

// receive steps a message from broker from's replica of tp into this
// broker's: UNKNOWN_TOPIC_OR_PARTITION when it hosts none (yet),
// NOT_LEADER_OR_FOLLOWER when its protocol is not the message's (kind
// names it), or the protocol's refusal.
func (b *Broker) receive(tp storage.TopicPartition, kind string, msg any) error {
	r := b.replicaFor(tp.Topic, tp.Partition)
	if r == nil {
		return fmt.Errorf("%w: %s on broker %d", kerr.UnknownTopicOrPartition, tp, b.cfg.ID)
	}
	var err error
	if !r.drive(func(int) bool { err = r.proto.step(msg); return false }) || err == errWrongProtocol {
		return fmt.Errorf("%w: %s on broker %d is not a %s replica", kerr.NotLeaderForPartition, tp, b.cfg.ID, kind)
	}
	return err
}

// notFetching is the part of the contract a protocol whose replicas do not
// fetch from a leader (Raft, the pipeline) answers with refusals.
type notFetching struct{}

func (notFetching) followerFetch(replication.FetchRequest, int64) (replication.FetchResult, bool) {
	return replication.FetchResult{}, false
}
func (notFetching) nextFetch(int32) (replication.FetchRequest, bool) {
	return replication.FetchRequest{}, false
}
func (notFetching) fetched(fetchAnswer, int) bool { return false }
func (notFetching) altered(replication.AlterPartitionRequest, replication.AlterPartitionResponse, error) {
}
func (notFetching) fetchesFrom() (int32, bool) { return -1, false }

// deleteRecords: their followers learn no log start offset from a fetch.
func (notFetching) deleteRecords(int64) (int64, error) {
	return -1, fmt.Errorf("%w: DeleteRecords is served on replication.protocol=isr topics only", kerr.InvalidRequest)
}
