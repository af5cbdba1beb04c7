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
	res, err := r.log.Clean(r.hw)
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
	_, firstDirty := r.log.CleanerSections()
	ev.Cleaner = &events.Cleaner{FirstDirty: firstDirty, DirtyRatio: res.DirtyRatio,
		RecordsFrom: max(ev.Offsets.LEO-events.RecordWindow, ev.Offsets.Base)}
	ev.Records = r.newestRecords()
	r.emit(fact.Say(ev, "event.cleaner", strconv.FormatFloat(res.DirtyRatio, 'f', 2, 64),
		res.FirstDirty, res.CleanableEnd, dropped, res.TombstonesRemoved, res.BytesBefore, res.BytesAfter))
	return nil
}

// CleanerSections is the replica's log as the cleaner last left it: the
// clean section is [LogStart, FirstDirty), the rest is dirty.
func (x *Replica) CleanerSections() (logStart, firstDirty int64) { return x.r.log.CleanerSections() }
