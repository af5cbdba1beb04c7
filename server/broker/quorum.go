package broker

import (
	"errors"
	"fmt"
	"math"
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

// quorumState is a replication.protocol=quorum replica's side of the
// contract (replication/quorum: etcd raft): Raft decides leadership and
// the HW; the replica's produce requests wait for their entry (by proposal
// id) to commit. Guarded by replica.mu.
type quorumState struct {
	notFetching
	r    *replica
	node *quorum.Node
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
	// sends are calls an input queued for after r.mu (ready returns them).
	sends []func()
	// stepped says an input stepped the node (a tick, a message, a
	// proposal, the broker's tick): ready drains the node only then, so
	// inputs that do not step Raft (metadata, a tick not yet due) leave
	// its Ready to the next step, and a paused lab's elections replay
	// exactly.
	stepped bool
}

// openQuorum opens the Raft node of a new quorum replica in its log's
// directory. The segment log is cut back to the node's apply checkpoint
// (the node hands out the committed entries after it again). A replica with
// no Raft state yet that is the first in the assignment campaigns at once,
// so a new topic's first leader is the one the controller's metadata
// already names.
func (b *Broker) openQuorum(r *replica, replicas []int32) (*quorumState, error) {
	l := r.log
	// Raft ticks on the lab's grid of TickInterval (nextOnGrid), so the
	// brokers' quorum replicas tick in the same wake-ups.
	q := &quorumState{r: r, leader: -1, tickedMs: slotMs(b.nowMs(), b.cfg.TickInterval)}
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
func (q *quorumState) status() replication.Status {
	r := q.r
	st := q.node.Status()
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
		EpochCache: r.log.Epochs(), WaitingProduces: r.waitingSent(), NowMs: r.tickedMs}
}

// tick times out produce requests past their deadline and reports a
// leadership the controller has not taken yet. Raft's own ticks come from
// TickRaft (clockTicks); the broker is asked to tick again when Raft's
// next tick may do something or a produce request's deadline passes
// (nextTickMs).
func (q *quorumState) tick(nowMs int64) {
	q.stepped = true
	if q.isrFailed {
		q.isrFailed, q.isrSent = false, nil
	}
	q.r.expireWaiters(nowMs)
	if st := q.node.Status(); st.Role == "leader" && q.reportedTerm < st.Term {
		q.sends = append(q.sends, q.reportQuorumLeader(st.Term))
	}
}

// nextTickMs is when the replica's broker must tick next for Raft
// (Node.TicksUntilDue: an idle follower not before its election timeout,
// an idle leader at its next heartbeat) and the produce requests waiting
// on it.
func (q *quorumState) nextTickMs() int64 {
	next := q.tickedMs + int64(q.node.TicksUntilDue())*q.r.b.cfg.TickInterval.Milliseconds()
	return min(next, q.r.waitersDeadline())
}

// metadata records the controller's view: Raft, not the controller,
// decides who leads.
func (q *quorumState) metadata(p controller.Partition, _ controller.TopicConfig) { q.r.applied = p }

func (q *quorumState) setConfig(controller.TopicConfig) error { return nil }

func (q *quorumState) retained(int) {}

func (q *quorumState) send() {}

func (q *quorumState) stop() {
	if err := q.node.Close(); err != nil {
		q.r.b.logger.Warn("closing the Raft state", "partition", q.r.tp, "err", err)
	}
}

var _ protocol = (*quorumState)(nil)

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
		r.proto.clockTicks(now.UnixMilli())
	}
}

// clockTicks gives Raft its ticks due up to nowMs, each driven as a step.
func (q *quorumState) clockTicks(nowMs int64) {
	r := q.r
	interval := r.b.cfg.TickInterval.Milliseconds()
	for n := 0; ; n++ {
		ticked := false
		if !r.drive(func(int) bool {
			switch {
			case q.tickedMs+interval > nowMs:
			case n == maxRaftCatchUp:
				q.tickedMs = slotMs(nowMs, r.b.cfg.TickInterval) // on the grid, as at open
			default:
				q.tickedMs += interval
				q.node.Tick()
				q.stepped, ticked = true, true
			}
			return false
		}) || !ticked {
			return
		}
	}
}

// ready drains the Raft node: committed entries are appended to the
// segment log (the term as the batch's leader epoch) and answer their
// produce requests, the HW moves to the committed end, leadership changes
// are reported, and the messages for other replicas are returned as a call
// to make after r.mu is released.
func (q *quorumState) ready() []func() {
	r := q.r
	if !q.stepped {
		after := q.sends
		q.sends = nil
		return after
	}
	q.stepped = false
	rd, err := q.node.Ready()
	if err != nil {
		r.b.errLog.log("Raft state", "partition", r.tp, "err", err)
		r.failWaiters(math.MinInt64, kerr.KafkaStorageError)
		after := q.sends
		q.sends = nil
		return after
	}
	if q.restored { // the log now holds the snapshot's records
		q.restored = false
		r.producers = nil
		ev := r.event(events.KindLEO)
		ev.Offsets = &events.Offsets{Base: r.log.LogStartOffset(), LEO: r.log.LogEndOffset(), HW: r.hw}
		r.emit(ev)
	}
	applied := true
	for _, e := range rd.Committed {
		if applied = q.applyCommitted(e); !applied {
			break
		}
	}
	if applied && rd.LastCommitted > 0 {
		if err := q.node.Applied(rd.LastCommitted, r.log.LogEndOffset()); err != nil {
			r.b.errLog.log("Raft state", "partition", r.tp, "err", err)
		}
	}
	var after []func()
	r.setHW(r.log.LogEndOffset())
	st := q.node.Status()
	if st.Leader != q.leader || st.Term != q.term {
		wasLeader := q.leader == r.b.cfg.ID
		q.leader, q.term = st.Leader, st.Term
		// The controller's election event tells the lab; each replica's
		// epoch cache changes when a batch of the new term is appended.
		r.b.logger.Debug("Raft leadership", "partition", r.tp, "term", st.Term, "leader", st.Leader)
		if wasLeader && st.Leader != r.b.cfg.ID {
			// Entries this leader proposed may still commit under the
			// next one, but it cannot tell: Kafka answers a request
			// whose leader moved NOT_LEADER_OR_FOLLOWER.
			r.failWaiters(math.MinInt64, kerr.NotLeaderForPartition)
		}
		if st.Leader == r.b.cfg.ID {
			after = append(after, q.reportQuorumLeader(st.Term))
		}
	}
	if len(rd.Messages) > 0 {
		msgs := rd.Messages
		after = append(after, func() { q.sendRaft(msgs) })
	}
	if f := q.proposeQuorumISR(st); f != nil {
		after = append(after, f)
	}
	after = append(after, q.sends...)
	q.sends = nil
	return after
}

// proposeQuorumISR returns the call that proposes the replicas Raft's
// leader sees as caught up (Node.CaughtUp) to the controller as the ISR,
// with AlterPartition as an ISR leader does, when they differ from the
// Metadata's: the controller owns the ISR every replica shows, and for a
// quorum partition only the Raft leader changes it. Nil when there is
// nothing to propose. Callers hold r.mu.
func (q *quorumState) proposeQuorumISR(st quorum.Status) func() {
	r := q.r
	me := r.b.cfg.ID
	if st.Role != "leader" || r.applied.Leader != me || r.applied.LeaderEpoch != int32(st.Term) {
		return nil // the controller does not name this leadership yet
	}
	isr := q.node.CaughtUp()
	if sameMembers(isr, r.applied.ISR) || q.isrSentEpoch == r.applied.PartitionEpoch && slices.Equal(isr, q.isrSent) {
		return nil
	}
	q.isrSent, q.isrSentEpoch = isr, r.applied.PartitionEpoch
	req := replication.AlterPartitionRequest{BrokerID: me, LeaderEpoch: int32(st.Term), PartitionEpoch: r.applied.PartitionEpoch, NewISR: isr}
	return func() {
		r.b.cfg.Controller.AlterPartition(r.tp.Topic, r.tp.Partition, me, r.b.BrokerEpoch(), req, func(resp replication.AlterPartitionResponse, err error) {
			if err == nil {
				err = resp.Err
			}
			if err != nil {
				r.b.logger.Debug("quorum ISR not altered", "partition", r.tp, "isr", isr, "err", err)
				r.mu.Lock()
				q.isrFailed = true // proposed again at the next tick
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
func (q *quorumState) applyCommitted(e quorum.Entry) bool {
	r := q.r
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
	info, err := r.log.AppendAsLeader(e.Batch, int32(e.Term))
	if err != nil {
		if !errors.Is(err, storage.ErrClosed) {
			r.b.errLog.log("appending a committed Raft entry", "partition", r.tp, "err", err)
		}
		return false
	}
	r.txnSeen = r.txnSeen || hasTxnBatch(e.Batch) // the lanes say the LSO (txn.go)
	r.producersAppended(pc, info)
	r.emit(r.epochEvents(info.Epochs, q.leader)...) // the first batch of a term
	ev := r.appendEvent(info, int32(e.Term))
	ev.Leader.Leader = q.leader
	r.outbox = append(r.outbox, outboxEvent{ev: ev, raw: e.Batch, late: e.Proposer != r.b.cfg.ID})
	if e.Proposer == r.b.cfg.ID {
		r.answer(e.ProposalID, ProduceResult{BaseOffset: info.FirstOffset, LastOffset: info.LastOffset})
	}
	return true
}

// reportQuorumLeader returns the call that tells the controller this
// broker leads in term, so Metadata sends clients here.
func (q *quorumState) reportQuorumLeader(term uint64) func() {
	r := q.r
	return func() {
		err := r.b.cfg.Controller.QuorumLeader(r.tp.Topic, r.tp.Partition, r.b.cfg.ID, r.b.BrokerEpoch(), int32(term))
		if err != nil {
			r.b.logger.Debug("Raft leadership not reported", "partition", r.tp, "term", term, "err", err)
			return
		}
		r.mu.Lock()
		if !r.stopped {
			q.reportedTerm = max(q.reportedTerm, term)
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
func (q *quorumState) sendRaft(msgs []raftpb.Message) {
	r, b := q.r, q.r.b
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
			q.node.ReportUnreachable(id)
		}
		// Delivery is synchronous: the follower restored it, or did not.
		for _, s := range snaps {
			q.node.ReportSnapshot(s.to, s.ok)
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
	if !b.cfg.Clock.Paused() {
		// An idle replica's broker does not wake for ticks that only
		// count (TicksUntilDue): give them before the message, so Raft
		// counts its timeouts from the right tick. (A paused lab's Step
		// gives every broker each tick in turn.)
		r.proto.clockTicks(b.nowMs())
	}
	return b.receive(tp, "quorum", m)
}

// step hands Raft a message from another replica.
func (q *quorumState) step(msg any) error {
	m, ok := msg.(raftpb.Message)
	if !ok {
		return errWrongProtocol
	}
	err := q.node.Step(m)
	q.stepped = err == nil
	return err
}

// produce proposes a batch to Raft on the leader, to wait for it to
// commit. acks=1 waits as acks=all does: under Raft the leader appends
// nothing to its segment log before a majority has the entry, so there is
// no earlier point at which the leader alone has it. acks=0 returns once
// proposed. Proposed, not yet committed when it times out: not in the
// segment log (offsets -1).
func (q *quorumState) produce(acks int16, records []byte, _ []events.Record, nowMs int64, timeout time.Duration) produced {
	r := q.r
	r.nextID++
	id := r.nextID
	if err := q.node.Propose(id, records); err != nil {
		return produced{res: r.refuseProduce(acks, err)}
	}
	q.stepped = true
	if acks == 0 {
		return produced{res: ProduceResult{BaseOffset: -1, LastOffset: -1}}
	}
	w := &produceWaiter{ch: make(chan ProduceResult, 1), acks: acks, first: -1, last: -1, deadlineMs: nowMs + timeout.Milliseconds()}
	r.waiters[id] = w
	return produced{wait: id, waiter: w}
}
