package broker

import (
	"tidemark/events"
)

// The broker's decoder: while the lab clock runs, the values of a
// follower's appended records are decoded here, after the append event,
// instead of on the fetcher's goroutine, where decompressing a large batch
// delayed the next fetch and with it every acks=all answer. What it holds is
// bounded: past decodeQueueBytes waiting, an append's values are dropped
// (the lanes show its offsets without values).

// decodeQueueBytes bounds the record bytes waiting to be decoded.
const decodeQueueBytes = 8 << 20

// decodeJob is one append whose newest records are to be decoded.
type decodeJob struct {
	ev   events.Event
	tail []byte // a copy of the batches that hold the newest records
}

// decodeLater queues the values of the append ev (raw is its record set)
// for the decoder; when the queue is full they are dropped.
func (b *Broker) decodeLater(ev events.Event, raw []byte) {
	tail := uiTail(raw)
	b.decodeMu.Lock()
	full := b.decodeBytes+int64(len(tail)) > decodeQueueBytes || b.stoppedDecoding
	if !full {
		b.decodeBytes += int64(len(tail))
	}
	b.decodeMu.Unlock()
	if full {
		return
	}
	select {
	case b.decodes <- decodeJob{ev: ev, tail: append([]byte(nil), tail...)}:
	default:
		b.decodeMu.Lock()
		b.decodeBytes -= int64(len(tail))
		b.decodeMu.Unlock()
	}
}

// decodeLoop decodes queued appends in order and publishes their values.
func (b *Broker) decodeLoop() {
	defer b.wg.Done()
	for {
		select {
		case <-b.ctx.Done():
			b.decodeMu.Lock()
			b.stoppedDecoding = true
			b.decodeMu.Unlock()
			return
		case job := <-b.decodes:
			recs := decodeForUI(job.tail)
			b.decodeMu.Lock()
			b.decodeBytes -= int64(len(job.tail))
			b.decodeMu.Unlock()
			if len(recs) == 0 {
				continue
			}
			ev := events.Event{Kind: events.KindRecords, Broker: job.ev.Broker, Topic: job.ev.Topic, Partition: job.ev.Partition,
				Records: recs, Offsets: &events.Offsets{Base: recs[0].Offset, Last: recs[len(recs)-1].Offset}}
			b.publish(ev)
		}
	}
}
