package broker

import (
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/events"
	"tidemark/internal/fact"
	"tidemark/internal/kafkaname"
	"tidemark/replication"
	"tidemark/server/controller"
	"tidemark/storage"
)

// replica is this broker's copy of one partition: its log and its
// replication protocol (the contract: contract.go), which decides its HW,
// acks and truncations. mu serializes every use of proto and every write
// to log; reads of log (fetch serving) need no lock, storage allows
// concurrent readers.
type replica struct {
	b   *Broker
	tp  storage.TopicPartition
	log *storage.Log

	mu sync.Mutex
	// proto is the partition's replication protocol: isrState, quorumState
	// or pipelineState, set when the replica is made.
	proto   protocol
	applied controller.Partition // the last metadata applied
	configs map[string]string
	hw      int64
	// segmentsSaid is the log's SegmentsVersion the UI was last told of
	// (noteSegments).
	segmentsSaid uint64
	// txnSeen: the log took a transactional batch, so the replica's events
	// say its LSO; lsoSaid is the LSO last said plus one (0: none yet).
	txnSeen bool
	lsoSaid int64
	// cleanerSaid: the dirty section a compacted replica last said;
	// compacts caches its log's cleanup.policy (noteCleaner runs at every
	// unlock).
	cleanerSaid cleanerSaid
	compacts    bool
	// waiters are produce requests waiting for their protocol's answer, by
	// request id.
	waiters map[uint64]*produceWaiter
	nextID  uint64
	// newData is closed (and replaced) on every append: it wakes the
	// long-polling fetches waiting for data.
	newData chan struct{}
	// watchers are long-polling fetches of several partitions waiting for
	// this one among them (watch): wake signals each and forgets them.
	watchers []chan struct{}
	// producers is the idempotent-producer state (producers.go); nil until
	// needed, and again after a truncation, which makes it rebuild.
	producers *producerState
	// tickedMs is the last time the rules were shown (Tick).
	tickedMs int64
	// retentionCheckedMs is when tick last applied retention (lab time).
	retentionCheckedMs int64
	// flushAtMs is when flush.ms makes the oldest append since the last
	// flush due (lab time): the tick then flushes. 0 when none waits.
	flushAtMs int64
	stopped   bool
	// flushNext has drive apply flush.ms and flush.messages after
	// releasing mu (a tick asks it).
	flushNext bool
	// followerStarts are the followers' log start offsets, as their
	// fetches say (deleterecords.go: the low watermark).
	followerStarts map[int32]int64
	// outbox gathers the events made under mu; unlock publishes them after
	// releasing it, so no lock of the event bus or the lab is ever taken
	// under a replica's.
	outbox []outboxEvent
	// published is closed when the publication of the last outbox taken
	// (under mu) is done: the next one waits for it, so the replica's
	// events reach the bus in the order it made them, whichever goroutine
	// gets there first. Nil before the first.
	published chan struct{}
	// awaitingTurn, when set (tests), is called when a publication waits
	// for the one before it.
	awaitingTurn func()
}

// reportOrder numbers the events every replica makes (events.Event.Order).
var reportOrder atomic.Uint64

// outboxEvent is an event waiting for mu to be released. raw, when set, is
// a just-appended record set whose newest records are decoded into the
// event then, off the replica's lock; when late is set too (a follower's
// append) and the lab clock runs, the broker's decoder reads the replica's
// newest records back later and publishes them as a KindRecords event, off
// the fetch path.
type outboxEvent struct {
	ev   events.Event
	raw  []byte
	late bool
	// cut, when set, is a truncation's struck-out batches (truncate),
	// decoded into the event's Truncated at unlock: the records from
	// cutTo on, or all of them (cutAll).
	cut    []byte
	cutTo  int64
	cutAll bool
}

// emit queues events for publishing at unlock. Callers hold r.mu.
func (r *replica) emit(evs ...events.Event) {
	for _, ev := range evs {
		r.outbox = append(r.outbox, outboxEvent{ev: ev})
	}
}

// noteSegments puts the log's segment bases on the last queued event when
// they changed since the replica last said (a roll, a truncation, retention,
// a restart), so the lanes draw the segments' boundaries. One atomic load
// when nothing changed. Callers hold r.mu.
func (r *replica) noteSegments() {
	if r.log == nil || len(r.outbox) == 0 {
		return
	}
	if v := r.log.SegmentsVersion(); v != r.segmentsSaid {
		r.segmentsSaid = v
		r.outbox[len(r.outbox)-1].ev.Segments = r.log.SegmentBases()
	}
}

// unlock releases r.mu, then publishes the queued events and runs the
// calls that must not hold it (ISR proposals to the controller).
func (r *replica) unlock(after []func()) {
	r.noteSegments()
	r.noteTxn()
	r.noteCleaner()
	out := r.outbox
	r.outbox = nil
	if next := r.proto.nextTickMs(); next != math.MaxInt64 {
		r.b.tickBy(next) // an acks=all deadline, a follower's lag, Raft's next tick
	}
	// Take a turn to publish, in the order of the changes.
	var before, done chan struct{}
	awaiting := r.awaitingTurn
	if len(out) > 0 {
		before, done = r.published, make(chan struct{})
		r.published = done
		for i := range out {
			out[i].ev.Order = reportOrder.Add(1)
		}
	}
	r.mu.Unlock()
	if len(out) > 0 {
		if before != nil {
			select {
			case <-before:
			default:
				if awaiting != nil {
					awaiting()
				}
				<-before
			}
		}
		evs := make([]events.Event, len(out))
		late := false
		running := !r.b.cfg.Clock.Paused() // a paused lab decodes in line, so its steps replay exactly
		for i, o := range out {
			evs[i] = o.ev
			if o.cut != nil {
				evs[i].Truncated = struckOut(o.cut, o.cutTo, o.cutAll)
			}
			switch {
			case o.raw == nil:
			case o.late && running:
				late = true
			default:
				evs[i].Records = decodeForUI(o.raw)
			}
		}
		r.b.publish(evs...)
		close(done)
		if late {
			r.b.decodeLater(r)
		}
	}
	runAll(after)
}

// newReplica opens a replica's log and makes its protocol from what the
// log holds and the checkpointed HW.
func (b *Broker) newReplica(tp storage.TopicPartition, tc controller.TopicConfig, configs map[string]string, replicas []int32) (*replica, error) {
	l, err := b.dir.CreateLog(tp, tc.Storage())
	if err != nil {
		return nil, err
	}
	hw, _ := b.dir.HighWatermark(tp)
	now := b.nowMs()
	r := &replica{b: b, tp: tp, log: l, configs: configs, tickedMs: now, compacts: l.Config().Cleanup.Compacts(),
		waiters: map[uint64]*produceWaiter{}, newData: make(chan struct{}),
		applied: controller.Partition{LeaderEpoch: -1, PartitionEpoch: -1, Leader: -1}}
	switch tc.Protocol {
	case controller.ProtocolQuorum:
		q, err := b.openQuorum(r, replicas)
		if err != nil {
			return nil, err
		}
		// A quorum replica's log holds only committed entries: its HW is
		// its LEO, whatever the checkpoint says (a power loss may have
		// cut the log below it; Raft appends the rest again).
		r.proto, r.hw = q, l.LogEndOffset()
	case controller.ProtocolPipeline:
		pl := b.newPipeline(r, tc, hw)
		r.proto, r.hw = pl, pl.m.Status().HighWatermark
	default:
		state := replication.LogState{
			LogStartOffset: l.LogStartOffset(),
			LogEndOffset:   l.LogEndOffset(),
			HighWatermark:  hw,
			EpochCache:     l.Epochs(),
		}
		rp, err := replication.New(b.cfg.ID, tc.Replication(), state, now)
		if err != nil {
			return nil, err
		}
		r.proto, r.hw = &isrState{r: r, rp: rp}, rp.Status().HighWatermark
	}
	return r, nil
}

func (r *replica) event(kind events.Kind) events.Event {
	return events.Event{Kind: kind, Broker: r.b.cfg.ID, Topic: r.tp.Topic, Partition: r.tp.Partition}
}

// HighWatermark returns the replica's HW.
func (r *replica) HighWatermark() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hw
}

// apply brings the replica to the controller's view of its partition and
// topic config.
func (r *replica) apply(p controller.Partition, tc controller.TopicConfig, configs map[string]string) {
	r.drive(func(int) bool {
		if !mapsEqual(configs, r.configs) {
			if err := r.log.SetConfig(tc.Storage()); err != nil {
				r.b.logger.Error("applying topic config to the log", "partition", r.tp, "err", err)
			}
			if err := r.proto.setConfig(tc); err != nil {
				r.b.logger.Error("applying topic config to replication", "partition", r.tp, "err", err)
			}
			r.configs = configs
			r.compacts = r.log.Config().Cleanup.Compacts()
		}
		r.proto.metadata(p, tc)
		return false
	})
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func runAll(fns []func()) {
	for _, f := range fns {
		f()
	}
}

// tick shows the replica's protocol the time and runs the log's timers:
// flush.ms, retention, the cleaner. The flush runs after r.mu is released.
func (r *replica) tick(nowMs int64) {
	deleted := 0
	r.drive(func(n int) bool {
		switch n {
		case 0:
			r.proto.tick(nowMs)
			r.tickedMs = max(r.tickedMs, nowMs)
			if r.flushAtMs > nowMs {
				r.b.tickBy(r.flushAtMs)
			} else {
				r.flushAtMs = 0 // the flush after the lock flushes it
			}
			r.flushNext = true
			// Retention removes whole segments below the HW, once what the
			// tick decided is applied.
			return nowMs-r.retentionCheckedMs >= RetentionCheckInterval.Milliseconds()
		case 1:
			// The tick's slot, not the moment its timer ran (a little late,
			// by a varying amount), so the next grid tick is a second later.
			r.retentionCheckedMs = slotMs(nowMs, r.b.cfg.TickInterval)
			segs, err := r.log.ApplyRetention(r.hw)
			if err != nil && !errors.Is(err, storage.ErrClosed) {
				r.b.errLog.log("retention", "partition", r.tp, "err", err)
			}
			if deleted = len(segs); deleted > 0 {
				// The protocol learns the new log start offset under the
				// same lock, so it never offers a follower offsets the log
				// no longer has.
				r.proto.retained(deleted)
				return true
			}
		}
		r.maybeClean() // cleaner.go
		return false
	})
}

// RetentionCheckInterval is how often (lab time) each replica applies
// retention.ms and retention.bytes: Kafka's log.retention.check.interval.ms
// (5 minutes there; a second here, so a learner sees it happen). Checking
// every 50 ms tick cost an idle lab with thousands of replicas real CPU.
const RetentionCheckInterval = time.Second

// flushBy has the broker tick when flush.ms makes an append made at nowMs
// due (the tick's flushIfDue flushes it). Callers hold r.mu.
func (r *replica) flushBy(nowMs int64) {
	if ms := r.log.Config().FlushMs.Milliseconds(); ms > 0 && r.flushAtMs == 0 {
		r.flushAtMs = nowMs + ms
		r.b.tickBy(r.flushAtMs)
	}
}

// flushIfDue applies flush.ms and flush.messages outside r.mu.
func (r *replica) flushIfDue() {
	if _, err := r.log.FlushIfDue(); err != nil && !errors.Is(err, storage.ErrClosed) {
		r.b.errLog.log("flush", "partition", r.tp, "err", err)
	}
}

// setHW records a new HW the protocol decided, reports it and wakes the
// fetches waiting for it (consumers wait for the HW, not for appends).
// Callers hold r.mu.
func (r *replica) setHW(hw int64) {
	if hw == r.hw {
		return
	}
	r.hw = hw
	ev := r.event(events.KindHW)
	ev.Offsets = &events.Offsets{HW: r.hw, LEO: r.log.LogEndOffset()}
	r.emit(ev)
	r.wake()
}

func (r *replica) produceEvent(acks int16, c ProduceResult) events.Event {
	ev := r.event(events.KindAck)
	ev.Acks = acksName(acks)
	ev.Offsets = &events.Offsets{Base: c.BaseOffset, Last: c.LastOffset, HW: r.hw, LEO: r.log.LogEndOffset()}
	if c.Err != nil {
		ev.Kind = events.KindProduceError
		ev.Error = errorName(c.Err)
		ev = fact.Say(ev, "event.produce-error", ev.Error, fact.KafkaError(ev.Error))
	}
	return ev
}

func acksName(acks int16) events.Acks {
	switch acks {
	case 0:
		return events.AcksNone
	case 1:
		return events.AcksLeader
	}
	return events.AcksAll
}

// errorName is the Kafka name of an error, as Kafka says it today.
func errorName(err error) string {
	if name, ok := kafkaname.Err(err); ok {
		return name
	}
	return "UNKNOWN_SERVER_ERROR"
}

// truncate applies one truncation decision. What it removes is shown
// struck out: only its newest records, whose bytes are read here (they are
// gone after the cut) and decoded and digested at unlock, off the lock.
func (r *replica) truncate(t replication.Truncation) outboxEvent {
	o := outboxEvent{ev: r.event(events.KindTruncation), cutTo: t.ToOffset, cutAll: t.Cause == replication.TruncateFullyAndStartAt}
	leo := r.log.LogEndOffset()
	from := max(min(t.ToOffset, leo), r.log.LogStartOffset())
	// Reading a long cut whole would hold the replica up for nothing the
	// lanes can show.
	if from = max(from, leo-events.RecordWindow); leo > from {
		cut, err := r.readCut(from, leo)
		if err != nil {
			r.b.logger.Warn("reading records before truncation", "partition", r.tp, "err", err)
		}
		o.cut = cut
	}
	var err error
	r.producers = nil
	if o.cutAll {
		err = r.log.TruncateFullyAndStartAt(t.ToOffset)
	} else {
		_, err = r.log.TruncateTo(t.ToOffset)
	}
	if err != nil {
		r.b.logger.Error("truncation", "partition", r.tp, "err", err)
		o.ev.Error = err.Error()
	}
	o.ev.Offsets = &events.Offsets{Base: t.ToOffset, Last: t.FromOffset - 1, LEO: r.log.LogEndOffset(), HW: r.hw}
	// The cause as a word, translated: its name (high-watermark) read as
	// an English word beside the Chinese rule text.
	o.ev = fact.Say(o.ev, "event.truncation", fact.Word("event.word.cause."+t.Cause.String()), t.Rule, fact.Word(t.ReasonKey, t.ReasonArgs...))
	return o
}

// readCut copies the batches holding offsets from to end (at most
// RecordWindow of them), as stored. Callers hold r.mu.
func (r *replica) readCut(from, end int64) ([]byte, error) {
	var out []byte
	for n := 0; n < events.RecordWindow && from < end; n++ {
		d, err := r.log.Read(from, end, 1)
		if err != nil || d.Region.Size == 0 {
			return out, err
		}
		b, err := d.Region.ReadAll()
		if err != nil {
			return out, err
		}
		out = append(out, b...)
		from = d.NextOffset
	}
	return out, nil
}

// struckOut decodes the records a truncation removed (cut, as readCut
// copied it) for its event: those from cutTo on, or all of them (all).
func struckOut(cut []byte, cutTo int64, all bool) []events.TruncatedRecord {
	var out []events.TruncatedRecord
	for _, h := range storage.ScanBatchHeaders(cut) {
		bt, err := storage.DecodeBatch(cut[:h.Size()])
		cut = cut[h.Size():]
		if err != nil {
			continue
		}
		for _, rec := range bt.Records {
			if rec.Offset >= cutTo || all {
				out = append(out, events.TruncatedRecord{Offset: rec.Offset,
					LeaderEpoch: bt.Header.PartitionLeaderEpoch, Digest: events.Digest(rec.Key, rec.Value)})
			}
		}
	}
	return out
}

// syncEpochCache writes the rules' leader-epoch cache to the log (the rules
// own it; the log applied the same rule to what it appended, so usually
// nothing changes on disk but a new leader's epoch, which starts before it
// writes anything) and reports the entries the log did not hold.
func (r *replica) syncEpochCache(cache []replication.EpochEntry) []events.Event {
	added, err := r.log.SetLeaderEpochs(cache)
	if err != nil {
		r.b.logger.Error("writing the leader epoch cache", "partition", r.tp, "err", err)
		return nil
	}
	return r.epochEvents(added, r.applied.Leader)
}

// epochEvents reports leader-epoch cache entries the log added (an append
// reports its own, AppendInfo.Epochs; SetLeaderEpochs what it wrote), so
// the UI's cache is made of what the log did, never kept beside it.
func (r *replica) epochEvents(added []replication.EpochEntry, leader int32) []events.Event {
	var evs []events.Event
	for _, e := range added {
		ev := r.event(events.KindEpoch)
		ev.Leader = &events.Leadership{Leader: leader, LeaderEpoch: e.Epoch, StartOffset: e.StartOffset}
		evs = append(evs, ev)
	}
	return evs
}

// wake tells long-polling fetches there is new data.
func (r *replica) wake() {
	close(r.newData)
	r.newData = make(chan struct{})
	for _, w := range r.watchers {
		select {
		case w <- struct{}{}:
		default: // already signalled by another partition of its fetch
		}
	}
	clear(r.watchers)
	r.watchers = r.watchers[:0]
}

// watch has wake signalled at this replica's next append or HW move, or at
// once if there was one since seen was its newData. One channel watches
// every partition of a long-polling fetch, where a goroutine per partition
// used to forward newData (thousands a second in an idle lab with thousands
// of replicas).
func (r *replica) watch(wake chan struct{}, seen chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.newData != seen {
		select {
		case wake <- struct{}{}:
		default:
		}
		return
	}
	r.watchers = append(r.watchers, wake)
}

// unwatch forgets wake (a fetch that stopped waiting).
func (r *replica) unwatch(wake chan struct{}) {
	r.mu.Lock()
	r.watchers = slices.DeleteFunc(r.watchers, func(w chan struct{}) bool { return w == wake })
	r.mu.Unlock()
}

func (r *replica) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return
	}
	r.stopped = true
	r.failWaiters(math.MinInt64, kerr.NotLeaderForPartition)
	r.proto.stop()
	r.outbox = nil // a stopped replica reports nothing more
	r.wake()
}

// ProduceResult is the outcome of one produce to one partition, the
// replication rules' own (its ID and Acks unused here). The offsets are -1
// when nothing was appended (as in Kafka's response); a failed produce
// with offsets was appended but not acknowledged.
type ProduceResult = replication.ProduceResult

// refused is the result of a produce refused before anything was appended.
func refused(err error) ProduceResult {
	return ProduceResult{BaseOffset: -1, LastOffset: -1, Err: err}
}

// appendProduced appends a produced record set as leader at epoch, with
// r.mu held: the idempotent-producer check first (producers.go), then the
// append (records passed validateProduced, so the log does not check
// their CRC again), the flush deadline, the waiting fetches woken and the
// append event with ui, the batch's newest records. ok is false when the
// produce is answered otherwise (a refusal, or a retried batch waiting for
// its original's answer).
func (r *replica) appendProduced(acks int16, records []byte, ui []events.Record, epoch int32, now int64) (info storage.AppendInfo, answer produced, ok bool) {
	pc, err := r.checkProducers(records)
	if err == nil && pc.dup == nil {
		info, err = r.log.AppendValidatedAsLeader(records, epoch)
	}
	if err != nil {
		return info, produced{res: r.refuseProduce(acks, err)}, false
	}
	if pc.dup != nil {
		return info, produced{dup: pc.dup, epoch: epoch}, false
	}
	r.producersAppended(pc, info)
	r.txnSeen = r.txnSeen || hasTxnBatch(records)
	r.flushBy(now)
	r.wake()
	r.emit(r.epochEvents(info.Epochs, r.applied.Leader)...) // none once the leader's epoch is in the cache
	ev := r.appendEvent(info, epoch)
	for i := range ui {
		// Decoded before the append stamped the batch: the offsets were
		// relative and the epoch the producer's -1.
		ui[i].Offset += info.FirstOffset
		ui[i].LeaderEpoch = epoch
	}
	ev.Records = ui
	r.emit(ev)
	return info, produced{}, true
}

// refuseProduce reports a produce that was refused before anything was
// appended and returns the answer. Callers hold r.mu.
func (r *replica) refuseProduce(acks int16, err error) ProduceResult {
	ev := r.event(events.KindProduceError)
	ev.Acks, ev.Error = acksName(acks), errorName(err)
	r.emit(fact.Say(ev, "event.produce-error", ev.Error, fact.KafkaError(ev.Error)))
	return refused(err)
}

// appendEvent describes an append; its records are decoded at unlock.
func (r *replica) appendEvent(info storage.AppendInfo, epoch int32) events.Event {
	ev := r.event(events.KindAppend)
	ev.Offsets = &events.Offsets{Base: info.FirstOffset, Last: info.LastOffset, LEO: info.LogEndOffset, HW: r.hw}
	ev.Leader = &events.Leadership{Leader: r.applied.Leader, LeaderEpoch: epoch}
	return ev
}

// uiRecords turns the newest records of a produced batch, as validation
// decoded them, into an append event's records: offsets stay relative to the
// batch until the append assigns them, epochs are the batch's (the leader's
// epoch once stamped).
func uiRecords(h storage.BatchHeader, recs []storage.DecodedRecord) []events.Record {
	// One string holds every key and value: two allocations per produce
	// rather than one or two per record. strings.Builder hands over its
	// buffer as the string, where string(buf) would copy it once more.
	n := 0
	for _, rec := range recs {
		n += len(rec.Key) + len(rec.Value)
	}
	var sb strings.Builder
	sb.Grow(n)
	for _, rec := range recs {
		sb.Write(rec.Key)
		sb.Write(rec.Value)
	}
	all := sb.String()
	out := make([]events.Record, len(recs))
	for i, rec := range recs {
		key := all[:len(rec.Key)]
		value := all[len(key) : len(key)+len(rec.Value)]
		all = all[len(key)+len(value):]
		out[i] = events.Record{Offset: rec.Offset, LeaderEpoch: h.PartitionLeaderEpoch, Key: key, Value: value}
	}
	MarkTxn(h, out)
	return out
}

// uiTail returns the last batches of a record set that hold its newest
// RecordWindow records: all the UI shows, and all decodeForUI reads.
func uiTail(records []byte) []byte {
	hs := storage.ScanBatchHeaders(records)
	first, count := len(hs), int32(0)
	for first > 0 && count < events.RecordWindow {
		first--
		count += hs[first].NumRecords
	}
	var pos, end int64
	for i, h := range hs {
		if i < first {
			pos += h.Size()
		}
		end += h.Size()
	}
	return records[pos:end]
}

// decodeForUI decodes the newest records of a just-appended record set for
// an event: only the last batches that hold the newest RecordWindow
// records are decoded, so a large (compressed) produce costs little more
// than its header walk.
func decodeForUI(records []byte) []events.Record {
	tail := uiTail(records)
	var out []events.Record
	for _, h := range storage.ScanBatchHeaders(tail) {
		// Only what a person sees is copied: ShownBytes of each key and
		// value (RecordOf), never a whole value.
		n := len(out)
		_, err := storage.VisitBatchTail(tail[:h.Size()], events.RecordWindow, func(rec storage.DecodedRecord) {
			out = append(out, events.RecordOf(rec.Offset, h.PartitionLeaderEpoch, rec.Key, rec.Value))
		})
		MarkTxn(h, out[n:])
		tail = tail[h.Size():]
		if err != nil {
			out = out[:n]
		}
	}
	if len(out) > events.RecordWindow {
		out = out[len(out)-events.RecordWindow:]
	}
	return out
}

// Replica is a read-only view of a broker's replica for the lab and the UI.
type Replica struct{ r *replica }

// Status returns the replication rules' view (role, epochs, ISR, LEO, HW,
// followers).
func (x *Replica) Status() replication.Status {
	x.r.mu.Lock()
	defer x.r.mu.Unlock()
	return x.r.status()
}

// status is the replica's view in the replication rules' terms. Callers
// hold r.mu.
func (r *replica) status() replication.Status { return r.proto.status() }

// Log returns the replica's log.
func (x *Replica) Log() *storage.Log { return x.r.log }

// inISR reports whether id is in the applied ISR.
func (r *replica) inISR(id int32) bool { return slices.Contains(r.applied.ISR, id) }
