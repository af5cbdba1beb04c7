package broker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/events"
	"tidemark/internal/fact"
	"tidemark/replication"
	"tidemark/replication/pipeline"
	"tidemark/server/controller"
	"tidemark/storage"
)

// PipelineTransport carries a pipeline partition's messages (writes down
// the pipeline, acks back up) between brokers. The lab routes them over its
// simulated links, so a cut link or a stopped broker loses them as it loses
// fetches. SendPipeline returns an error wrapping ErrPipelineUnreachable
// when the message was lost, or the receiver's refusal; a transport that
// delivers later (a delayed link) returns nil and reports such an outcome
// to the sender's PipelineUndelivered.
type PipelineTransport interface {
	SendPipeline(from, to int32, tp storage.TopicPartition, msg pipeline.Message) error
}

// ErrPipelineUnreachable is a pipeline message lost on its way (a cut
// link, a stopped broker): the member it was for counts as failed. Any
// other error from a transport is the receiver's refusal, and the message
// is sent again later.
var ErrPipelineUnreachable = errors.New("pipeline member unreachable")

// pipelineChunkBytes bounds the records of one write message: copying a
// discarded replica sends the log in writes of at most this much.
const pipelineChunkBytes = 1 << 20

// pipelineState is a replica's side of a replication.protocol=pipeline
// partition (replication/pipeline). The replica's rp is not used for such a
// partition: the pipeline decides the head (leader), the HW and every
// truncation. Guarded by replica.mu.
type pipelineState struct {
	m *pipeline.Member
	// minISR is the topic's min.insync.replicas, applied to the pipeline's
	// length.
	minISR int
	// waiters are acks=all produce requests waiting for the HW to pass
	// their last offset, by request id; answered in id order, so their
	// events come in the same order in every replay (not the map's).
	waiters map[uint64]pipelineWaiter
	// outq are messages Ready returned, for the pump to send.
	outq []pipeline.Message
	// pumping is set while a goroutine sends outq (outside replica.mu);
	// again asks it for one more round.
	pumping, again bool
}

type pipelineWaiter struct {
	ch         chan ProduceResult
	first      int64
	last       int64
	deadlineMs int64
	// sent is set once the produce's first pump returned (its writes went
	// down the pipeline and what came back was handled): from then on it
	// waits for members that did not answer, and Status counts it.
	sent bool
}

// newPipeline makes a new replica's pipeline member from what its log
// holds; the pipeline itself comes with the metadata (apply).
func (b *Broker) newPipeline(l *storage.Log, tc controller.TopicConfig, hw int64) *pipelineState {
	stamp := int32(-1)
	if epochs := l.Epochs(); len(epochs) > 0 {
		stamp = epochs[len(epochs)-1].Epoch
	}
	m := pipeline.New(pipeline.Config{ID: b.cfg.ID, TimeoutMs: tc.Replication().ReplicaLagTimeMaxMs, Unclean: !b.dir.WasCleanShutdown()},
		pipeline.LogState{LogStartOffset: l.LogStartOffset(), LogEndOffset: l.LogEndOffset(), HighWatermark: min(hw, l.LogEndOffset()), Stamp: stamp}, b.nowMs())
	return &pipelineState{m: m, minISR: tc.Replication().MinInsyncReplicas, waiters: map[uint64]pipelineWaiter{}}
}

// pipelineStatus is the replica's view in the replication rules' terms:
// the head leads, the leader epoch is the generation stamp, the ISR is the
// pipeline in order. Callers hold r.mu.
func (r *replica) pipelineStatus() replication.Status {
	st := r.pl.m.Status()
	role, leader := replication.RoleFollower, st.Pipeline.Head()
	if st.IsHead {
		role = replication.RoleLeader
	}
	waiting := 0
	for _, w := range r.pl.waiters {
		if w.sent {
			waiting++
		}
	}
	return replication.Status{BrokerID: r.b.cfg.ID, Role: role, Leader: leader, LeaderEpoch: st.Pipeline.Stamp,
		PartitionEpoch: r.applied.PartitionEpoch, Replicas: append([]int32(nil), r.applied.Replicas...), ISR: st.Pipeline.Members,
		LogStartOffset: r.log.LogStartOffset(), LogEndOffset: r.log.LogEndOffset(), HighWatermark: r.hw,
		EpochCache: r.log.Epochs(), WaitingProduces: waiting, NowMs: r.tickedMs}
}

// applyPipeline gives the member the controller's pipeline. A head that
// is no longer the head fails its waiting produce requests. Callers hold
// r.mu.
func (r *replica) applyPipeline(p controller.Partition, tc controller.TopicConfig) {
	r.applied = p
	r.pl.minISR = tc.Replication().MinInsyncReplicas
	members := slices.Concat(p.ISR, p.Joining)
	if p.Leader == replication.NoLeader {
		members = nil // offline: no head to write through
	}
	r.pl.m.SetPipeline(pipeline.Pipeline{Members: members, Stamp: p.LeaderEpoch})
	if r.pl.m.Status().Pipeline.Head() != r.b.cfg.ID {
		r.failPipelineWaiters(0, kerr.NotLeaderForPartition)
	}
}

// failPipelineWaiters answers err to the waiting produce requests whose
// records reach from or beyond. Callers hold r.mu.
func (r *replica) failPipelineWaiters(from int64, err error) {
	for _, id := range slices.Sorted(maps.Keys(r.pl.waiters)) {
		if w := r.pl.waiters[id]; w.last >= from {
			r.answerPipeline(id, ProduceResult{BaseOffset: w.first, LastOffset: w.last, Err: err})
		}
	}
}

func (r *replica) answerPipeline(id uint64, res ProduceResult) {
	w, ok := r.pl.waiters[id]
	if !ok {
		return
	}
	delete(r.pl.waiters, id)
	w.ch <- res // buffered: never blocks
	r.emit(r.produceEvent(replication.ProduceResult{ID: id, Acks: -1, BaseOffset: res.BaseOffset, LastOffset: res.LastOffset, Err: res.Err}))
}

// pipelineReady applies what the member decided, in its order: truncation
// (a recovery's cut, or a stale replica discarded), received records
// appended, the new generation stamp in the leader-epoch cache, the HW
// (answering the produce requests it passed); messages wait in outq for
// the pump, and a failure report is returned as a call to make after r.mu
// is released. Callers hold r.mu.
func (r *replica) pipelineReady() []func() {
	var after []func()
	for range 4 { // a log that did something else is reported back once
		rd := r.pl.m.Ready()
		if rd.Empty() && rd.HighWatermark == r.hw {
			break
		}
		if t := rd.Truncation; t != nil {
			r.pipelineTruncate(*t)
		}
		if a := rd.Append; a != nil {
			r.pipelineAppend(a)
		}
		if rd.StampStart >= 0 {
			if err := r.log.AssignLeaderEpoch(rd.Stamp, rd.StampStart); err != nil && !errors.Is(err, storage.ErrClosed) {
				r.b.errLog.log("recording the generation stamp", "partition", r.tp, "err", err)
			}
			ev := r.event(events.KindEpoch)
			ev.Leader = &events.Leadership{Leader: r.applied.Leader, LeaderEpoch: rd.Stamp, StartOffset: rd.StampStart}
			r.emit(ev)
		}
		if rd.HighWatermark != r.hw {
			r.hw = rd.HighWatermark
			ev := r.event(events.KindHW)
			ev.Offsets = &events.Offsets{HW: r.hw, LEO: r.log.LogEndOffset()}
			r.emit(ev)
			r.wake()
			for _, id := range slices.Sorted(maps.Keys(r.pl.waiters)) {
				if w := r.pl.waiters[id]; w.last < r.hw {
					r.answerPipeline(id, ProduceResult{BaseOffset: w.first, LastOffset: w.last, Err: r.pl.m.AckError(-1, r.pl.minISR)})
				}
			}
		}
		r.pl.outq = append(r.pl.outq, rd.Messages...)
		if f := rd.Failure; f != nil {
			after = append(after, func() { r.reportPipelineFailure(*f) })
		}
		if rd.CaughtUp {
			stamp := r.pl.m.Status().Pipeline.Stamp
			after = append(after, func() { r.reportCaughtUp(stamp) })
		}
	}
	r.pipelineTickBy() // the member's ack timeout, whatever started it
	return after
}

// pipelineTruncate cuts the log as the member decided and says why: a
// recovery's agreed length, or a replica whose generation stamp is stale
// (discarded whole, to be copied again). Produce requests waiting for
// records that were cut are answered NOT_LEADER_OR_FOLLOWER (their records
// were never acknowledged; the producer sends them again).
func (r *replica) pipelineTruncate(t pipeline.Truncation) {
	rt := replication.Truncation{FromOffset: r.log.LogEndOffset(), ToOffset: t.ToOffset, Cause: replication.TruncateLeaderEndOffset}
	word := fact.Word("event.word.pipeline.recovery", t.Stamp, t.ToOffset)
	if t.Discard {
		rt.Cause = replication.TruncateFullyAndStartAt
		word = fact.Word("event.word.pipeline.stale", t.StaleStamp, t.Stamp, t.ToOffset)
		if t.BelowHW >= 0 {
			word = fact.Word("event.word.pipeline.short", t.BelowHW, t.ToOffset)
		}
	}
	ev := r.truncate(rt)
	r.emit(fact.Say(ev, "event.pipeline.truncation", rt.Cause, word))
	if !t.Discard { // a discard comes with the copy's first records, which the member counts already
		r.pl.m.LogChanged(r.log.LogStartOffset(), r.log.LogEndOffset())
	}
	r.failPipelineWaiters(r.log.LogEndOffset(), kerr.NotLeaderForPartition)
	if r.hw > r.log.LogEndOffset() {
		r.hw = r.log.LogEndOffset()
	}
}

// pipelineAppend appends records its predecessor forwarded (batches
// already stamped with their offsets and generation stamps).
func (r *replica) pipelineAppend(a *pipeline.Message) {
	info, err := r.log.AppendAsFollower(a.Records)
	if err != nil {
		if !errors.Is(err, storage.ErrClosed) {
			r.b.errLog.log("appending forwarded records", "partition", r.tp, "err", err)
		}
		r.pl.m.LogChanged(r.log.LogStartOffset(), r.log.LogEndOffset())
		return
	}
	r.producers = nil // rebuilt from the log if this replica comes to head
	epoch := r.pl.m.Status().Pipeline.Stamp
	if hs := storage.ScanBatchHeaders(a.Records); len(hs) > 0 {
		epoch = hs[len(hs)-1].PartitionLeaderEpoch
	}
	ev := r.appendEvent(info, epoch)
	r.outbox = append(r.outbox, outboxEvent{ev: ev, raw: a.Records, late: true})
	r.flushBy(r.b.nowMs())
	r.wake()
}

// reportPipelineFailure asks the controller to rebuild the pipeline
// without the member that did not answer.
func (r *replica) reportPipelineFailure(f pipeline.Failure) {
	err := r.b.cfg.Controller.PipelineFailed(r.tp.Topic, r.tp.Partition, r.b.cfg.ID, r.b.BrokerEpoch(), f.Stamp, f.Failed)
	if err != nil {
		r.b.logger.Debug("pipeline failure not reported", "partition", r.tp, "stamp", f.Stamp, "failed", f.Failed, "err", err)
		return
	}
	// The new pipeline reaches this head with the metadata, and the others
	// with its recovery write: applied now, the rebuild happens in this
	// call, so a paused lab's steps stay exact (refreshNow).
	r.b.refreshNow()
}

// reportCaughtUp tells the controller that every member of the pipeline
// of stamp has what its recovery agreed on, so joining members join the
// ISR. Lost, it is not sent again: they join at the next stamp's report.
func (r *replica) reportCaughtUp(stamp int32) {
	if err := r.b.cfg.Controller.PipelineCaughtUp(r.tp.Topic, r.tp.Partition, r.b.cfg.ID, r.b.BrokerEpoch(), stamp); err != nil {
		r.b.logger.Debug("pipeline catch-up not reported", "partition", r.tp, "stamp", stamp, "err", err)
	}
}

// pipelineTick shows the member the time (its ack timeout) and
// times out produce requests past their deadline. Callers hold r.mu.
func (r *replica) pipelineTick(nowMs int64) []func() {
	r.pl.m.Tick(nowMs)
	for _, id := range slices.Sorted(maps.Keys(r.pl.waiters)) {
		if w := r.pl.waiters[id]; nowMs >= w.deadlineMs {
			r.answerPipeline(id, ProduceResult{BaseOffset: w.first, LastOffset: w.last, Err: kerr.RequestTimedOut})
		}
	}
	return r.pipelineReady()
}

// pipelineTickBy has the broker tick at the member's next deadline and
// the first produce deadline. Callers hold r.mu.
func (r *replica) pipelineTickBy() {
	next := r.pl.m.NextTickMs()
	for _, w := range r.pl.waiters {
		next = min(next, w.deadlineMs)
	}
	if next < 1<<63-1 {
		r.b.tickBy(next)
	}
}

// pump sends the messages the member queued, outside r.mu, and runs the
// member again on what came of them. One goroutine pumps a replica at a
// time (on an undelayed link delivery is in the sender's call, so a
// write's whole round trip — the successors' appends and their acks —
// happens inside it); another
// caller only asks it for one more round, which keeps the writes to a
// successor in log order and never waits on a lock across a send.
func (r *replica) pump() {
	r.mu.Lock()
	if r.pl == nil || r.stopped {
		r.mu.Unlock()
		return
	}
	if r.pl.pumping {
		r.pl.again = true
		r.mu.Unlock()
		return
	}
	r.pl.pumping = true
	for {
		r.pl.again = false
		after := r.pipelineReady()
		msgs := r.pl.outq
		r.pl.outq = nil
		done := len(msgs) == 0 || r.stopped
		if done {
			r.pl.pumping = false
		}
		r.unlock(after)
		if done {
			return
		}
		for _, msg := range msgs {
			r.send(msg)
		}
		r.mu.Lock()
		if r.stopped {
			r.pl.pumping = false
			r.mu.Unlock()
			return
		}
	}
}

// send delivers one message, a write's records read from the log in
// chunks; a message not delivered is reported to the member (Unreachable).
func (r *replica) send(msg pipeline.Message) {
	tr := r.b.cfg.Pipeline
	err := errNoPipelineTransport
	if tr != nil && (msg.Kind != pipeline.KindWrite || msg.Recover) {
		err = tr.SendPipeline(r.b.cfg.ID, msg.To, r.tp, msg)
	} else if tr != nil {
		for off := msg.BaseOffset; off < msg.EndOffset; {
			var d storage.FetchData
			if d, err = r.log.Read(off, msg.EndOffset, pipelineChunkBytes); err == nil && d.NextOffset <= off {
				err = fmt.Errorf("%w: nothing to read at %d below %d", kerr.OffsetOutOfRange, off, msg.EndOffset)
			}
			if err != nil {
				break
			}
			chunk := msg
			chunk.BaseOffset, chunk.EndOffset = d.FirstOffset, d.NextOffset
			if chunk.Records, err = d.Region.ReadAll(); err != nil {
				break
			}
			if err = tr.SendPipeline(r.b.cfg.ID, msg.To, r.tp, chunk); err != nil {
				break
			}
			off = d.NextOffset
		}
	}
	if err == nil {
		return
	}
	r.mu.Lock()
	r.undelivered(msg, err)
	r.mu.Unlock()
}

// undelivered reports a message that did not arrive (ErrPipelineUnreachable,
// or no transport) or was refused by its receiver to the member. A message
// of a stamp the member has left is dropped: its failure says nothing
// about the current pipeline. Callers hold r.mu.
func (r *replica) undelivered(msg pipeline.Message, err error) {
	r.b.logger.Debug("pipeline message not delivered", "partition", r.tp, "kind", msg.Kind, "to", msg.To, "err", err)
	switch {
	case r.stopped || r.pl == nil || msg.Stamp != r.pl.m.Status().Pipeline.Stamp:
	case errors.Is(err, ErrPipelineUnreachable) || errors.Is(err, errNoPipelineTransport):
		r.pl.m.Unreachable(msg.To)
	default:
		r.pl.m.Refused(msg.To)
		r.pipelineTickBy() // the retry
	}
}

// PipelineUndelivered tells this broker's replica of tp that a message it
// sent earlier did not arrive, or was refused, after the sender's call had
// returned (a transport that delivers later, as the lab's delayed links
// do): the member learns it as if the send had failed, and acts on it.
func (b *Broker) PipelineUndelivered(tp storage.TopicPartition, msg pipeline.Message, err error) {
	r := b.replicaFor(tp.Topic, tp.Partition)
	if r == nil {
		return
	}
	r.mu.Lock()
	r.undelivered(msg, err)
	r.mu.Unlock()
	r.pump()
}

var errNoPipelineTransport = errors.New("no pipeline transport configured")

// ReceivePipeline hands a pipeline message from broker from to this
// broker's replica of tp, and runs the replica's pipeline on it (appends,
// forwards, acks) before it returns. UNKNOWN_TOPIC_OR_PARTITION when it
// hosts none (yet); NOT_LEADER_OR_FOLLOWER when it is not a pipeline
// replica; the member's refusal (FENCED_LEADER_EPOCH for an older stamp).
func (b *Broker) ReceivePipeline(from int32, tp storage.TopicPartition, msg pipeline.Message) error {
	r := b.replicaFor(tp.Topic, tp.Partition)
	if r == nil {
		return fmt.Errorf("%w: %s on broker %d", kerr.UnknownTopicOrPartition, tp, b.cfg.ID)
	}
	if msg.From != from {
		return fmt.Errorf("%w: pipeline message from %d sent by %d", kerr.InvalidRequest, msg.From, from)
	}
	r.mu.Lock()
	if r.stopped || r.pl == nil {
		r.mu.Unlock()
		return fmt.Errorf("%w: %s on broker %d is not a pipeline replica", kerr.NotLeaderForPartition, tp, b.cfg.ID)
	}
	if err := r.pl.m.Step(msg); err != nil {
		r.mu.Unlock()
		return err
	}
	r.unlock(r.pipelineReady())
	r.pump()
	return nil
}

// producePipeline appends a batch on the pipeline's head, stamped with the
// generation stamp, and forwards it; acks=all waits for the tail's ack
// (the HW passing it), acks=1 and acks=0 only for the head's append, as on
// an ISR leader. Idempotent producers are checked as on an ISR leader.
func (r *replica) producePipeline(ctx context.Context, acks int16, records []byte, ui []events.Record, timeout time.Duration) ProduceResult {
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return refused(kerr.NotLeaderForPartition)
	}
	now := r.b.nowMs()
	if err := r.pl.m.CheckProduce(acks, r.pl.minISR); err != nil {
		return r.refuseProduceLocked(acks, err)
	}
	epoch := r.pl.m.Status().Pipeline.Stamp
	info, refusal, ok := r.appendProduced(ctx, acks, records, ui, epoch, now, timeout)
	if !ok {
		return refusal
	}
	r.pl.m.Produced(info.LogEndOffset)
	res := ProduceResult{BaseOffset: info.FirstOffset, LastOffset: info.LastOffset}
	if acks != -1 {
		r.nextID++
		r.emit(r.produceEvent(replication.ProduceResult{ID: r.nextID, Acks: acks, BaseOffset: info.FirstOffset, LastOffset: info.LastOffset}))
		r.unlock(r.pipelineReady())
		r.pump()
		return res
	}
	r.nextID++
	id := r.nextID
	ch := make(chan ProduceResult, 1)
	r.pl.waiters[id] = pipelineWaiter{ch: ch, first: info.FirstOffset, last: info.LastOffset, deadlineMs: now + timeout.Milliseconds()}
	r.unlock(r.pipelineReady())
	r.pump()
	res.Err = kerr.RequestTimedOut // appended by the head, not acknowledged
	return awaitProduce(ctx, r, r.pl.waiters, id, func(w *pipelineWaiter) { w.sent = true }, ch, res)
}
