package broker

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/replication"
	"tidemark/storage"
)

// Idempotent producers (Kafka's ProducerStateManager): for every producer id
// seen in a partition's log, the producer epoch and the last
// maxProducerBatches batches (sequence range and offsets). The leader checks
// each produced batch against it: an exact retry of a retained batch gets its
// original offsets back without a second append; a sequence gap is
// OUT_OF_ORDER_SEQUENCE_NUMBER; an older epoch is INVALID_PRODUCER_EPOCH.
//
// The state lives with the replica and is derived from the log alone: it is
// rebuilt by scanning batch headers (at the first produce after a restart,
// after a truncation, and for the batches a follower replicated before it
// became leader), so a new leader has the same state the old one had for
// every batch they share.

// maxProducerBatches is how many batches per producer are kept for
// duplicate detection: Kafka's five in-flight requests per connection.
const maxProducerBatches = 5

// producerRebuildBytes bounds the scan that rebuilds the state from scratch:
// only the newest bytes of the log are read. A producer last seen earlier has
// no state, and Kafka accepts any sequence from a producer without state.
const producerRebuildBytes = 16 << 20

// producerState is one replica's idempotent-producer state. Guarded by
// replica.mu.
type producerState struct {
	producers map[int64]*producerEntry
	// end is the log offset up to which batches were applied.
	end int64
}

type producerEntry struct {
	epoch   int16
	batches []producerBatch // oldest first
}

// producerBatch is one batch's producer fields, and its offsets once known.
type producerBatch struct {
	producerID  int64
	epoch       int16
	firstSeq    int32
	lastSeq     int32
	records     int32
	firstOffset int64
	lastOffset  int64
	// control is a transaction marker (txn.go): it has no sequence to
	// check or keep, but its epoch is the producer's from then on.
	control bool
}

// Offsets of the producer fields in a RecordBatch v2 header.
const (
	hdrLength     = 8
	hdrProducerID = 43
	hdrEpoch      = 51
	hdrBaseSeq    = 53
	hdrRecords    = 57
	hdrSize       = 61
)

// producerBatches reads the producer fields of each batch of a record set
// without checking CRCs (the append checks those); ok is false if the bytes
// do not split into batches, which the append then reports.
func producerBatches(records []byte) (out []producerBatch, ok bool) {
	be := binary.BigEndian
	for len(records) > 0 {
		if len(records) < hdrSize {
			return nil, false
		}
		size := int64(int32(be.Uint32(records[hdrLength:]))) + 12
		if size < hdrSize || size > int64(len(records)) {
			return nil, false
		}
		b := producerBatch{
			producerID:  int64(be.Uint64(records[hdrProducerID:])),
			epoch:       int16(be.Uint16(records[hdrEpoch:])),
			firstSeq:    int32(be.Uint32(records[hdrBaseSeq:])),
			records:     int32(be.Uint32(records[hdrRecords:])),
			firstOffset: int64(be.Uint64(records)),
		}
		b.control = be.Uint16(records[21:])&attrControl != 0
		// Kafka's lastSequence: base sequence + last offset delta, which
		// a batch the log cleaner emptied keeps (its record count is 0).
		b.lastSeq = seqAdd(b.firstSeq, int32(be.Uint32(records[23:])))
		b.lastOffset = b.firstOffset + int64(int32(be.Uint32(records[23:])))
		out = append(out, b)
		records = records[size:]
	}
	return out, true
}

// seqAdd adds to a sequence number, wrapping past MaxInt32 to 0 as Kafka's
// sequences do.
func seqAdd(seq, n int32) int32 {
	return int32((int64(seq) + int64(n)) % (math.MaxInt32 + 1))
}

// apply records a batch appended to the log (offsets known).
func (ps *producerState) apply(b producerBatch) {
	ps.end = max(ps.end, b.lastOffset+1)
	if b.producerID < 0 {
		return
	}
	e := ps.producers[b.producerID]
	if b.control {
		// A marker of a newer epoch (the coordinator fenced the producer
		// and aborted its transaction) makes that epoch current, with no
		// batches: the fenced instance's next batch is
		// INVALID_PRODUCER_EPOCH, as after Kafka's appendEndTxnMarker.
		if e == nil || b.epoch > e.epoch {
			ps.producers[b.producerID] = &producerEntry{epoch: b.epoch}
		}
		return
	}
	if e == nil || b.epoch > e.epoch {
		e = &producerEntry{epoch: b.epoch}
		ps.producers[b.producerID] = e
	} else if b.epoch < e.epoch {
		return // a fenced producer's batch replicated late: it changes nothing
	}
	e.batches = append(e.batches, b)
	if len(e.batches) > maxProducerBatches {
		e.batches = e.batches[len(e.batches)-maxProducerBatches:]
	}
}

// scan applies the batches of [from, to) in the log.
func (ps *producerState) scan(l *storage.Log, from, to int64) error {
	for from < to {
		d, err := l.Read(from, to, 1<<20)
		if err != nil {
			return err
		}
		if d.Region.Size == 0 {
			break
		}
		buf, err := d.Region.ReadAll()
		if err != nil {
			return err
		}
		bs, ok := producerBatches(buf)
		if !ok {
			return fmt.Errorf("%w: unreadable batch headers at offset %d", kerr.CorruptMessage, from)
		}
		for _, b := range bs {
			ps.apply(b)
		}
		from = d.NextOffset
	}
	ps.end = max(ps.end, to)
	return nil
}

// rebuildStart is where a full rebuild starts reading: the offset about
// producerRebuildBytes before the log's end.
func rebuildStart(l *storage.Log) int64 {
	segs, err := l.Segments()
	if err != nil || len(segs) == 0 {
		return l.LogStartOffset()
	}
	var tail int64
	for i := len(segs) - 1; i >= 0; i-- {
		s := segs[i]
		if tail+s.LogBytes <= producerRebuildBytes {
			tail += s.LogBytes
			if i == 0 {
				return max(l.LogStartOffset(), s.BaseOffset)
			}
			continue
		}
		// Start inside this segment, at the first index entry within reach.
		cut := s.LogBytes - (producerRebuildBytes - tail)
		for _, e := range s.Index {
			if int64(e.Position) >= cut {
				return max(l.LogStartOffset(), s.BaseOffset+int64(e.RelativeOffset))
			}
		}
		return max(l.LogStartOffset(), s.NextOffset)
	}
	return l.LogStartOffset()
}

// producerStateLocked brings the state up to the log's end and returns it:
// rebuilt from the log's tail the first time or after a truncation, caught
// up over batches appended as a follower otherwise. Callers hold r.mu.
func (r *replica) producerStateLocked() (*producerState, error) {
	leo := r.log.LogEndOffset()
	if r.producers != nil && r.producers.end > leo {
		r.producers = nil // the log was cut back
	}
	if r.producers == nil {
		start := rebuildStart(r.log)
		ps := &producerState{producers: map[int64]*producerEntry{}, end: start}
		if err := ps.scan(r.log, start, leo); err != nil {
			return nil, err
		}
		r.producers = ps
		return ps, nil
	}
	if r.producers.end < leo {
		if err := r.producers.scan(r.log, r.producers.end, leo); err != nil {
			r.producers = nil
			return nil, err
		}
	}
	return r.producers, nil
}

// producerCheck is the verdict on a record set about to be appended.
type producerCheck struct {
	batches []producerBatch
	// dup is set when the record set is one batch that is an exact retry of
	// a retained batch: it is not appended again and gets dup's offsets.
	dup *producerBatch
}

// checkProducers checks the producer fields of a record set against the
// state, as Kafka's leader does before appending. Callers hold r.mu.
func (r *replica) checkProducers(records []byte) (producerCheck, error) {
	bs, ok := producerBatches(records)
	if !ok {
		return producerCheck{}, nil // the append reports the malformed set
	}
	pc := producerCheck{batches: bs}
	idempotent := false
	for _, b := range bs {
		idempotent = idempotent || b.producerID >= 0
	}
	if !idempotent {
		return pc, nil
	}
	ps, err := r.producerStateLocked()
	if err != nil {
		return pc, err
	}
	// The batches of one request are checked in order, each against the
	// state as the earlier ones would leave it.
	next := map[int64]producerBatch{}
	for _, b := range bs {
		if b.producerID < 0 || b.control {
			continue
		}
		e := ps.producers[b.producerID]
		if e == nil {
			next[b.producerID] = b
			continue // no state: Kafka accepts any sequence
		}
		switch {
		case b.epoch < e.epoch:
			return pc, fmt.Errorf("%w: producer %d epoch %d is older than the current epoch %d", kerr.InvalidProducerEpoch, b.producerID, b.epoch, e.epoch)
		case b.epoch > e.epoch:
			if b.firstSeq != 0 {
				return pc, fmt.Errorf("%w: producer %d starts epoch %d at sequence %d, not 0", kerr.OutOfOrderSequenceNumber, b.producerID, b.epoch, b.firstSeq)
			}
			next[b.producerID] = b
			continue
		}
		for i := range e.batches {
			if o := e.batches[i]; o.firstSeq == b.firstSeq && o.lastSeq == b.lastSeq {
				if len(bs) == 1 {
					pc.dup = &o
					return pc, nil
				}
				return pc, fmt.Errorf("%w: producer %d sequence %d..%d is already in the log", kerr.DuplicateSequenceNumber, b.producerID, b.firstSeq, b.lastSeq)
			}
		}
		// An epoch a marker opened has no batches yet: it starts at 0.
		want := int32(0)
		if n := len(e.batches); n > 0 {
			want = seqAdd(e.batches[n-1].lastSeq, 1)
		}
		if prev, ok := next[b.producerID]; ok {
			want = seqAdd(prev.lastSeq, 1)
		}
		if b.firstSeq != want {
			return pc, fmt.Errorf("%w: producer %d sent sequence %d, expected %d", kerr.OutOfOrderSequenceNumber, b.producerID, b.firstSeq, want)
		}
		next[b.producerID] = b
	}
	return pc, nil
}

// producersAppended records the appended batches in the state, with the
// offsets the leader gave them. Callers hold r.mu.
func (r *replica) producersAppended(pc producerCheck, info storage.AppendInfo) {
	if r.producers == nil || r.producers.end != info.FirstOffset {
		return // no state yet (no idempotent producer so far) or behind: rebuilt when needed
	}
	off := info.FirstOffset
	for _, b := range pc.batches {
		b.firstOffset = off
		b.lastOffset = off + int64(b.records) - 1
		off = b.lastOffset + 1
		r.producers.apply(b)
	}
}

// awaitDuplicate answers an exact retry of a batch already in the log with
// its original offsets, once acks allows: for acks=all, when the HW has
// passed it (the original append may still be waiting for followers). The
// answer is success only while this replica still leads in epoch: after a
// leadership change the original may have been truncated and its offsets
// reused, so the producer must retry against the new leader.
func (r *replica) awaitDuplicate(ctx context.Context, acks int16, epoch int32, dup producerBatch, timeout time.Duration) ProduceResult {
	res := ProduceResult{BaseOffset: dup.firstOffset, LastOffset: dup.lastOffset}
	if acks != -1 {
		return res
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		r.mu.Lock()
		hw, stopped, wake := r.hw, r.stopped, r.newData
		st := r.status()
		r.mu.Unlock()
		switch {
		case stopped || st.Role != replication.RoleLeader || st.LeaderEpoch != epoch:
			res.Err = kerr.NotLeaderForPartition
			return res
		case hw > dup.lastOffset:
			return res
		}
		select { // newData is closed on every append and HW change
		case <-wake:
		case <-ctx.Done():
			res.Err = kerr.RequestTimedOut
			return res
		case <-t.C:
			res.Err = kerr.RequestTimedOut
			return res
		}
	}
}
