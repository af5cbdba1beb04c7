package lessons

import (
	"fmt"
	"time"

	"tidemark/storage"
)

// The cluster's part of the vocabulary for record timestamps: a producer
// that stamps its records with a clock of its own (CreateTime, the
// producer's), and queries that read a record's timestamp as a consumer
// does and the batch's timestamp type (message.timestamp.type).

// timestampOf reads a produce's timestamp=D option: the producer stamps
// its records D from the lab clock's now (timestamp=-48h: a producer whose
// clock is two days behind); 0 (stamp now) without it.
func timestampOf(e *Env, opt map[string]string) (int64, error) {
	v, ok := opt["timestamp"]
	if !ok {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < -24*365*time.Hour || d > 24*365*time.Hour {
		return 0, fmt.Errorf("timestamp=%s: a duration from the lab clock's now (-48h, 10m), at most a year", v)
	}
	return e.c.Clock().Now().Add(d).UnixMilli(), nil
}

// produceAt is Produce with the record's timestamp ts (0: the lab clock's
// now, as Produce stamps it).
func (e *Env) produceAt(topic, value string, acks int16, ts int64) (int64, error) {
	if ts == 0 {
		return e.Produce(topic, value, acks)
	}
	leader := e.Meta(topic).Leader
	b := e.c.Broker(leader)
	if b == nil {
		return -1, fmt.Errorf("produce %s: partition 0 of %s has no running leader (%d)", value, topic, leader)
	}
	res := b.Produce(e.ctx, topic, 0, acks, storage.NewBatch([]storage.Record{{Value: []byte(value), Timestamp: ts}}), 30*time.Second)
	e.wait()
	return res.BaseOffset, res.Err
}

// timestampTypeAttr is a batch's timestamp-type attribute bit (Kafka's
// RecordBatch bit 3: LogAppendTime).
const timestampTypeAttr = 0x08

func addTimeVocab() {
	// record-time BROKER TOPIC OFFSET NAME: the timestamp a consumer reads
	// for the record at OFFSET (under LogAppendTime the batch's, which the
	// broker set), less the time marked NAME, as a duration (-48h0m0s).
	queries["record-time"] = querySpec{"broker topic int word", func(e *Env, a []string) (Value, error) {
		mark, ok := e.times[a[3]]
		if !ok {
			return Value{}, fmt.Errorf("record-time: no time %s (do mark-time %s first)", a[3], a[3])
		}
		l := e.Log(id(a[0]), a[1])
		if l == nil {
			return Value{}, fmt.Errorf("record-time: broker %s has no log of %s", a[0], a[1])
		}
		off := int64(id(a[2]))
		bs, err := l.ReadBatches(off, off+1, 1<<20)
		if err != nil {
			return Value{}, err
		}
		for _, b := range bs {
			for _, r := range b.Records {
				if r.Offset == off {
					return str((time.Duration(r.Timestamp-mark) * time.Millisecond).String()), nil
				}
			}
		}
		return Value{}, fmt.Errorf("record-time: no record at offset %d on broker %s", off, a[0])
	}}
	// timestamp-type BROKER TOPIC OFFSET: the timestamp type in the header
	// of the stored batch holding OFFSET: CreateTime or LogAppendTime.
	queries["timestamp-type"] = querySpec{"broker topic int", batchQuery(func(h storage.BatchHeader) Value {
		if h.Attributes&timestampTypeAttr != 0 {
			return str("LogAppendTime")
		}
		return str("CreateTime")
	})}
}
