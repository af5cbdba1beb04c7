package broker

import (
	"time"

	"tidemark/events"
)

// The broker's decoder: while the lab clock runs, the values of a
// follower's newest records are decoded here instead of on the fetcher's
// goroutine, where decompressing a large batch delayed the next fetch and
// with it every acks=all answer. A follower's append only marks its replica;
// each pass of the decoder reads every marked replica's newest
// events.RecordWindow records back from its log (all the lanes show) and
// publishes them as one KindRecords event, then waits decodeInterval. A
// follower appending hundreds of batches a second is decoded a few times a
// second, not once per batch: decompressing a 1 MiB batch for its newest
// records took as long as the produce's whole turn on the leader, and the
// values of records that left the window before a pass were never shown.
// What waits is one mark per replica.

// decodeInterval is the least time between two passes of the decoder.
const decodeInterval = 100 * time.Millisecond

// decodeLater marks r's newest records for the decoder's next pass.
func (b *Broker) decodeLater(r *replica) {
	b.decodeMu.Lock()
	if b.decodePending == nil {
		b.decodePending = map[*replica]struct{}{}
	}
	b.decodePending[r] = struct{}{}
	b.decodeMu.Unlock()
	select {
	case b.decodeWake <- struct{}{}:
	default: // a pass is already due
	}
}

// decodeLoop publishes the newest values of each marked replica, at most
// once per decodeInterval.
func (b *Broker) decodeLoop() {
	defer b.wg.Done()
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-b.decodeWake:
		}
		b.decodeMu.Lock()
		pending := b.decodePending
		b.decodePending = nil
		b.decodeMu.Unlock()
		for r := range pending {
			recs := r.newestRecords()
			if len(recs) == 0 {
				continue
			}
			ev := r.event(events.KindRecords)
			ev.Records, ev.Offsets = recs, &events.Offsets{Base: recs[0].Offset, Last: recs[len(recs)-1].Offset}
			b.publish(ev)
		}
		sleepCtx(b.ctx, decodeInterval)
	}
}

// newestRecords reads the newest events.RecordWindow records back from r's
// log; none if the log changes under it (a truncation, a closed file).
func (r *replica) newestRecords() []events.Record {
	leo := r.log.LogEndOffset()
	var raw []byte
	for at := max(leo-events.RecordWindow, r.log.LogStartOffset()); at < leo; {
		d, err := r.log.Read(at, leo, decodeReadBytes)
		if err != nil || d.NextOffset <= at {
			return nil
		}
		b, err := d.Region.ReadAll()
		if err != nil {
			return nil
		}
		raw, at = append(raw, b...), d.NextOffset
	}
	return decodeForUI(raw)
}

// decodeReadBytes bounds one read of newestRecords: a window of small
// batches takes one read, and a larger batch is read whole anyway.
const decodeReadBytes = 1 << 20
