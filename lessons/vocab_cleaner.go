package lessons

import (
	"fmt"
	"strconv"
	"time"

	"tidemark/events"
	"tidemark/server/cluster"
)

// The cluster's part of the vocabulary for compacted topics
// (cleanup.policy=compact): a tombstone (a keyed record with a null
// value), and what the log cleaner left: each record's key and value, the
// cleaned section's end (the first dirty offset), the cleanable log's
// dirty ratio, and how many passes ran. The cleaner itself runs in each
// broker's tick with the retention check, once a second of lab time, as
// Kafka's cleaner threads visit each compacted log: `step` runs it.

// tombstoneText is how a tombstone's value reads in key-values: the
// console consumer prints a null value so.
const tombstoneText = "null"

func addCleanerVocab() {
	// produce-tombstone TOPIC KEY NAME: a record with KEY and a null value
	// (acks=1), named NAME for the producer-result queries.
	actions["produce-tombstone"] = actionSpec{"topic word word", nil, func(e *Env, a []string, _ map[string]string) error {
		sent := e.c.Clock().Now().UnixMilli()
		res, err := e.c.Produce(e.ctx, a[0], -1, 1, []cluster.Record{{Key: []byte(a[1])}}, 30*time.Second)
		e.wait()
		e.setResult(a[0], a[2], &result{answered: true, offset: res.BaseOffset, err: err, partition: res.Partition, key: a[1], tombstone: true, sentMs: sent})
		if err == nil {
			e.Point(Pointer{Kind: "record", Broker: res.Leader, Topic: a[0], Partition: res.Partition, Offset: res.BaseOffset, Value: a[2], Note: "key " + a[1] + " · tombstone"})
		}
		return nil
	}}
	// key-values BROKER TOPIC: the replica's records as KEY=VALUE, a
	// tombstone KEY=null, a record without a key its value alone.
	queries["key-values"] = querySpec{"broker topic", func(e *Env, a []string) (Value, error) {
		return list(mapS(e.Records(id(a[0]), a[1]), func(r Rec) string {
			v := r.Value
			if r.Tombstone {
				v = tombstoneText
			}
			if r.Key == "" {
				return v
			}
			return r.Key + "=" + v
		})), nil
	}}
	// first-dirty BROKER TOPIC: where the log cleaner's cleaned section
	// ends and the dirty section begins (Kafka's first dirty offset, the
	// cleaner-offset-checkpoint's entry); the log start before any pass.
	queries["first-dirty"] = querySpec{"broker topic", func(e *Env, a []string) (Value, error) {
		b := e.c.Broker(id(a[0]))
		if b == nil {
			return str("down"), nil
		}
		r := b.Replica(a[1], 0)
		if r == nil {
			return Value{}, fmt.Errorf("first-dirty: broker %s has no replica of %s", a[0], a[1])
		}
		_, d := r.CleanerSections()
		return num(d), nil
	}}
	// dirty-ratio BROKER TOPIC: the cleanable log's dirty bytes over all
	// its bytes (Kafka's cleanableRatio), with two decimals; the cleanable
	// log is the sealed segments below the HW (the active segment is never
	// cleaned).
	queries["dirty-ratio"] = querySpec{"broker topic", func(e *Env, a []string) (Value, error) {
		st, ok := e.Status(id(a[0]), a[1])
		b := e.c.Broker(id(a[0]))
		if !ok || b == nil {
			return str("down"), nil
		}
		_, firstDirty := b.Replica(a[1], 0).CleanerSections()
		segs := segments(e, id(a[0]), a[1])
		var clean, dirty int64
		for i := 0; i+1 < len(segs) && segs[i+1].BaseOffset <= st.HighWatermark; i++ {
			if segs[i+1].BaseOffset <= firstDirty {
				clean += segs[i].LogBytes
			} else {
				dirty += segs[i].LogBytes
			}
		}
		ratio := 0.0
		if clean+dirty > 0 {
			ratio = float64(dirty) / float64(clean+dirty)
		}
		return str(strconv.FormatFloat(ratio, 'f', 2, 64)), nil
	}}
	// cleaner-runs BROKER TOPIC: how many passes of the log cleaner ran on
	// the replica in this run (a pass runs once the dirty ratio reaches
	// min.cleanable.dirty.ratio).
	queries["cleaner-runs"] = querySpec{"broker topic", func(e *Env, a []string) (Value, error) {
		n := 0
		for _, ev := range e.events(id(a[0]), a[1], events.KindLEO) {
			if ev.MessageKey == "event.cleaner" {
				n++
			}
		}
		return num(int64(n)), nil
	}}
}
