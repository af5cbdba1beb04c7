package broker

import (
	"errors"
	"strconv"

	"tidemark/events"
	"tidemark/internal/fact"
	"tidemark/storage"
)

// maybeClean runs the log cleaner on a replica whose topic compacts
// (cleanup.policy includes compact), as Kafka's cleaner threads visit each
// compacted log: the tick calls it at every retention check, every replica
// cleans its own log (the records the leader and followers keep are the
// same, since compaction keeps offsets), and a pass that ran is shown with
// its dirty ratio and what it dropped. Callers hold r.mu.
func (r *replica) maybeClean() []func() {
	if r.stopped || !r.log.Config().Cleanup.Compacts() {
		return nil
	}
	res, err := r.log.Clean(r.cleanableEnd())
	if err != nil {
		if !errors.Is(err, storage.ErrClosed) {
			r.b.errLog.log("log cleaner", "partition", r.tp, "err", err)
		}
		return nil
	}
	if !res.Ran {
		return nil
	}
	dropped := res.Superseded + res.TombstonesRemoved + res.KeylessRemoved
	ev := r.event(events.KindLEO)
	ev.Offsets = &events.Offsets{Base: r.log.LogStartOffset(), LEO: r.log.LogEndOffset(), HW: r.hw}
	// The lanes' sections, and the window as the pass left it (the
	// records newestRecords reads, from where it reads them).
	// The ratio after the pass: the lanes show the ratio now, the event's
	// text the one that started the pass.
	firstDirty, ratio := r.log.DirtyRatio(r.cleanableEnd())
	r.cleanerSaid = cleanerSaid{firstDirty: firstDirty, pct: int64(ratio*100 + 0.5), said: true}
	ev.Cleaner = &events.Cleaner{FirstDirty: firstDirty, DirtyRatio: ratio,
		RecordsFrom: max(ev.Offsets.LEO-events.RecordWindow, ev.Offsets.Base)}
	ev.Records = r.newestRecords()
	r.emit(fact.Say(ev, "event.cleaner", strconv.FormatFloat(res.DirtyRatio, 'f', 2, 64),
		res.FirstDirty, res.CleanableEnd, dropped, res.TombstonesRemoved, res.BytesBefore, res.BytesAfter))
	return nil
}

// cleanableEnd is where the cleaner must stop: the HW, or the first offset
// of an open transaction below it (Kafka cleans below the last stable
// offset, so that an aborted transaction's records are known before they
// are cleaned). Callers hold r.mu; the transaction index reads only the log.
func (r *replica) cleanableEnd() int64 {
	end := r.hw
	x := r.b.txnIndexOf(r)
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.update(r.log); err != nil {
		return min(end, r.log.LogStartOffset()) // unknown: clean nothing
	}
	for _, first := range x.open {
		end = min(end, first)
	}
	return end
}

// CleanerSections is the replica's log as the cleaner last left it: the
// clean section is [LogStart, FirstDirty), the rest is dirty.
func (x *Replica) CleanerSections() (logStart, firstDirty int64) { return x.r.log.CleanerSections() }

// DirtyRatio is where the replica's dirty section starts and its dirty
// ratio now, as the cleaner's next pass would see them.
func (x *Replica) DirtyRatio() (firstDirty int64, ratio float64) {
	x.r.mu.Lock()
	defer x.r.mu.Unlock()
	return x.r.log.DirtyRatio(x.r.cleanableEnd())
}

// cleanerSaid is the dirty section a compacted replica last said
// (noteCleaner): where it starts and its ratio in hundredths.
type cleanerSaid struct {
	firstDirty, pct int64
	said            bool
}

// noteCleaner puts a compacted replica's sections on the last queued event
// when its dirty ratio (to the hundredth) or its dirty section's start
// changed since it last said: the lanes show the ratio climb as segments
// fill, up to min.cleanable.dirty.ratio, and fall after a pass. Callers
// hold r.mu.
func (r *replica) noteCleaner() {
	if !r.compacts || r.log == nil || len(r.outbox) == 0 {
		return
	}
	last := &r.outbox[len(r.outbox)-1].ev
	if last.Cleaner != nil {
		return // a pass's event: it says them
	}
	first, ratio := r.log.DirtyRatio(r.cleanableEnd())
	now := cleanerSaid{firstDirty: first, pct: int64(ratio*100 + 0.5), said: true}
	if now == r.cleanerSaid {
		return
	}
	r.cleanerSaid = now
	last.Cleaner = &events.Cleaner{FirstDirty: first, DirtyRatio: ratio, RecordsFrom: -1}
}
