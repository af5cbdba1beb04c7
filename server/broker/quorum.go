package broker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.etcd.io/raft/v3/raftpb"

	"tidemark/events"
	"tidemark/internal/fact"
	"tidemark/replication"
	"tidemark/replication/quorum"
	"tidemark/server/controller"
	"tidemark/storage"
)

// RaftTransport carries a quorum partition's Raft messages between brokers.
// The lab's routes them over its simulated links, so a cut link or a
// crashed broker loses them as it loses fetches. SendRaft returns an error
// when the message cannot be delivered (Raft then probes the peer again).
type RaftTransport interface {
	SendRaft(from, to int32, tp storage.TopicPartition, msg []byte) error
}

// quorumState is a replica's Raft side, for topics with
// replication.protocol=quorum (replication/quorum). The replica's rp is not
// used for such a partition: Raft decides leadership and the HW.
// Guarded by replica.mu.
type quorumState struct {
	node *quorum.Node
	// waiters are produce requests waiting for their entry to commit, by
	// proposal id.
	waiters map[uint64]quorumWaiter
	// leader and term are the last leadership the replica reported in
	// events; reportedTerm is the term the controller last accepted from
	// this broker as leader (reported again at each tick until it is).
	leader       int32
	term         uint64
	reportedTerm uint64
	// tickedMs is the lab time of the last Raft tick (TickRaft).
	tickedMs int64
	// restored is set when the node restored a snapshot into the log:
	// the producer state is rebuilt.
	restored bool
	// isrSent is the ISR last proposed to the controller, for the
	// partition epoch isrSentEpoch: proposed once per change. isrFailed
	// says the controller refused it or never got it: the next tick
	// proposes again.
	isrSent      []int32
	isrSentEpoch int32
	isrFailed    bool
}

type quorumWaiter struct {
	ch         chan ProduceResult
	acks       int16
	deadlineMs int64
	// sent is set once the proposal's first messages went out (and came
	// back, delivery being synchronous): from then on the request waits
	// for peers that were not reachable, and Status counts it.
	sent bool
}

// answer completes a waiting produce request and reports it as the ISR
// path does (an ack, or a produce error). Callers hold r.mu.
func (r *replica) answer(id uint64, res ProduceResult) {
	w, ok := r.q.waiters[id]
	if !ok {
		return
	}
	delete(r.q.waiters, id)
	w.ch <- res // buffered: never blocks
	r.emit(r.produceEvent(replication.ProduceResult{ID: id, Acks: w.acks, BaseOffset: res.BaseOffset, LastOffset: res.LastOffset, Err: res.Err}))
}

// openQuorum opens the Raft node of a new quorum replica in its log's
// directory. The segment log is cut back to the node's apply checkpoint
// (the node hands out the committed entries after it again). A replica with
// no Raft state yet that is the first in the assignment campaigns at once,
// so a new topic's first leader is the one the controller's metadata
// already names.
func (b *Broker) openQuorum(l *storage.Log, replicas []int32) (*quorumState, error) {
	// Raft ticks on the lab's grid of TickInterval (nextOnGrid), so the
	// brokers' quorum replicas tick in the same wake-ups.
	q := &quorumState{waiters: map[uint64]quorumWaiter{}, leader: -1, tickedMs: slotMs(b.nowMs(), b.cfg.TickInterval)}
	n, err := quorum.Open(quorum.Config{ID: b.cfg.ID, Voters: replicas, Dir: l.Dir(), FS: b.cfg.FS, Logger: b.logger,
		LogEndOffset: l.LogEndOffset(), CompactEntries: b.cfg.RaftCompactEntries, SyncLog: l.Flush,
		Restore: func(d quorum.SnapshotData) error { q.restored = true; return restoreSnapshot(l, d) },
		Synced:  func(size int64) { l.Synced(quorum.StateFile, size) }})
	if err != nil {
		return nil, err
	}
	q.node = n
	if end := n.ApplyStart(); l.LogEndOffset() > end {
		if _, err := l.TruncateTo(end); err != nil {
			n.Close()
			return nil, err
		}
	}
	b.tickBy(q.tickedMs + b.cfg.TickInterval.Milliseconds()) // Raft ticks from now on
	if st := n.Status(); st.LastIndex <= 1 && st.Term <= 1 && len(replicas) > 0 && replicas[0] == b.cfg.ID {
		if err := n.Campaign(); err != nil {
			n.Close()
			return nil, err
		}
	}
	return q, nil
}

// restoreSnapshot brings a follower's segment log to a snapshot its leader
// sent (it was too far behind for Raft's entries, which were compacted): the
// records it lacks are appended as the leader stored them, and fsynced
// before the node records the snapshot. Every replica's log holds only
// committed entries in the same order, so the prefix it has is the leader's.
func restoreSnapshot(l *storage.Log, d quorum.SnapshotData) error {
	leo := l.LogEndOffset()
	switch {
	case leo > d.End:
		if _, err := l.TruncateTo(d.End); err != nil {
			return err
		}
	case leo < d.Start:
		if err := l.TruncateFullyAndStartAt(d.Start); err != nil {
			return err
		}
	}
	recs := d.Records
	for _, h := range storage.ScanBatchHeaders(recs) {
		batch := recs[:h.Size()]
		recs = recs[h.Size():]
		if h.BaseOffset < l.LogEndOffset() || h.BaseOffset >= d.End {
			continue
		}
		if _, err := l.AppendAsFollower(batch); err != nil {
			return err
		}
	}
	if leo := l.LogEndOffset(); leo != d.End {
		return fmt.Errorf("%w: the snapshot's records end at %d, not %d", kerr.CorruptMessage, leo, d.End)
	}
	return l.Flush()
}

// status is the replica's view in the replication rules' terms; for a
// quorum partition it is made from Raft's state (leader epoch = term, HW =
// the committed end) and the Metadata's ISR, which the Raft leader keeps
// to the replicas it sees as caught up (proposeQuorumISR).
func (r *replica) status() replication.Status {
	if r.pl != nil {
		return r.pipelineStatus() // pipeline.go
	}
	if r.q == nil {
		return r.rp.Status()
	}
	st := r.q.node.Status()
	role := replication.RoleFollower
	if st.Role == "leader" {
		role = replication.RoleLeader
	}
	isr := r.applied.ISR
	if st.Leader >= 0 && int32(st.Term) > r.applied.LeaderEpoch {
		// Raft elected a leader the applied metadata does not name yet:
		// its ISR is the one the controller records for that leadership,
		// so the status never pairs the new term with an ISR of an older
		// one that may lack its leader (Kafka never shows that).
		isr = controller.QuorumLeaderISR(r.applied.Replicas, isr, st.Leader)
	} else {
		isr = slices.Clone(isr)
	}
	return replication.Status{BrokerID: r.b.cfg.ID, Role: role, Leader: st.Leader, LeaderEpoch: int32(st.Term),
		PartitionEpoch: r.applied.PartitionEpoch, Replicas: slices.Clone(r.applied.Replicas), ISR: isr,
		LogStartOffset: r.log.LogStartOffset(), LogEndOffset: r.log.LogEndOffset(), HighWatermark: r.hw,
		EpochCache: r.log.Epochs(), WaitingProduces: r.waitingQuorum(), NowMs: r.tickedMs}
}

// waitingQuorum counts the produce requests whose proposal went out and
// did not commit: a caller that sees the count grow knows the produce
// either waits for a majority or has been answered.
func (r *replica) waitingQuorum() int {
	n := 0
	for _, w := range r.q.waiters {
		if w.sent {
			n++
		}
	}
	return n
}

// quorumTick times out produce requests past their deadline and reports a
// leadership the controller has not taken yet. Raft's own ticks come from
// TickRaft; the broker is asked to tick again when Raft's next tick may do
// something (Node.TicksUntilDue: an idle follower not before its election
// timeout, an idle leader at its next heartbeat) or a produce request's
// deadline passes, whichever is first. Callers hold r.mu; the returned
// calls run after it is released.
func (r *replica) quorumTick(nowMs int64) []func() {
	if r.q.isrFailed {
		r.q.isrFailed, r.q.isrSent = false, nil
	}
	for _, id := range slices.Sorted(maps.Keys(r.q.waiters)) { // in id order: the same events in every replay
		if w := r.q.waiters[id]; nowMs >= w.deadlineMs {
			r.answer(id, refused(kerr.RequestTimedOut))
		}
	}
	after := r.quorumReady()
	if st := r.q.node.Status(); st.Role == "leader" && r.q.reportedTerm < st.Term {
		after = append(after, r.reportQuorumLeader(st.Term))
	}
	r.b.tickBy(r.nextQuorumTickMs())
	return after
}

// nextQuorumTickMs is when the replica's broker must tick next for Raft
// and the produce requests waiting on it. Callers hold r.mu.
func (r *replica) nextQuorumTickMs() int64 {
	next := r.q.tickedMs + int64(r.q.node.TicksUntilDue())*r.b.cfg.TickInterval.Milliseconds()
	for _, w := range r.q.waiters {
		next = min(next, w.deadlineMs)
	}
	return next
}

// maxRaftCatchUp bounds the Raft ticks one TickRaft gives a replica: a
// clock that jumped further (a running lab resumed after a long pause)
// skips the rest rather than spinning through them.
const maxRaftCatchUp = 200

// TickRaft gives every quorum replica the Raft ticks (one per TickInterval
// of lab time) due up to now, each followed by the messages it caused.
// Raft counts timeouts in ticks, not time: the tick loop calls it on time,
// and a paused lab's Step calls it at every TickInterval it skips, for
// every broker in turn, so heartbeats and elections interleave as they
// would have while the clock ran.
func (b *Broker) TickRaft(now time.Time) {
	for _, r := range b.replicaList() {
		if r.q != nil { // set when the replica is made, never changed
			r.tickRaft(now.UnixMilli())
		}
	}
}

func (r *replica) tickRaft(nowMs int64) {
	interval := r.b.cfg.TickInterval.Milliseconds()
	for n := 0; ; n++ {
		r.mu.Lock()
		if r.stopped || r.q.tickedMs+interval > nowMs {
			if !r.stopped {
				r.b.tickBy(r.nextQuorumTickMs())
			}
			r.mu.Unlock()
			return
		}
		if n == maxRaftCatchUp {
			r.q.tickedMs = slotMs(nowMs, r.b.cfg.TickInterval) // on the grid, as at open
			r.mu.Unlock()
			return
		}
		r.q.tickedMs += interval
		r.q.node.Tick()
		r.unlock(r.quorumReady())
	}
}

// quorumReady drains the Raft node: committed entries are appended to the
// segment log (the term as the batch's leader epoch) and answer their
// produce requests, the HW moves to the committed end, leadership changes
// are reported, and the messages for other replicas are returned as a call
// to make after r.mu is released. Callers hold r.mu.
func (r *replica) quorumReady() []func() {
	rd, err := r.q.node.Ready()
	if err != nil {
		r.b.errLog.log("Raft state", "partition", r.tp, "err", err)
		r.failQuorumWaiters(kerr.KafkaStorageError)
		return nil
	}
	if r.q.restored { // the log now holds the snapshot's records
		r.q.restored = false
		r.producers = nil
		ev := r.event(events.KindLEO)
		ev.Offsets = &events.Offsets{Base: r.log.LogStartOffset(), LEO: r.log.LogEndOffset(), HW: r.hw}
		r.emit(ev)
	}
	applied := true
	for _, e := range rd.Committed {
		if applied = r.applyCommitted(e); !applied {
			break
		}
	}
	if applied && rd.LastCommitted > 0 {
		if err := r.q.node.Applied(rd.LastCommitted, r.log.LogEndOffset()); err != nil {
			r.b.errLog.log("Raft state", "partition", r.tp, "err", err)
		}
	}
	var after []func()
	if leo := r.log.LogEndOffset(); leo != r.hw {
		r.hw = leo
		ev := r.event(events.KindHW)
		ev.Offsets = &events.Offsets{HW: r.hw, LEO: leo}
		r.emit(ev)
		r.wake()
	}
	st := r.q.node.Status()
	if st.Leader != r.q.leader || st.Term != r.q.term {
		wasLeader := r.q.leader == r.b.cfg.ID
		r.q.leader, r.q.term = st.Leader, st.Term
		// The controller's election event tells the lab; each replica's
		// epoch cache changes when a batch of the new term is appended.
		r.b.logger.Debug("Raft leadership", "partition", r.tp, "term", st.Term, "leader", st.Leader)
		if wasLeader && st.Leader != r.b.cfg.ID {
			// Entries this leader proposed may still commit under the
			// next one, but it cannot tell: Kafka answers a request
			// whose leader moved NOT_LEADER_OR_FOLLOWER.
			r.failQuorumWaiters(kerr.NotLeaderForPartition)
		}
		if st.Leader == r.b.cfg.ID {
			after = append(after, r.reportQuorumLeader(st.Term))
		}
	}
	if len(rd.Messages) > 0 {
		msgs := rd.Messages
		after = append(after, func() { r.b.sendRaft(r, msgs) })
	}
	if f := r.proposeQuorumISR(st); f != nil {
		after = append(after, f)
	}
	return after
}

// proposeQuorumISR returns the call that proposes the replicas Raft's
// leader sees as caught up (Node.CaughtUp) to the controller as the ISR,
// with AlterPartition as an ISR leader does, when they differ from the
// Metadata's: the controller owns the ISR every replica shows, and for a
// quorum partition only the Raft leader changes it. Nil when there is
// nothing to propose. Callers hold r.mu.
func (r *replica) proposeQuorumISR(st quorum.Status) func() {
	me := r.b.cfg.ID
	if st.Role != "leader" || r.applied.Leader != me || r.applied.LeaderEpoch != int32(st.Term) {
		return nil // the controller does not name this leadership yet
	}
	isr := r.q.node.CaughtUp()
	if sameMembers(isr, r.applied.ISR) || r.q.isrSentEpoch == r.applied.PartitionEpoch && slices.Equal(isr, r.q.isrSent) {
		return nil
	}
	r.q.isrSent, r.q.isrSentEpoch = isr, r.applied.PartitionEpoch
	req := replication.AlterPartitionRequest{BrokerID: me, LeaderEpoch: int32(st.Term), PartitionEpoch: r.applied.PartitionEpoch, NewISR: isr}
	return func() {
		r.b.cfg.Controller.AlterPartition(r.tp.Topic, r.tp.Partition, me, r.b.BrokerEpoch(), req, func(resp replication.AlterPartitionResponse, err error) {
			if err == nil {
				err = resp.Err
			}
			if err != nil {
				r.b.logger.Debug("quorum ISR not altered", "partition", r.tp, "isr", isr, "err", err)
				r.mu.Lock()
				r.q.isrFailed = true // proposed again at the next tick
				r.mu.Unlock()
				r.b.tickBy(r.b.nowMs() + r.b.cfg.TickInterval.Milliseconds())
				return
			}
			r.b.refreshNow() // the ISR reaches the replicas with the metadata
		})
	}
}

func sameMembers(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// applyCommitted appends one committed entry to the segment log at its end,
// after the idempotent-producer check the ISR leader makes before an append
// (producers.go). Every replica applies the same entries in the same order
// to the same log, so each reaches the same verdict: a retried batch is not
// appended twice, and its proposer answers the original offsets. It reports
// whether the next entry may follow.
func (r *replica) applyCommitted(e quorum.Entry) bool {
	pc, err := r.checkProducers(e.Batch)
	switch {
	case errors.Is(err, kerr.OutOfOrderSequenceNumber) || errors.Is(err, kerr.InvalidProducerEpoch) || errors.Is(err, kerr.DuplicateSequenceNumber):
		if e.Proposer == r.b.cfg.ID {
			r.answer(e.ProposalID, refused(err))
		}
		return true
	case err != nil:
		r.b.errLog.log("producer state of a committed Raft entry", "partition", r.tp, "index", e.Index, "err", err)
		return false
	case pc.dup != nil:
		if e.Proposer == r.b.cfg.ID {
			r.answer(e.ProposalID, ProduceResult{BaseOffset: pc.dup.firstOffset, LastOffset: pc.dup.lastOffset})
		}
		return true
	}
	epochs := len(r.log.Epochs())
	info, err := r.log.AppendAsLeader(e.Batch, int32(e.Term))
	if err != nil {
		if !errors.Is(err, storage.ErrClosed) {
			r.b.errLog.log("appending a committed Raft entry", "partition", r.tp, "err", err)
		}
		return false
	}
	r.producersAppended(pc, info)
	if cache := r.log.Epochs(); len(cache) > epochs { // the first batch of a term
		ev := r.event(events.KindEpoch)
		last := cache[len(cache)-1]
		ev.Leader = &events.Leadership{Leader: r.q.leader, LeaderEpoch: last.Epoch, StartOffset: last.StartOffset}
		r.emit(ev)
	}
	ev := r.appendEvent(info, int32(e.Term))
	ev.Leader.Leader = r.q.leader
	r.outbox = append(r.outbox, outboxEvent{ev: ev, raw: e.Batch, late: e.Proposer != r.b.cfg.ID})
	if e.Proposer == r.b.cfg.ID {
		r.answer(e.ProposalID, ProduceResult{BaseOffset: info.FirstOffset, LastOffset: info.LastOffset})
	}
	return true
}

func (r *replica) failQuorumWaiters(err error) {
	for _, id := range slices.Sorted(maps.Keys(r.q.waiters)) {
		r.answer(id, refused(err))
	}
}

// reportQuorumLeader returns the call that tells the controller this
// broker leads in term, so Metadata sends clients here.
func (r *replica) reportQuorumLeader(term uint64) func() {
	return func() {
		err := r.b.cfg.Controller.QuorumLeader(r.tp.Topic, r.tp.Partition, r.b.cfg.ID, r.b.BrokerEpoch(), int32(term))
		if err != nil {
			r.b.logger.Debug("Raft leadership not reported", "partition", r.tp, "term", term, "err", err)
			return
		}
		r.mu.Lock()
		if !r.stopped {
			r.q.reportedTerm = max(r.q.reportedTerm, term)
		}
		r.mu.Unlock()
		r.b.refreshNow() // the new leader epoch reaches the replicas with the metadata
	}
}

// refreshNow applies the newest metadata before it returns: now, or, if an
// apply is under way (this call comes from inside it, or the metadata
// goroutine's), when that apply ends, in its call. Leaving it to the
// metadata goroutine instead raced with a paused lab's next step (quorum
// leaders and ISRs did not replay exactly). A running lab also asks the
// metadata goroutine, in case the apply under way ended just before it
// saw the request.
func (b *Broker) refreshNow() {
	if b.applyMu.TryLock() {
		b.applyMu.Unlock()
		b.RefreshMetadata()
		return
	}
	b.reapply.Store(true)
	if !b.cfg.Clock.Paused() {
		b.refreshSoon()
	}
}

// refreshSoon asks the metadata goroutine to apply the newest metadata.
func (b *Broker) refreshSoon() {
	select {
	case b.refresh <- struct{}{}:
	default:
	}
}

// sendRaft sends a replica's Raft messages over the lab's links (the
// transport drops what a cut link or a stopped broker would), outside every
// lock; a peer that a message could not reach is reported unreachable to
// Raft.
func (b *Broker) sendRaft(r *replica, msgs []raftpb.Message) {
	var unreachable []int32
	type snapSent struct {
		to int32
		ok bool
	}
	var snaps []snapSent
	if b.wantsMessages() {
		evs := make([]events.Event, len(msgs))
		for i, m := range msgs {
			evs[i] = r.raftMessageEvent(m, !b.cfg.Network.Allowed(b.cfg.ID, int32(m.To)))
		}
		b.publish(evs...)
	}
	for _, m := range msgs {
		to := int32(m.To)
		var err error
		if m.Type == raftpb.MsgSnap {
			err = addSnapshotRecords(r.log, &m)
		}
		var data []byte
		if err == nil {
			data, err = m.Marshal()
		}
		if err == nil {
			if b.cfg.Raft == nil {
				err = errNoRaftTransport
			} else {
				err = b.cfg.Raft.SendRaft(b.cfg.ID, to, r.tp, data)
			}
		}
		if m.Type == raftpb.MsgSnap {
			if err != nil {
				b.logger.Debug("Raft snapshot not sent", "partition", r.tp, "to", to, "err", err)
			}
			snaps = append(snaps, snapSent{to, err == nil})
		}
		if err != nil && !slices.Contains(unreachable, to) {
			unreachable = append(unreachable, to)
		}
	}
	if len(unreachable) == 0 && len(snaps) == 0 {
		return
	}
	r.mu.Lock()
	if !r.stopped {
		for _, id := range unreachable {
			r.q.node.ReportUnreachable(id)
		}
		// Delivery is synchronous: the follower restored it, or did not.
		for _, s := range snaps {
			r.q.node.ReportSnapshot(s.to, s.ok)
		}
	}
	r.mu.Unlock()
}

// raftMessageEvent describes a Raft message for the stage: which one and
// what it carries (its term, and the index and commit that matter for it).
func (r *replica) raftMessageEvent(m raftpb.Message, lost bool) events.Event {
	ev := r.event(events.KindRaft)
	ev.Wire = &events.Wire{From: int32(m.From), To: int32(m.To), Lost: lost}
	switch m.Type {
	case raftpb.MsgApp:
		return fact.Say(ev, "stage.msg.raft.app", m.Term, m.Index+1, len(m.Entries), m.Commit)
	case raftpb.MsgAppResp:
		if m.Reject {
			return fact.Say(ev, "stage.msg.raft.app-reject", m.Term, m.Index)
		}
		return fact.Say(ev, "stage.msg.raft.app-ok", m.Term, m.Index)
	case raftpb.MsgVote, raftpb.MsgPreVote:
		key := "stage.msg.raft.vote"
		if m.Type == raftpb.MsgPreVote {
			key = "stage.msg.raft.prevote"
		}
		return fact.Say(ev, key, m.Term, m.Index, m.LogTerm)
	case raftpb.MsgVoteResp, raftpb.MsgPreVoteResp:
		key := "stage.msg.raft.vote-yes"
		if m.Reject {
			key = "stage.msg.raft.vote-no"
		}
		return fact.Say(ev, key, m.Term)
	case raftpb.MsgHeartbeat:
		return fact.Say(ev, "stage.msg.raft.heartbeat", m.Term, m.Commit)
	case raftpb.MsgHeartbeatResp:
		return fact.Say(ev, "stage.msg.raft.heartbeat-ok", m.Term)
	case raftpb.MsgSnap:
		return fact.Say(ev, "stage.msg.raft.snap", m.Term, m.Snapshot.Metadata.Index)
	}
	return fact.Say(ev, "stage.msg.raft.other", m.Type.String(), m.Term)
}

// maxSnapshotBytes bounds the records one Raft snapshot carries.
const maxSnapshotBytes = 64 << 20

// addSnapshotRecords fills a Raft snapshot's data with the records the
// leader's segment log holds from its start to the snapshot's end: the
// follower keeps the prefix it has and appends the rest. Reads need no
// lock (storage allows concurrent readers).
func addSnapshotRecords(l *storage.Log, m *raftpb.Message) error {
	d, err := quorum.DecodeSnapshotData(m.Snapshot.Data)
	if err != nil {
		return err
	}
	d.Start = l.LogStartOffset()
	for from := d.Start; from < d.End; {
		fd, err := l.Read(from, d.End, 1<<20)
		if err != nil {
			return err
		}
		if fd.Region.Size == 0 {
			return fmt.Errorf("%w: the log ends at %d, before the snapshot's %d", kerr.OffsetOutOfRange, from, d.End)
		}
		buf, err := fd.Region.ReadAll()
		if err != nil {
			return err
		}
		if d.Records = append(d.Records, buf...); len(d.Records) > maxSnapshotBytes {
			return fmt.Errorf("%w: a snapshot of more than %d bytes", kerr.MessageTooLarge, maxSnapshotBytes)
		}
		from = fd.NextOffset
	}
	snap := *m.Snapshot
	snap.Data = quorum.EncodeSnapshotData(d)
	m.Snapshot = &snap
	return nil
}

var errNoRaftTransport = errors.New("no Raft transport configured")

// ReceiveRaft hands a Raft message from broker from to this broker's
// replica of tp. UNKNOWN_TOPIC_OR_PARTITION when it hosts none (yet), and
// INVALID_REQUEST for bytes that are not a Raft message.
func (b *Broker) ReceiveRaft(from int32, tp storage.TopicPartition, msg []byte) error {
	r := b.replicaFor(tp.Topic, tp.Partition)
	if r == nil {
		return fmt.Errorf("%w: %s on broker %d", kerr.UnknownTopicOrPartition, tp, b.cfg.ID)
	}
	var m raftpb.Message
	if err := m.Unmarshal(msg); err != nil {
		return fmt.Errorf("%w: Raft message: %v", kerr.InvalidRequest, err)
	}
	if int32(m.From) != from {
		return fmt.Errorf("%w: Raft message from %d sent by %d", kerr.InvalidRequest, m.From, from)
	}
	if r.q != nil && !b.cfg.Clock.Paused() {
		// An idle replica's broker does not wake for ticks that only
		// count (TicksUntilDue): give them before the message, so Raft
		// counts its timeouts from the right tick. (A paused lab's Step
		// gives every broker each tick in turn.)
		r.tickRaft(b.nowMs())
	}
	r.mu.Lock()
	if r.stopped || r.q == nil {
		r.mu.Unlock()
		return fmt.Errorf("%w: %s on broker %d is not a quorum replica", kerr.NotLeaderForPartition, tp, b.cfg.ID)
	}
	if err := r.q.node.Step(m); err != nil {
		r.mu.Unlock()
		return err
	}
	r.unlock(r.quorumReady())
	return nil
}

// produceQuorum proposes a batch to Raft on the leader and waits for it to
// commit. acks=1 waits as acks=all does: under Raft the leader appends
// nothing to its segment log before a majority has the entry, so there is
// no earlier point at which the leader alone has it. acks=0 returns once
// proposed.
func (r *replica) produceQuorum(ctx context.Context, acks int16, records []byte, timeout time.Duration) ProduceResult {
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return refused(kerr.NotLeaderForPartition)
	}
	r.nextID++
	id := r.nextID
	if err := r.q.node.Propose(id, records); err != nil {
		return r.refuseProduceLocked(acks, err)
	}
	ch := make(chan ProduceResult, 1)
	if acks != 0 {
		deadline := r.b.nowMs() + timeout.Milliseconds()
		r.q.waiters[id] = quorumWaiter{ch: ch, acks: acks, deadlineMs: deadline}
		r.b.tickBy(deadline) // its timeout is a tick's work
	}
	r.unlock(r.quorumReady())
	if acks == 0 {
		return ProduceResult{BaseOffset: -1, LastOffset: -1}
	}
	// Proposed, not yet committed when it times out: not in the segment log.
	return awaitProduce(ctx, r, r.q.waiters, id, func(w *quorumWaiter) { w.sent = true }, ch, refused(kerr.RequestTimedOut))
}

// awaitProduce waits for the answer of a quorum or pipeline leader's
// produce id, whose first messages went out: it marks the waiter sent
// (from then on it waits for peers that did not answer, and Status counts
// it), then waits for ch; when ctx ends first it forgets the waiter and
// answers timedOut. waiters is guarded by r.mu.
func awaitProduce[W any](ctx context.Context, r *replica, waiters map[uint64]W, id uint64, markSent func(*W), ch <-chan ProduceResult, timedOut ProduceResult) ProduceResult {
	r.mu.Lock()
	if w, ok := waiters[id]; ok {
		markSent(&w)
		waiters[id] = w
	}
	r.mu.Unlock()
	select {
	case res := <-ch:
		return res
	case <-ctx.Done():
		r.mu.Lock()
		delete(waiters, id)
		r.mu.Unlock()
		return timedOut
	}
}
