package broker

import (
	"errors"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/events"
	"tidemark/internal/fact"
	"tidemark/replication"
	"tidemark/server/controller"
	"tidemark/storage"
)

// isrState is a replication.protocol=isr replica's side of the contract:
// Kafka's replication, decided by the pure replication rules
// (replication.Partition), which followers drive by fetching. Guarded by
// replica.mu.
type isrState struct {
	r  *replica
	rp *replication.Partition
	// pendingAlter is an ISR proposal the controller did not receive (the
	// link was cut); it is sent again at the next tick (sendAlterPartition
	// asks for one TickInterval later).
	pendingAlter *replication.AlterPartitionRequest
	// lastFetchErr is the error of the last fetch response (a follower), so a
	// repeated one is reported once.
	lastFetchErr string
	// sends are calls an input queued for after r.mu (ready returns them).
	sends []func()
	// fetch is what a fetch response's phases keep between them (fetched).
	fetch fetchPhases
}

// fetchPhases is what fetched keeps of a fetch response between its
// phases.
type fetchPhases struct {
	res      replication.FetchResult
	records  []byte
	cutTo    int64
	fetchAt  int
	appended []replication.Batch
	last     int64
	hwBefore int64
}

// advance shows the rules the time before an input that is stamped with it.
// It does nothing while the clock stands still since they last saw it: the
// time-driven decisions (ISR shrink, acks=all timeouts) belong to ticks, so a
// paused lab takes none of them outside a Step, and a follower just added to
// the ISR is not judged again by the very fetch that follows.
func (s *isrState) advance(nowMs int64) {
	if r := s.r; nowMs > r.tickedMs {
		s.rp.Tick(nowMs)
		r.tickedMs = nowMs
	}
}

func (s *isrState) status() replication.Status { return s.rp.Status() }

func (s *isrState) nextTickMs() int64 { return s.rp.NextTickMs() }

func (s *isrState) stop() {}

func (s *isrState) send() {}

func (s *isrState) clockTicks(int64) {}

func (s *isrState) step(any) error { return errWrongProtocol }

func (s *isrState) setConfig(tc controller.TopicConfig) error {
	return s.rp.SetConfig(tc.Replication())
}

func (s *isrState) metadata(p controller.Partition, _ controller.TopicConfig) {
	r := s.r
	if p.LeaderEpoch == r.applied.LeaderEpoch && p.PartitionEpoch == r.applied.PartitionEpoch {
		return
	}
	if p.LeaderEpoch != r.applied.LeaderEpoch {
		// A new leader knows nothing of its followers' log starts yet, as
		// Kafka resets its remote replicas' state.
		r.followerStarts = nil
	}
	s.advance(r.b.nowMs())
	if err := s.rp.LeaderAndIsr(p.State()); err != nil {
		r.b.logger.Warn("LeaderAndIsr refused", "partition", r.tp, "err", err)
		return
	}
	r.applied = p
	// Newer state supersedes a proposal in flight, but state the rules
	// already had (the partition epoch an AlterPartition answer brought)
	// leaves theirs in flight: its retry must stay, or the proposal waits
	// for an answer forever and the ISR never changes again.
	if s.pendingAlter != nil && s.rp.Status().PendingISR == nil {
		s.pendingAlter = nil
	}
}

func (s *isrState) tick(nowMs int64) {
	s.rp.Tick(nowMs)
	if s.pendingAlter != nil {
		req := *s.pendingAlter
		s.pendingAlter = nil
		s.sends = append(s.sends, func() { s.r.b.sendAlterPartition(s, req) })
	}
}

// retained tells the rules the new log start offset under the same lock,
// so they never offer a follower offsets the log no longer has.
func (s *isrState) retained(deleted int) {
	r := s.r
	s.rp.LogStartOffsetAdvanced(r.log.LogStartOffset())
	ev := r.event(events.KindLEO)
	ev.Offsets = &events.Offsets{Base: r.log.LogStartOffset(), LEO: r.log.LogEndOffset(), HW: r.hw}
	r.emit(fact.Say(ev, "event.retention", fact.Count("event.word.whole-segments", deleted), r.log.LogStartOffset()))
}

// ready acts on the replication rules' decisions in their required
// order: truncations and the epoch cache are persisted first, then the HW,
// then completed produce requests are answered. What the log really did is
// reported back (a cut inside a batch ends lower), and the rules' answer to
// that is processed in turn. Sending an ISR proposal to the controller is
// returned as a call to make after r.mu is released.
func (s *isrState) ready() []func() {
	r := s.r
	var after []func()
	for range 4 { // a report back settles in one more round
		rd := s.rp.Ready()
		if rd.Empty() {
			break
		}
		for _, t := range rd.Truncations {
			r.outbox = append(r.outbox, r.truncate(t))
			s.rp.LogTruncated(r.log.LogEndOffset())
		}
		if rd.EpochCacheChanged {
			r.emit(r.syncEpochCache(rd.EpochCache)...)
		}
		if rd.HighWatermarkChanged {
			r.setHW(rd.HighWatermark)
		}
		if rd.AlterPartition != nil {
			req := *rd.AlterPartition
			after = append(after, func() { r.b.sendAlterPartition(s, req) })
		}
		for _, c := range rd.Completed {
			res := ProduceResult{BaseOffset: c.BaseOffset, LastOffset: c.LastOffset, Err: c.Err}
			if !r.answer(c.ID, res) {
				r.emit(r.produceEvent(c.Acks, res))
			}
		}
	}
	after = append(after, s.sends...)
	s.sends = nil
	return after
}

// produce appends as the ISR leader; the rules answer it (acks=0 and
// acks=1 at once, acks=all once the HW passes it or its deadline does).
func (s *isrState) produce(acks int16, records []byte, ui []events.Record, now int64, timeout time.Duration) produced {
	r := s.r
	s.advance(now)
	epoch, err := s.rp.CheckProduce(acks)
	if err != nil {
		return produced{res: r.refuseProduce(acks, err)}
	}
	info, p, ok := r.appendProduced(acks, records, ui, epoch, now)
	if !ok {
		return p
	}
	w := r.wait(acks, info.FirstOffset, info.LastOffset, 0)
	err = s.rp.ProduceAppended(replication.ProduceRequest{ID: w.wait, Acks: acks,
		Batch:      replication.Batch{BaseOffset: info.FirstOffset, LastOffset: info.LastOffset, Epoch: epoch},
		DeadlineMs: now + timeout.Milliseconds()})
	if err != nil {
		// The rules refused an append the log made: the runtime and the
		// rules disagree, which must never be hidden.
		r.b.logger.Error("append not accepted by the replication rules", "partition", r.tp, "err", err)
		delete(r.waiters, w.wait)
		return produced{res: ProduceResult{BaseOffset: info.FirstOffset, LastOffset: info.LastOffset, Err: err}}
	}
	return w
}

// fetchesFrom is the leader a follower fetches from.
func (s *isrState) fetchesFrom() (int32, bool) {
	st := s.rp.Status()
	return st.Leader, st.Role == replication.RoleFollower && st.Leader >= 0 && st.Leader != s.r.b.cfg.ID
}

// followerFetch lets the rules see a follower's fetch: its fetch offset
// becomes its LEO on the leader, which may move the HW.
func (s *isrState) followerFetch(req replication.FetchRequest, nowMs int64) (replication.FetchResult, bool) {
	s.advance(nowMs)
	return s.rp.FollowerFetch(req), true
}

func (s *isrState) nextFetch(leader int32) (replication.FetchRequest, bool) {
	fr, ok := s.rp.NextFetch()
	return fr, ok && s.rp.Leader() == leader
}

// fetched appends what the leader sent and lets the rules see the answer
// (HW, diverging epoch, errors). A response to a fetch made in another
// state (this replica became leader, or a new leader epoch began, or its
// log moved meanwhile) is dropped whole, before anything is appended. If
// the leader's first batch starts inside the log's last batch (the two
// logs cut batches differently after a divergence), the rules truncate to
// where it starts first, and the append follows once that is applied.
func (s *isrState) fetched(a fetchAnswer, n int) (more bool) {
	r, b, p, f := s.r, s.r.b, a.p, &s.fetch
	switch n {
	case 0:
		*f = fetchPhases{appended: f.appended[:0]}
		s.advance(b.nowMs())
		if !s.rp.CurrentFetch(a.sent) {
			b.logger.Debug("dropping a fetch response made in an older state", "partition", r.tp, "leader", a.leader,
				"epoch", a.sent.CurrentLeaderEpoch, "fetchOffset", a.sent.FetchOffset)
			return false
		}
		f.res = replication.FetchResult{HighWatermark: p.HighWatermark, LogStartOffset: p.LogStartOffset, LogEndOffset: a.leaderLEO}
		if p.ErrorCode != 0 {
			f.res.Err = kerr.ErrorForCode(p.ErrorCode)
		}
		if p.DivergingEpoch.Epoch >= 0 {
			f.res.DivergingEpoch = &replication.EpochEndOffset{Epoch: p.DivergingEpoch.Epoch, EndOffset: p.DivergingEpoch.EndOffset}
		}
		f.fetchAt = len(r.outbox) // the fetch event goes before what it caused
		f.cutTo = -1
		if f.res.Err == nil && f.res.DivergingEpoch == nil && len(p.RecordBatches) > 0 {
			f.records, f.cutTo = s.prepareFollowerAppend(p.RecordBatches)
		}
		return true
	case 1: // the cut, if any, is applied: append
		f.last = a.sent.FetchOffset - 1
		if f.cutTo >= 0 && r.log.LogEndOffset() != f.cutTo {
			f.records = nil // the cut ended elsewhere: fetch again from the new LEO
		}
		if len(f.records) > 0 {
			info, err := r.log.AppendAsFollower(f.records)
			if err != nil {
				// Nothing was appended (storage rolls a failed append back);
				// the rules' LEO stays where the log's is.
				b.logger.Warn("follower append", "partition", r.tp, "err", err)
			} else {
				hs := storage.ScanBatchHeaders(f.records) // AppendAsFollower checked them
				for _, h := range hs {
					r.txnSeen = r.txnSeen || h.Attributes&attrTransactional != 0
					f.appended = append(f.appended, replication.Batch{BaseOffset: h.BaseOffset, LastOffset: h.LastOffset(), Epoch: h.PartitionLeaderEpoch})
				}
				f.last = info.LastOffset
				r.flushBy(b.nowMs())
				r.outbox = append(r.outbox, outboxEvent{ev: r.appendEvent(info, hs[len(hs)-1].PartitionLeaderEpoch), raw: f.records, late: true})
				r.emit(r.epochEvents(info.Epochs, r.applied.Leader)...)
			}
		}
		f.hwBefore = r.hw
		if err := s.rp.HandleFetchResponse(f.res, f.appended); err != nil {
			b.logger.Error("fetch response not accepted by the replication rules", "partition", r.tp, "err", err)
		}
		return true
	}
	s.followLeaderLogStart(p.LogStartOffset)
	// Report a fetch when it changed something or was stepped by hand; a
	// repeated error is reported once, not at every retry.
	res := f.res
	errName := ""
	if res.Err != nil {
		errName = errorName(res.Err)
	}
	newErr := errName != s.lastFetchErr
	s.lastFetchErr = errName
	if a.stepped || len(f.appended) > 0 || (res.Err != nil && newErr) || res.DivergingEpoch != nil || r.hw != f.hwBefore {
		ev := r.event(events.KindFetch)
		ev.Leader = &events.Leadership{Leader: a.leader, LeaderEpoch: a.sent.CurrentLeaderEpoch}
		ev.Offsets = &events.Offsets{Base: a.sent.FetchOffset, Last: f.last, HW: p.HighWatermark, LEO: r.log.LogEndOffset()}
		if res.Err != nil {
			ev.Error = errorName(res.Err)
		}
		if res.DivergingEpoch != nil {
			ev = fact.Say(ev, "event.fetch.diverging", res.DivergingEpoch.Epoch, res.DivergingEpoch.EndOffset)
		}
		r.outbox = slices.Insert(r.outbox, f.fetchAt, outboxEvent{ev: ev})
	}
	f.records = nil // not kept past the response
	return false
}

// prepareFollowerAppend drops batches the log already holds and, if the
// leader's first batch starts inside the log's last batch, has the rules
// truncate to where it starts (applied with Ready before the append):
// cutTo is that offset, -1 when there is no cut.
func (s *isrState) prepareFollowerAppend(records []byte) (_ []byte, cutTo int64) {
	r := s.r
	// Headers only: AppendAsFollower checks every batch's CRC. A partial
	// batch at the end (a size-capped response) is dropped, as Kafka does.
	hs := storage.ScanBatchHeaders(records)
	var whole int64
	for _, h := range hs {
		whole += h.Size()
	}
	records = records[:whole]
	leo := r.log.LogEndOffset()
	for len(hs) > 0 && hs[0].LastOffset() < leo {
		records = records[hs[0].Size():]
		hs = hs[1:]
	}
	if len(hs) == 0 || hs[0].BaseOffset >= leo {
		return records, -1
	}
	if err := s.rp.TruncateBeforeAppend(hs[0].BaseOffset); err != nil {
		return nil, -1
	}
	return records, hs[0].BaseOffset
}

// altered hands the controller's answer to proposal req to the rules;
// err: the proposal did not get there (or its answer was lost), and is
// sent again at the next tick.
func (s *isrState) altered(req replication.AlterPartitionRequest, resp replication.AlterPartitionResponse, err error) {
	b := s.r.b
	if err != nil {
		b.logger.Debug("AlterPartition not delivered", "partition", s.r.tp, "err", err)
		if s.pendingAlter == nil || s.pendingAlter.Proposal < req.Proposal {
			s.pendingAlter = &req
		}
		b.tickBy(b.nowMs() + b.cfg.TickInterval.Milliseconds()) // a tick retries it
		return
	}
	if s.pendingAlter != nil && s.pendingAlter.Proposal <= req.Proposal {
		s.pendingAlter = nil
	}
	if err := s.rp.AlterPartitionResponse(req, resp); err != nil && !errors.Is(err, kerr.InvalidRequest) {
		b.logger.Debug("AlterPartition response", "partition", s.r.tp, "err", err)
	}
}

// deleteRecords moves the leader's log start offset (DeleteRecords); the
// followers follow it at their next fetch.
func (s *isrState) deleteRecords(offset int64) (int64, error) {
	r := s.r
	if offset == -1 {
		offset = r.hw
	}
	if offset < 0 || offset > r.hw {
		return -1, kerr.OffsetOutOfRange
	}
	before := r.log.LogStartOffset()
	err := r.log.SetLogStartOffset(offset, r.hw)
	if err == nil && r.log.LogStartOffset() > before {
		s.logStartMoved("event.delete-records", r.log.LogStartOffset())
	}
	return offset, err
}

// logStartMoved tells the rules and the UI that the log start offset moved
// to start (DeleteRecords on the leader, or a follower following it).
func (s *isrState) logStartMoved(key string, start int64) {
	r := s.r
	s.rp.LogStartOffsetAdvanced(start)
	ev := r.event(events.KindLEO)
	ev.Offsets = &events.Offsets{Base: start, LEO: r.log.LogEndOffset(), HW: r.hw}
	r.emit(fact.Say(ev, key, start))
}

// followLeaderLogStart moves a follower's log start offset up to the
// leader's, as Kafka's fetcher does after each fetch response (bounded by
// the follower's HW): DeleteRecords on the leader reaches every replica.
func (s *isrState) followLeaderLogStart(leaderStart int64) {
	r := s.r
	to := min(leaderStart, r.hw)
	if to <= r.log.LogStartOffset() {
		return
	}
	if err := r.log.SetLogStartOffset(to, r.hw); err != nil {
		if !errors.Is(err, storage.ErrClosed) {
			r.b.errLog.log("following the leader's log start offset", "partition", r.tp, "err", err)
		}
		return
	}
	s.logStartMoved("event.log-start.followed", r.log.LogStartOffset())
}

var _ protocol = (*isrState)(nil)
