package broker

import (
	"errors"
	"fmt"
	"maps"
	"math"
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

// pipelineState is a replication.protocol=pipeline replica's side of the
// contract (replication/pipeline): the pipeline decides the head (leader),
// the HW and every truncation; acks=all produce requests wait for the HW
// to pass their last offset. Guarded by replica.mu.
type pipelineState struct {
	notFetching
	r *replica
	m *pipeline.Member
	// minISR is the topic's min.insync.replicas, applied to the pipeline's
	// length.
	minISR int
	// outq are messages Ready returned, for the pump (send) to send.
	outq []pipeline.Message
	// pumping is set while a goroutine sends outq (outside replica.mu).
	pumping bool
	// sends are calls an input queued for after r.mu (ready returns them).
	sends []func()
}

// newPipeline makes a new replica's pipeline member from what its log
// holds; the pipeline itself comes with the metadata (apply).
func (b *Broker) newPipeline(r *replica, tc controller.TopicConfig, hw int64) *pipelineState {
	l := r.log
	stamp := int32(-1)
	if epochs := l.Epochs(); len(epochs) > 0 {
		stamp = epochs[len(epochs)-1].Epoch
	}
	m := pipeline.New(pipeline.Config{ID: b.cfg.ID, TimeoutMs: tc.Replication().ReplicaLagTimeMaxMs, Unclean: !b.dir.WasCleanShutdown()},
		pipeline.LogState{LogStartOffset: l.LogStartOffset(), LogEndOffset: l.LogEndOffset(), HighWatermark: min(hw, l.LogEndOffset()), Stamp: stamp}, b.nowMs())
	return &pipelineState{r: r, m: m, minISR: tc.Replication().MinInsyncReplicas}
}

// status is the replica's view in the replication rules' terms: the head
// leads, the leader epoch is the generation stamp, the ISR is the pipeline
// in order.
func (pl *pipelineState) status() replication.Status {
	r := pl.r
	st := pl.m.Status()
	role, leader := replication.RoleFollower, st.Pipeline.Head()
	if st.IsHead {
		role = replication.RoleLeader
	}
	waiting := r.waitingSent()
	return replication.Status{BrokerID: r.b.cfg.ID, Role: role, Leader: leader, LeaderEpoch: st.Pipeline.Stamp,
		PartitionEpoch: r.applied.PartitionEpoch, Replicas: append([]int32(nil), r.applied.Replicas...), ISR: st.Pipeline.Members,
		LogStartOffset: r.log.LogStartOffset(), LogEndOffset: r.log.LogEndOffset(), HighWatermark: r.hw,
		EpochCache: r.log.Epochs(), WaitingProduces: waiting, NowMs: r.tickedMs}
}

// metadata gives the member the controller's pipeline. A head that is no
// longer the head fails its waiting produce requests.
func (pl *pipelineState) metadata(p controller.Partition, tc controller.TopicConfig) {
	r := pl.r
	r.applied = p
	pl.minISR = tc.Replication().MinInsyncReplicas
	members := slices.Concat(p.ISR, p.Joining)
	if p.Leader == replication.NoLeader {
		members = nil // offline: no head to write through
	}
	pl.m.SetPipeline(pipeline.Pipeline{Members: members, Stamp: p.LeaderEpoch})
	if pl.m.Status().Pipeline.Head() != r.b.cfg.ID {
		r.failWaiters(math.MinInt64, kerr.NotLeaderForPartition)
	}
}

func (pl *pipelineState) setConfig(controller.TopicConfig) error { return nil }

func (pl *pipelineState) retained(int) {
	pl.m.LogChanged(pl.r.log.LogStartOffset(), pl.r.log.LogEndOffset())
}

func (pl *pipelineState) stop() {}

func (pl *pipelineState) clockTicks(int64) {}

var _ protocol = (*pipelineState)(nil)

// ready applies what the member decided, in its order: truncation (a
// recovery's cut, or a stale replica discarded), received records
// appended, the new generation stamp in the leader-epoch cache, the HW
// (answering the produce requests it passed); messages wait in outq for
// the pump (send), and a failure report is returned as a call to make
// after r.mu is released.
func (pl *pipelineState) ready() []func() {
	r := pl.r
	var after []func()
	for range 4 { // a log that did something else is reported back once
		rd := pl.m.Ready()
		if rd.Empty() && rd.HighWatermark == r.hw {
			break
		}
		if t := rd.Truncation; t != nil {
			pl.truncate(*t)
		}
		if a := rd.Append; a != nil {
			pl.append(a)
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
			r.setHW(rd.HighWatermark)
			for _, id := range slices.Sorted(maps.Keys(r.waiters)) {
				if w := r.waiters[id]; w.last < r.hw {
					r.answer(id, ProduceResult{BaseOffset: w.first, LastOffset: w.last, Err: pl.m.AckError(-1, pl.minISR)})
				}
			}
		}
		pl.outq = append(pl.outq, rd.Messages...)
		if f := rd.Failure; f != nil {
			after = append(after, func() { r.reportPipelineFailure(*f) })
		}
		if rd.CaughtUp {
			stamp := pl.m.Status().Pipeline.Stamp
			after = append(after, func() { r.reportCaughtUp(stamp) })
		}
	}
	after = append(after, pl.sends...)
	pl.sends = nil
	return after
}

// pipelineTruncate cuts the log as the member decided and says why: a
// recovery's agreed length, or a replica whose generation stamp is stale
// (discarded whole, to be copied again). Produce requests waiting for
// records that were cut are answered NOT_LEADER_OR_FOLLOWER (their records
// were never acknowledged; the producer sends them again).
func (pl *pipelineState) truncate(t pipeline.Truncation) {
	r := pl.r
	rt := replication.Truncation{FromOffset: r.log.LogEndOffset(), ToOffset: t.ToOffset, Cause: replication.TruncateLeaderEndOffset}
	word := fact.Word("event.word.pipeline.recovery", t.Stamp, t.ToOffset)
	if t.Discard {
		rt.Cause = replication.TruncateFullyAndStartAt
		word = fact.Word("event.word.pipeline.stale", t.StaleStamp, t.Stamp, t.ToOffset)
		if t.BelowHW >= 0 {
			word = fact.Word("event.word.pipeline.short", t.BelowHW, t.ToOffset)
		}
	}
	o := r.truncate(rt)
	o.ev = fact.Say(o.ev, "event.pipeline.truncation", rt.Cause, word)
	r.outbox = append(r.outbox, o)
	if !t.Discard { // a discard comes with the copy's first records, which the member counts already
		pl.m.LogChanged(r.log.LogStartOffset(), r.log.LogEndOffset())
	}
	r.failWaiters(r.log.LogEndOffset(), kerr.NotLeaderForPartition)
	if r.hw > r.log.LogEndOffset() {
		r.hw = r.log.LogEndOffset()
	}
}

// pipelineAppend appends records its predecessor forwarded (batches
// already stamped with their offsets and generation stamps).
func (pl *pipelineState) append(a *pipeline.Message) {
	r := pl.r
	info, err := r.log.AppendAsFollower(a.Records)
	if err != nil {
		if !errors.Is(err, storage.ErrClosed) {
			r.b.errLog.log("appending forwarded records", "partition", r.tp, "err", err)
		}
		pl.m.LogChanged(r.log.LogStartOffset(), r.log.LogEndOffset())
		return
	}
	// The producer state is rebuilt from the log if this replica comes to
	// head; the lanes say the LSO once a transactional batch came (txn.go).
	r.producers = nil
	r.txnSeen = r.txnSeen || hasTxnBatch(a.Records)
	epoch := pl.m.Status().Pipeline.Stamp
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

// tick shows the member the time (its ack timeout) and times out produce
// requests past their deadline.
func (pl *pipelineState) tick(nowMs int64) {
	pl.m.Tick(nowMs)
	pl.r.expireWaiters(nowMs)
}

// nextTickMs is the member's next deadline (its ack timeout, whatever
// started it) or the first produce deadline.
func (pl *pipelineState) nextTickMs() int64 {
	return min(pl.m.NextTickMs(), pl.r.waitersDeadline())
}

// send is the pump: it sends the messages the member queued, outside
// r.mu, and drives the member again on what came of them. One goroutine
// pumps a replica at a time (on an undelayed link delivery is in the
// sender's call, so a write's whole round trip — the successors' appends
// and their acks — happens inside it); another caller leaves its messages
// to it, which keeps the writes to a successor in log order and never
// waits on a lock across a send.
func (pl *pipelineState) send() {
	r := pl.r
	r.mu.Lock()
	if r.stopped || pl.pumping {
		r.mu.Unlock()
		return
	}
	pl.pumping = true
	for {
		msgs := pl.outq
		pl.outq = nil
		if len(msgs) == 0 || r.stopped {
			pl.pumping = false
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		for _, msg := range msgs {
			pl.sendOne(msg)
		}
		r.drive(func(int) bool { return false }) // what came back, and what it queued
		r.mu.Lock()
	}
}

// sendOne delivers one message, a write's records read from the log in
// chunks; a message not delivered is reported to the member (Unreachable).
func (pl *pipelineState) sendOne(msg pipeline.Message) {
	r := pl.r
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
	pl.undelivered(msg, err)
	r.mu.Unlock()
}

// undelivered reports a message that did not arrive (ErrPipelineUnreachable,
// or no transport) or was refused by its receiver to the member. A message
// of a stamp the member has left is dropped: its failure says nothing
// about the current pipeline. Callers hold r.mu.
func (pl *pipelineState) undelivered(msg pipeline.Message, err error) {
	r := pl.r
	r.b.logger.Debug("pipeline message not delivered", "partition", r.tp, "kind", msg.Kind, "to", msg.To, "err", err)
	switch {
	case r.stopped || msg.Stamp != pl.m.Status().Pipeline.Stamp:
	case errors.Is(err, ErrPipelineUnreachable) || errors.Is(err, errNoPipelineTransport):
		pl.m.Unreachable(msg.To)
	default:
		pl.m.Refused(msg.To)
		r.b.tickBy(pl.nextTickMs()) // the retry
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
	_ = b.receive(tp, "pipeline", undelivered{msg, err})
}

// undelivered is a message this replica sent that did not arrive, or was
// refused, told after the send returned (PipelineUndelivered).
type undelivered struct {
	msg pipeline.Message
	err error
}

var errNoPipelineTransport = errors.New("no pipeline transport configured")

// ReceivePipeline hands a pipeline message from broker from to this
// broker's replica of tp, and runs the replica's pipeline on it (appends,
// forwards, acks) before it returns. UNKNOWN_TOPIC_OR_PARTITION when it
// hosts none (yet); NOT_LEADER_OR_FOLLOWER when it is not a pipeline
// replica; the member's refusal (FENCED_LEADER_EPOCH for an older stamp).
func (b *Broker) ReceivePipeline(from int32, tp storage.TopicPartition, msg pipeline.Message) error {
	if b.replicaFor(tp.Topic, tp.Partition) != nil && msg.From != from {
		return fmt.Errorf("%w: pipeline message from %d sent by %d", kerr.InvalidRequest, msg.From, from)
	}
	return b.receive(tp, "pipeline", msg)
}

// step hands the member a message from another replica.
func (pl *pipelineState) step(msg any) error {
	switch m := msg.(type) {
	case pipeline.Message:
		return pl.m.Step(m)
	case undelivered:
		pl.undelivered(m.msg, m.err)
		return nil
	}
	return errWrongProtocol
}

// produce appends a batch on the pipeline's head, stamped with the
// generation stamp, to be forwarded; acks=all waits for the tail's ack
// (the HW passing it), acks=1 and acks=0 only for the head's append, as on
// an ISR leader. Idempotent producers are checked as on an ISR leader.
func (pl *pipelineState) produce(acks int16, records []byte, ui []events.Record, now int64, timeout time.Duration) produced {
	r := pl.r
	if err := pl.m.CheckProduce(acks, pl.minISR); err != nil {
		return produced{res: r.refuseProduce(acks, err)}
	}
	epoch := pl.m.Status().Pipeline.Stamp
	info, p, ok := r.appendProduced(acks, records, ui, epoch, now)
	if !ok {
		return p
	}
	pl.m.Produced(info.LogEndOffset)
	res := ProduceResult{BaseOffset: info.FirstOffset, LastOffset: info.LastOffset}
	if acks != -1 {
		r.nextID++
		r.emit(r.produceEvent(acks, res))
		return produced{res: res}
	}
	return r.wait(acks, info.FirstOffset, info.LastOffset, now+timeout.Milliseconds())
}
