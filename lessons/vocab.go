package lessons

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"tidemark/events"
	"tidemark/server/cluster"
	"tidemark/server/wire"
	"tidemark/storage"
)

// The vocabulary of the scenario language: the actions a step performs
// (the operations a learner has in the API) and the queries its texts,
// checks and choices read from the real state. Topics have one partition
// unless create-topic says otherwise; queries read partition 0.

// actionSpec is one action: its arguments (see checkArgs), the options it
// takes and what it does.
type actionSpec struct {
	args string
	keys []string
	run  func(e *Env, a []string, opt map[string]string) error
}

// querySpec is one query: its arguments and how it reads the state.
type querySpec struct {
	args string
	get  func(e *Env, a []string) (Value, error)
}

// rulesOnly is the run of an action or query the lab cluster lacks: it
// exists on the pure rules alone (rulesOnlyActions, rulesOnlyQueries), and
// the parser refuses it in a file that runs on the cluster.
func rulesOnly(*Env, []string, map[string]string) error {
	return errors.New("only on the rules back-end")
}

var topicKeys = []string{"partitions", "rf", "segment.bytes", "segment.ms", "segment.index.bytes", "index.interval.bytes", "min.insync.replicas",
	"unclean.leader.election.enable", "truncation.rule", "retention.ms", "retention.bytes", "replica.lag.time.max.ms",
	"flush.messages", "replication.protocol", "cleanup.policy", "delete.retention.ms", "min.cleanable.dirty.ratio",
	"compression.type", "message.timestamp.type", rulesCheckpointKey}

var actions map[string]actionSpec

var queries map[string]querySpec

func actionNames() []string { return sortedKeys(actions) }
func queryNames() []string  { return sortedKeys(queries) }

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func ids(a []string) []int32 {
	out := make([]int32, 0, len(a))
	for _, s := range a {
		n, _ := strconv.Atoi(s)
		out = append(out, int32(n))
	}
	return out
}

func id(s string) int32 { n, _ := strconv.Atoi(s); return int32(n) }

func acksOf(opt map[string]string) int16 {
	switch opt["acks"] {
	case "0":
		return 0
	case "1", "":
		return 1
	}
	return -1
}

// result is what a producer heard about one value sent to one topic.
type result struct {
	pending   *Pending
	answered  bool
	offset    int64
	err       error
	partition int32
	// brokerErr is the broker's own answer to an acks=0 write, which the
	// producer never hears.
	brokerErr error
	// key is the record's key ("" none); tombstone: its value was null
	// (the result is named for it all the same); sentMs the lab time it
	// was sent, its timestamp. A compacted topic's cleaner reads them.
	key       string
	tombstone bool
	sentMs    int64
}

func (e *Env) result(topic, value string) (*result, error) {
	r := e.results[topic+"/"+value]
	if r == nil {
		return nil, fmt.Errorf("%s was never sent to %s", value, topic)
	}
	if r.pending != nil && !r.answered && r.pending.Done() {
		r.offset, r.err = r.pending.Wait()
		r.answered = true
	}
	return r, nil
}

func (e *Env) setResult(topic, value string, r *result) {
	e.results[topic+"/"+value] = r
	e.sent[value] = true
}

func init() {
	actions = map[string]actionSpec{
		"create-topic": {"word key=value*", topicKeys, func(e *Env, a []string, opt map[string]string) error {
			parts, rf := int32(1), int16(1)
			cfg := map[string]string{}
			for k, v := range opt {
				n, _ := strconv.Atoi(v)
				switch k {
				case "partitions":
					parts = int32(n)
				case "rf":
					rf = int16(n)
				default:
					cfg[k] = v
				}
			}
			return e.CreateTopic(a[0], parts, rf, cfg)
		}},
		"produce": {"topic word key=value*", []string{"acks", "timestamp"}, func(e *Env, a []string, opt map[string]string) error {
			ts, err := timestampOf(e, opt)
			if err != nil {
				return err
			}
			off, err := e.produceAt(a[0], a[1], acksOf(opt), ts)
			e.setResult(a[0], a[1], &result{answered: acksOf(opt) != 0, offset: off, err: err})
			return nil
		}},
		"produce-to": {"broker topic word key=value*", []string{"acks", "timeout"}, func(e *Env, a []string, opt map[string]string) error {
			b := e.c.Broker(id(a[0]))
			if b == nil {
				return fmt.Errorf("produce-to: broker %s is not running", a[0])
			}
			acks := acksOf(opt)
			res := b.Produce(e.ctx, a[1], 0, acks, storage.NewBatch([]storage.Record{{Value: []byte(a[2]), Timestamp: e.c.Clock().Now().UnixMilli()}}), timeoutOf(opt))
			e.wait()
			r := &result{answered: acks != 0, offset: res.BaseOffset, err: res.Err}
			if acks == 0 { // Kafka sends no response to acks=0: the producer hears nothing
				r.brokerErr, r.err, r.offset = res.Err, nil, -1
			}
			e.setResult(a[1], a[2], r)
			return nil
		}},
		"produce-key": {"topic word word", nil, func(e *Env, a []string, _ map[string]string) error {
			sent := e.c.Clock().Now().UnixMilli()
			res, err := e.ProduceKey(a[0], a[1], a[2])
			if err != nil {
				return err
			}
			e.setResult(a[0], a[2], &result{answered: true, offset: res.BaseOffset, partition: res.Partition, key: a[1], sentMs: sent})
			e.Say(T("Key %s → partition %d (leader broker %d), offset %d: %s.",
				"key %s → 分区 %d（leader 为 broker %d），offset %d：%s。",
				"key %s → 分區 %d（leader 為 broker %d），offset %d：%s。").F(a[1], res.Partition, res.Leader, res.BaseOffset, a[2]))
			e.Point(Pointer{Kind: "record", Broker: res.Leader, Topic: a[0], Partition: res.Partition, Offset: res.BaseOffset, Value: a[2], Note: "key " + a[1]})
			return nil
		}},
		"fill": {"topic word int int int key=value*", []string{"timestamp"}, func(e *Env, a []string, opt map[string]string) error {
			ts, err := timestampOf(e, opt)
			if err != nil {
				return err
			}
			from, _ := strconv.Atoi(a[2])
			n, _ := strconv.Atoi(a[3])
			size, _ := strconv.Atoi(a[4])
			if n > 1000 || size > 64<<10 {
				return fmt.Errorf("fill: at most 1000 records of 64 KiB")
			}
			for i := from; i < from+n; i++ {
				v := fill(fmt.Sprintf("%s%02d", a[1], i), size)
				if _, err := e.produceAt(a[0], v, 1, ts); err != nil {
					return err
				}
			}
			return nil
		}},
		"send": {"topic word", nil, func(e *Env, a []string, _ map[string]string) error {
			p, err := e.ProduceAsync(a[0], a[1])
			if err != nil {
				return err
			}
			e.setResult(a[0], a[1], &result{pending: p})
			return nil
		}},
		// send-idempotent TOPIC VALUE PID SEQ [epoch=E] [timeout=MS]: one batch
		// of an idempotent producer, its producer epoch E (default 0).
		"send-idempotent": {"topic word word int key=value*", []string{"epoch", "timeout"}, func(e *Env, a []string, opt map[string]string) error {
			pid, ok := e.pids[a[2]]
			if !ok {
				return fmt.Errorf("send-idempotent: no producer id %s (do init-producer-id first)", a[2])
			}
			seq, _ := strconv.Atoi(a[3])
			epoch := 0
			if v, ok := opt["epoch"]; ok {
				n, err := strconv.Atoi(v)
				if err != nil || n < 0 || n > math.MaxInt16 {
					return fmt.Errorf("send-idempotent: epoch=%s is not a producer epoch (0..%d)", v, math.MaxInt16)
				}
				epoch = n
			}
			p, err := e.produceBytesTo(e.Meta(a[0]).Leader, a[0], a[1], storage.NewIdempotentBatch([]storage.Record{{Value: []byte(a[1]), Timestamp: e.c.Clock().Now().UnixMilli()}}, pid, int16(epoch), int32(seq)), timeoutOf(opt))
			if err != nil {
				return err
			}
			e.setResult(a[0], a[1], &result{pending: p})
			return nil
		}},
		"init-producer-id": {"topic word", nil, func(e *Env, a []string, _ map[string]string) error {
			pid, err := initProducerID(e, a[0])
			if err != nil {
				return err
			}
			e.pids[a[1]] = pid
			return nil
		}},
		"await": {"topic word+", nil, func(e *Env, a []string, _ map[string]string) error {
			for _, v := range a[1:] {
				r, err := e.result(a[0], v)
				if err != nil {
					return err
				}
				if r.pending != nil && !r.answered {
					r.offset, r.err = r.pending.Wait()
					r.answered = true
				}
			}
			return nil
		}},
		"fetch":      {"broker+", nil, func(e *Env, a []string, _ map[string]string) error { return e.Fetch(ids(a)...) }},
		"settle":     {"broker*", nil, func(e *Env, a []string, _ map[string]string) error { return e.Settle(ids(a)...) }},
		"crash":      {"broker+", nil, func(e *Env, a []string, _ map[string]string) error { return e.Crash(ids(a)...) }},
		"power-loss": {"broker+", nil, func(e *Env, a []string, _ map[string]string) error { return e.PowerLoss(ids(a)...) }},
		"restart":    {"broker+", nil, func(e *Env, a []string, _ map[string]string) error { return e.Restart(ids(a)...) }},
		"fail-disk": {"broker+", nil, func(e *Env, a []string, _ map[string]string) error {
			for _, b := range ids(a) {
				if err := e.c.FailDisk(b); err != nil {
					return err
				}
				e.wait()
			}
			return nil
		}},
		"await-halt": {"broker", nil, func(e *Env, a []string, _ map[string]string) error {
			// A broker whose last log dir failed halts on its own goroutine.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := e.c.AwaitStopped(ctx, id(a[0])); err != nil {
				return fmt.Errorf("broker %s did not halt: %w", a[0], err)
			}
			e.wait()
			return nil
		}},
		"step": {"duration", nil, func(e *Env, a []string, _ map[string]string) error {
			d, _ := time.ParseDuration(a[0])
			return e.Step(d)
		}},
		"cut": {"node node", nil, func(e *Env, a []string, _ map[string]string) error { return e.Cut(id(a[0]), id(a[1])) }},
		"cut-one-way": {"node node", nil, func(e *Env, a []string, _ map[string]string) error {
			err := e.c.Cut(id(a[0]), id(a[1]), true)
			e.wait()
			return err
		}},
		// delay A B D: messages between nodes A and B take D each way;
		// delay-one-way: from A to B only (A's requests, not the answers).
		"delay": {"node node duration", nil, func(e *Env, a []string, _ map[string]string) error {
			d, _ := time.ParseDuration(a[2])
			return e.c.DelayLink(id(a[0]), id(a[1]), d, false)
		}},
		"delay-one-way": {"node node duration", nil, func(e *Env, a []string, _ map[string]string) error {
			d, _ := time.ParseDuration(a[2])
			return e.c.DelayLink(id(a[0]), id(a[1]), d, true)
		}},
		"heal":  {"", nil, func(e *Env, _ []string, _ map[string]string) error { e.Heal(); return nil }},
		"alter": {"topic word word", nil, func(e *Env, a []string, _ map[string]string) error { return e.Alter(a[0], a[1], a[2]) }},
		"fencing-rule": {"rule", nil, func(e *Env, a []string, _ map[string]string) error {
			err := e.c.SetFencingRule(a[0])
			e.wait()
			return err
		}},
		"checkpoint": {"broker+", nil, func(e *Env, a []string, _ map[string]string) error { e.Checkpoint(ids(a)...); return nil }},
		"flush":      {"broker+", nil, func(e *Env, a []string, _ map[string]string) error { return e.Flush(ids(a)...) }},
		"consume": {"topic int? key=value*", []string{"isolation"}, func(e *Env, a []string, opt map[string]string) error {
			// From the start, or from the offset given.
			from := fromOffset(a)
			committed, protocol, err := isolationOf(opt)
			if err != nil {
				return err
			}
			if protocol { // a Fetch at that isolation level, filtered as Kafka's consumer does (vocab_txn.go)
				vs, hw, _, err := e.fetchIsolated(a[0], from, committed)
				e.consumed[a[0]], e.consumeErr[a[0]], e.consumedHW[a[0]] = vs, err, hw
				return nil
			}
			recs, hw, err := e.c.Consume(a[0], 0, from, 1000)
			e.consumed[a[0]] = mapS(recs, func(r cluster.ConsumedRecord) string { return string(r.Value) })
			e.consumeErr[a[0]], e.consumedHW[a[0]] = err, hw
			return nil
		}},
		"consume-all": {"topic", nil, func(e *Env, a []string, _ map[string]string) error {
			t, ok := e.c.Controller().Topic(a[0])
			if !ok {
				return fmt.Errorf("consume-all: no topic %s", a[0])
			}
			var all []string
			for p := range int32(len(t.Partitions)) {
				recs, _, err := e.c.Consume(a[0], p, 0, 1000)
				if err != nil {
					return err
				}
				var vs []string
				for _, r := range recs {
					vs = append(vs, string(r.Value))
					e.Point(Pointer{Kind: "record", Broker: t.Partitions[p].Leader, Topic: a[0], Partition: p, Offset: r.Offset, Value: string(r.Value)})
				}
				e.Say(T("Partition %d: %s", "分区 %d：%s", "分區 %d：%s").F(p, list(vs).Human()))
				all = append(all, vs...)
			}
			e.consumed[a[0]] = all
			return nil
		}},
		"lookup": {"broker topic int", nil, func(e *Env, a []string, _ map[string]string) error {
			l := e.Log(id(a[0]), a[1])
			if l == nil {
				return fmt.Errorf("lookup: broker %s has no log of %s", a[0], a[1])
			}
			off, _ := strconv.ParseInt(a[2], 10, 64)
			tr, err := l.Lookup(off)
			if err != nil {
				return err
			}
			e.lookup, e.lookupAt, e.lookupTopic = &tr, id(a[0]), a[1]
			e.Point(Pointer{Kind: "file", Broker: id(a[0]), Topic: a[1], File: tr.SegmentFile, Offset: tr.SegmentBaseOffset})
			e.Point(Pointer{Kind: "record", Broker: id(a[0]), Topic: a[1], Offset: off})
			return nil
		}},
		"mark-time": {"word", nil, func(e *Env, a []string, _ map[string]string) error {
			e.times[a[0]] = e.c.Clock().Now().UnixMilli()
			return nil
		}},
		"lookup-time": {"broker topic word", nil, func(e *Env, a []string, _ map[string]string) error {
			ts, ok := e.times[a[2]]
			if !ok {
				return fmt.Errorf("lookup-time: no time %s (do mark-time %s first)", a[2], a[2])
			}
			l := e.Log(id(a[0]), a[1])
			if l == nil {
				return fmt.Errorf("lookup-time: broker %s has no log of %s", a[0], a[1])
			}
			off, found, err := l.OffsetForTimestamp(ts)
			if err != nil || !found {
				return fmt.Errorf("offset for timestamp: %v %v", found, err)
			}
			e.timeOffset = off
			e.Point(Pointer{Kind: "record", Broker: id(a[0]), Topic: a[1], Offset: off})
			return nil
		}},
		"copy-file-regions": {"broker word", nil, func(e *Env, a []string, _ map[string]string) error {
			if a[1] != "yes" && a[1] != "no" {
				return fmt.Errorf("copy-file-regions %s %s: want yes or no", a[0], a[1])
			}
			return e.c.SetCopyFileRegions(id(a[0]), a[1] == "yes")
		}},
		"fetch-regions": {"broker topic", nil, func(e *Env, a []string, _ map[string]string) error {
			n, d, took, err := e.c.FetchRegions(e.ctx, id(a[0]), a[1], 0)
			if err != nil {
				return err
			}
			e.fetched = &fetchRegions{bytes: n, stats: d, took: took}
			e.PointLog(id(a[0]), a[1])
			return nil
		}},
		"lanes":     {"topic", nil, func(e *Env, a []string, _ map[string]string) error { e.sayLanes(a[0]); return nil }},
		"point-log": {"broker topic", nil, func(e *Env, a []string, _ map[string]string) error { e.PointLog(id(a[0]), a[1]); return nil }},
		"point-truncated": {"broker topic", nil, func(e *Env, a []string, _ map[string]string) error {
			snap := e.c.Snapshot() // the events carry no values; the lanes do
			for _, r := range e.Truncated(id(a[0]), a[1]) {
				r.Value = truncatedValue(&snap, id(a[0]), a[1], r)
				e.Point(Pointer{Kind: "truncated", Broker: id(a[0]), Topic: a[1], Offset: r.Offset, Value: r.Value, Note: fmt.Sprintf("e%d", r.LeaderEpoch)})
			}
			return nil
		}},
		"point-replica": {"broker topic", nil, func(e *Env, a []string, _ map[string]string) error {
			e.Point(Pointer{Kind: "replica", Broker: id(a[0]), Topic: a[1]})
			return nil
		}},
		"segments": {"broker topic", nil, func(e *Env, a []string, _ map[string]string) error {
			for _, s := range segments(e, id(a[0]), a[1]) {
				e.Say(T("%s: offsets %d to %d, %d bytes, %d .index entries, %d .timeindex entries",
					"%s：offset %d 到 %d，%d 字节，%d 个 .index 条目，%d 个 .timeindex 条目",
					"%s：offset %d 到 %d，%d 位元組，%d 個 .index 項目，%d 個 .timeindex 項目").F(s.Files[0], s.BaseOffset, s.NextOffset-1, s.LogBytes, len(s.Index), len(s.TimeIndex)))
				e.Point(Pointer{Kind: "file", Broker: id(a[0]), Topic: a[1], File: s.Files[0], Offset: s.BaseOffset})
			}
			return nil
		}},
		"timeindex": {"broker topic", nil, func(e *Env, a []string, _ map[string]string) error {
			for _, s := range segments(e, id(a[0]), a[1]) {
				name := strings.TrimSuffix(s.Files[0], ".log") + ".timeindex"
				var es []string
				for _, t := range s.TimeIndex {
					es = append(es, fmt.Sprintf("%d→%d", t.Timestamp, s.BaseOffset+int64(t.RelativeOffset)))
				}
				e.Say(T("%s (largest timestamp %d): %s", "%s（最大时间戳 %d）：%s", "%s（最大時間戳 %d）：%s").F(name, s.MaxTimestamp, list(es).Human()))
				e.Point(Pointer{Kind: "file", Broker: id(a[0]), Topic: a[1], File: name, Offset: s.BaseOffset})
			}
			return nil
		}},
	}
	queries = map[string]querySpec{
		"leo":            {"broker topic", statusQuery(func(l *storage.Log, s statusT) int64 { return s.LogEndOffset })},
		"hw":             {"broker topic", statusQuery(func(l *storage.Log, s statusT) int64 { return s.HighWatermark })},
		"log-start":      {"broker topic", statusQuery(func(l *storage.Log, s statusT) int64 { return l.LogStartOffset() })},
		"recovery-point": {"broker topic", statusQuery(func(l *storage.Log, s statusT) int64 { return l.RecoveryPoint() })},
		"values":         {"broker topic", func(e *Env, a []string) (Value, error) { return list(e.Values(id(a[0]), a[1])), nil }},
		"leader-values": {"topic", func(e *Env, a []string) (Value, error) {
			return list(e.Values(e.Meta(a[0]).Leader, a[0])), nil
		}},
		"value-at": {"broker topic int", func(e *Env, a []string) (Value, error) {
			off, _ := strconv.ParseInt(a[2], 10, 64)
			for _, r := range e.Records(id(a[0]), a[1]) {
				if r.Offset == off {
					return str(r.Value), nil
				}
			}
			return str("none"), nil
		}},
		"copies": {"broker topic word", func(e *Env, a []string) (Value, error) {
			n := 0
			for _, v := range e.Values(id(a[0]), a[1]) {
				if v == a[2] {
					n++
				}
			}
			return num(int64(n)), nil
		}},
		"truncated": {"broker topic", func(e *Env, a []string) (Value, error) {
			var out []string
			for _, r := range e.Truncated(id(a[0]), a[1]) {
				out = append(out, e.valueOf(r.Digest))
			}
			return list(out), nil
		}},
		"isr":          {"topic", func(e *Env, a []string) (Value, error) { return ints32(e.Meta(a[0]).ISR), nil }},
		"elr":          {"topic", func(e *Env, a []string) (Value, error) { return ints32(e.Meta(a[0]).ELR), nil }},
		"replicas":     {"topic", func(e *Env, a []string) (Value, error) { return ints32(e.Meta(a[0]).Replicas), nil }},
		"leader":       {"topic", func(e *Env, a []string) (Value, error) { return num(int64(e.Meta(a[0]).Leader)), nil }},
		"leader-epoch": {"topic", func(e *Env, a []string) (Value, error) { return num(int64(e.Meta(a[0]).LeaderEpoch)), nil }},
		"answered": {"topic word", func(e *Env, a []string) (Value, error) {
			r, err := e.result(a[0], a[1])
			if err != nil {
				return Value{}, err
			}
			return truth(r.answered), nil
		}},
		"acked": {"topic word", func(e *Env, a []string) (Value, error) {
			r, err := e.result(a[0], a[1])
			if err != nil {
				return Value{}, err
			}
			return truth(r.answered && r.err == nil), nil
		}},
		"error": {"topic word", func(e *Env, a []string) (Value, error) {
			r, err := e.result(a[0], a[1])
			if err != nil {
				return Value{}, err
			}
			return errValue(r.err), nil
		}},
		"broker-error": {"topic word", func(e *Env, a []string) (Value, error) {
			r, err := e.result(a[0], a[1])
			if err != nil {
				return Value{}, err
			}
			return errValue(r.brokerErr), nil
		}},
		"offset": {"topic word", func(e *Env, a []string) (Value, error) {
			r, err := e.result(a[0], a[1])
			if err != nil {
				return Value{}, err
			}
			if !r.answered {
				return num(-1), nil
			}
			return num(r.offset), nil
		}},
		"partition": {"topic word", func(e *Env, a []string) (Value, error) {
			r, err := e.result(a[0], a[1])
			if err != nil {
				return Value{}, err
			}
			return num(int64(r.partition)), nil
		}},
		"murmur2": {"word int", func(e *Env, a []string) (Value, error) {
			n, _ := strconv.Atoi(a[1])
			if n < 1 {
				return Value{}, errors.New("murmur2: partition count must be positive")
			}
			return num(int64(cluster.PartitionForKey([]byte(a[0]), int32(n)))), nil
		}},
		"consumed":      {"topic", func(e *Env, a []string) (Value, error) { return list(e.consumed[a[0]]), nil }},
		"consume-error": {"topic", func(e *Env, a []string) (Value, error) { return errValue(e.consumeErr[a[0]]), nil }},
		"per-key-order": {"topic", func(e *Env, a []string) (Value, error) {
			// Values are named key letter + sequence (a1, a2…): each key's in order.
			ok := true
			byKey := map[byte][]string{}
			for _, v := range e.consumed[a[0]] {
				if v != "" {
					byKey[v[0]] = append(byKey[v[0]], v)
				}
			}
			for _, vs := range byKey {
				ok = ok && slices.IsSorted(vs)
			}
			return truth(ok), nil
		}},
		"segments": {"broker topic", func(e *Env, a []string) (Value, error) {
			return num(int64(len(segments(e, id(a[0]), a[1])))), nil
		}},
		"segment-files": {"broker topic", func(e *Env, a []string) (Value, error) {
			return list(mapS(segments(e, id(a[0]), a[1]), func(s storage.SegmentInfo) string { return s.Files[0] })), nil
		}},
		"max-segment-bytes": {"broker topic", func(e *Env, a []string) (Value, error) {
			m := int64(0)
			for _, s := range segments(e, id(a[0]), a[1]) {
				m = max(m, s.LogBytes)
			}
			return num(m), nil
		}},
		"names-are-base-offsets": {"broker topic", func(e *Env, a []string) (Value, error) {
			return truth(namesAreBaseOffsets(segments(e, id(a[0]), a[1]))), nil
		}},
		"segment-of": {"broker topic int", func(e *Env, a []string) (Value, error) {
			off, _ := strconv.ParseInt(a[2], 10, 64)
			for _, s := range segments(e, id(a[0]), a[1]) {
				if s.BaseOffset <= off && off < s.NextOffset {
					return num(s.BaseOffset), nil
				}
			}
			return num(-1), nil
		}},
		"segment-spans": {"broker topic int", func(e *Env, a []string) (Value, error) {
			// whether one segment holds offsets on both sides of the boundary
			k, _ := strconv.ParseInt(a[2], 10, 64)
			return truth(slices.ContainsFunc(segments(e, id(a[0]), a[1]), func(s storage.SegmentInfo) bool { return s.BaseOffset < k && s.NextOffset > k })), nil
		}},
		"files-below-log-start": {"broker topic", func(e *Env, a []string) (Value, error) {
			l := e.Log(id(a[0]), a[1])
			if l == nil {
				return num(-1), nil
			}
			des, err := os.ReadDir(l.Dir())
			if err != nil {
				return Value{}, err
			}
			n := 0
			for _, d := range des {
				if base, ok := strings.CutSuffix(d.Name(), ".log"); ok {
					if b, err := strconv.ParseInt(base, 10, 64); err == nil && b < l.LogStartOffset() && !slices.ContainsFunc(segments(e, id(a[0]), a[1]), func(s storage.SegmentInfo) bool { return s.BaseOffset == b }) {
						n++
					}
				}
			}
			return num(int64(n)), nil
		}},
		"lookup-segment":        {"", lookupQuery(func(tr *storage.LookupTrace) Value { return num(tr.SegmentBaseOffset) })},
		"lookup-segment-file":   {"", lookupQuery(func(tr *storage.LookupTrace) Value { return str(tr.SegmentFile) })},
		"lookup-segment-probes": {"", lookupQuery(func(tr *storage.LookupTrace) Value { return num(int64(len(tr.SegmentProbes))) })},
		"lookup-probed-bases": {"", lookupQuery(func(tr *storage.LookupTrace) Value {
			return list(mapS(tr.SegmentProbes, func(p storage.SearchProbe) string { return strconv.FormatInt(p.Key, 10) }))
		})},
		"lookup-index-probes": {"", lookupQuery(func(tr *storage.LookupTrace) Value { return num(int64(len(tr.IndexProbes))) })},
		"lookup-index-position": {"", lookupQuery(func(tr *storage.LookupTrace) Value {
			if tr.IndexEntry == nil {
				return num(0)
			}
			return num(int64(tr.IndexEntry.Position))
		})},
		"lookup-start":       {"", lookupQuery(func(tr *storage.LookupTrace) Value { return num(tr.StartPosition) })},
		"lookup-scanned":     {"", lookupQuery(func(tr *storage.LookupTrace) Value { return num(int64(len(tr.Scanned))) })},
		"lookup-position":    {"", lookupQuery(func(tr *storage.LookupTrace) Value { return num(tr.Position) })},
		"lookup-batch-first": {"", lookupQuery(func(tr *storage.LookupTrace) Value { return num(tr.Batch.BaseOffset) })},
		"lookup-batch-last":  {"", lookupQuery(func(tr *storage.LookupTrace) Value { return num(tr.Batch.LastOffset()) })},
		"lookup-index-entries": {"", func(e *Env, _ []string) (Value, error) {
			s, err := e.lookupSegment()
			return num(int64(len(s.Index))), err
		}},
		"lookup-segment-records": {"", func(e *Env, _ []string) (Value, error) {
			s, err := e.lookupSegment()
			return num(s.NextOffset - s.BaseOffset), err
		}},
		"last-segment-at-or-below": {"broker topic int", func(e *Env, a []string) (Value, error) {
			off, _ := strconv.ParseInt(a[2], 10, 64)
			best := int64(-1)
			for _, s := range segments(e, id(a[0]), a[1]) {
				if s.BaseOffset <= off {
					best = s.BaseOffset
				}
			}
			return num(best), nil
		}},
		"time-offset": {"", func(e *Env, a []string) (Value, error) { return num(e.timeOffset), nil }},
		"timeindex-entries": {"broker topic", func(e *Env, a []string) (Value, error) {
			n := 0
			for _, s := range segments(e, id(a[0]), a[1]) {
				n += len(s.TimeIndex)
			}
			return num(int64(n)), nil
		}},
		"recovered-segments": {"broker topic", recoveryQuery(func(r storage.RecoveryReport, _ []storage.SegmentInfo) Value {
			return list(mapS(r.SegmentsRecovered, func(b int64) string { return fmt.Sprintf("%020d.log", b) }))
		})},
		"recovery-started-at": {"broker topic", recoveryQuery(func(r storage.RecoveryReport, _ []storage.SegmentInfo) Value { return num(r.RecoveryPoint) })},
		"torn-bytes":          {"broker topic", recoveryQuery(func(r storage.RecoveryReport, _ []storage.SegmentInfo) Value { return num(r.BytesTruncated) })},
		"recovery-tail-only": {"broker topic", recoveryQuery(func(r storage.RecoveryReport, segs []storage.SegmentInfo) Value {
			ok := len(r.SegmentsRecovered) < len(segs)
			for _, s := range segs {
				if slices.Contains(r.SegmentsRecovered, s.BaseOffset) {
					ok = ok && (s.NextOffset > r.RecoveryPoint || s.BaseOffset >= r.RecoveryPoint)
				}
			}
			return truth(ok)
		})},
		"synced-bytes": {"broker topic", func(e *Env, a []string) (Value, error) {
			var n, all int64
			for _, s := range segments(e, id(a[0]), a[1]) {
				n, all = n+s.SyncedLogBytes, all+s.LogBytes
			}
			return num(n), nil
		}},
		"log-bytes": {"broker topic", func(e *Env, a []string) (Value, error) {
			var all int64
			for _, s := range segments(e, id(a[0]), a[1]) {
				all += s.LogBytes
			}
			return num(all), nil
		}},
		"fetched-bytes":    {"", regionQuery(func(f *fetchRegions) Value { return num(f.bytes) })},
		"sendfile-bytes":   {"", regionQuery(func(f *fetchRegions) Value { return num(f.stats.SendfileBytes) })},
		"sendfile-regions": {"", regionQuery(func(f *fetchRegions) Value { return num(f.stats.SendfileRegions) })},
		"sendfile-calls":   {"", regionQuery(func(f *fetchRegions) Value { return num(f.stats.SendfileCalls) })},
		"copied-bytes":     {"", regionQuery(func(f *fetchRegions) Value { return num(f.stats.CopiedBytes) })},
		"copied-regions":   {"", regionQuery(func(f *fetchRegions) Value { return num(f.stats.CopiedRegions) })},
		"copy-syscalls":    {"", regionQuery(func(f *fetchRegions) Value { return num(f.stats.CopySyscalls) })},
		// fetch-time varies from run to run: for say lines, not checks.
		"fetch-time": {"", regionQuery(func(f *fetchRegions) Value { return str(f.took.Round(10 * time.Microsecond).String()) })},
		// in-flight: messages on their way over delayed links.
		"in-flight": {"", func(e *Env, _ []string) (Value, error) { return num(int64(e.c.MessagesInFlight())), nil }},
		"running-brokers": {"", func(e *Env, a []string) (Value, error) {
			n := 0
			for _, b := range e.c.BrokerIDs() {
				if e.c.Broker(b) != nil {
					n++
				}
			}
			return num(int64(n)), nil
		}},
		"running": {"broker", func(e *Env, a []string) (Value, error) { return truth(e.c.Broker(id(a[0])) != nil), nil }},
		"fencing": {"", func(e *Env, a []string) (Value, error) { return str(e.c.FencingRule()), nil }},
		"controller-fields": {"topic", func(e *Env, a []string) (Value, error) {
			m := e.Meta(a[0])
			return list([]string{"Replicas=" + ints32(m.Replicas).Canon(), "Leader=" + strconv.Itoa(int(m.Leader)),
				"LeaderEpoch=" + strconv.Itoa(int(m.LeaderEpoch)), "PartitionEpoch=" + strconv.Itoa(int(m.PartitionEpoch)),
				"ISR=" + ints32(m.ISR).Canon(), "ELR=" + ints32(m.ELR).Canon()}), nil
		}},
		"broker-files": {"broker", func(e *Env, a []string) (Value, error) {
			b := e.c.Broker(id(a[0]))
			if b == nil {
				return list(nil), nil
			}
			des, err := os.ReadDir(b.LogDir().Path())
			if err != nil {
				return Value{}, err
			}
			var out []string
			for _, d := range des {
				if !d.IsDir() && !strings.HasPrefix(d.Name(), ".") {
					out = append(out, d.Name())
				}
			}
			return list(out), nil
		}},
		"checkpointed-hw": {"broker topic", func(e *Env, a []string) (Value, error) {
			b := e.c.Broker(id(a[0]))
			if b == nil {
				return num(-1), nil
			}
			return num(readCheckpoint(filepath.Join(b.LogDir().Path(), "replication-offset-checkpoint"), a[1])), nil
		}},
	}
	addScenarioVocab()
	addCompareVocab()
	addFileVocab()
	addTxnVocab()
	addTimeVocab()
	addCleanerVocab()
	addStoryVocab()
}

// lookupSegment is the segment the last lookup chose.
func (e *Env) lookupSegment() (storage.SegmentInfo, error) {
	if e.lookup == nil {
		return storage.SegmentInfo{}, errors.New("no lookup yet (do lookup BROKER TOPIC OFFSET first)")
	}
	for _, s := range segments(e, e.lookupAt, e.lookupTopic) {
		if s.BaseOffset == e.lookup.SegmentBaseOffset {
			return s, nil
		}
	}
	return storage.SegmentInfo{}, errors.New("the looked-up segment is gone")
}

type statusT = struct{ LogEndOffset, HighWatermark int64 }

func statusQuery(f func(l *storage.Log, s statusT) int64) func(e *Env, a []string) (Value, error) {
	return func(e *Env, a []string) (Value, error) {
		st, ok := e.Status(id(a[0]), a[1])
		l := e.Log(id(a[0]), a[1])
		if !ok || l == nil {
			return str("down"), nil
		}
		return num(f(l, statusT{st.LogEndOffset, st.HighWatermark})), nil
	}
}

func lookupQuery(f func(tr *storage.LookupTrace) Value) func(e *Env, a []string) (Value, error) {
	return func(e *Env, _ []string) (Value, error) {
		if e.lookup == nil {
			return Value{}, errors.New("no lookup yet (do lookup BROKER TOPIC OFFSET first)")
		}
		return f(e.lookup), nil
	}
}

// fetchRegions is what the last fetch-regions got: the record bytes and
// how its broker sent them (the broker's own counters, so other labs'
// fetches do not count), and the fetch's wall time.
type fetchRegions struct {
	bytes int64
	stats wire.RegionStats
	took  time.Duration
}

func regionQuery(f func(*fetchRegions) Value) func(e *Env, a []string) (Value, error) {
	return func(e *Env, _ []string) (Value, error) {
		if e.fetched == nil {
			return Value{}, errors.New("no fetch yet (do fetch-regions BROKER TOPIC first)")
		}
		return f(e.fetched), nil
	}
}

func recoveryQuery(f func(r storage.RecoveryReport, segs []storage.SegmentInfo) Value) func(e *Env, a []string) (Value, error) {
	return func(e *Env, a []string) (Value, error) {
		l := e.Log(id(a[0]), a[1])
		if l == nil {
			return Value{}, fmt.Errorf("broker %s has no log of %s", a[0], a[1])
		}
		return f(l.Recovery(), segments(e, id(a[0]), a[1])), nil
	}
}

// readCheckpoint reads topic's partition 0 from a Kafka text checkpoint
// file (version line, count line, "topic partition offset" lines); -1 if
// it is not there.
func readCheckpoint(path, topic string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == topic && f[1] == "0" {
			n, _ := strconv.ParseInt(f[2], 10, 64)
			return n
		}
	}
	return -1
}

// valueOf names a truncated record by the value it held, matched by digest
// against every value the run sent; "?" when none matches.
func (e *Env) valueOf(d string) string {
	for v := range e.sent {
		if events.Digest(nil, []byte(v)) == d {
			return v
		}
	}
	return "?"
}

// fill makes a value of about n bytes so that segments roll quickly.
func fill(name string, n int) string {
	return name + ":" + strings.Repeat(".", max(0, n-len(name)-1))
}

func segments(e *Env, id int32, topic string) []storage.SegmentInfo {
	l := e.Log(id, topic)
	if l == nil {
		return nil
	}
	s, _ := l.Segments()
	return s
}

var twentyDigits = regexp.MustCompile(`^\d{20}\.(log|index|timeindex)$`)

// namesAreBaseOffsets reports whether every segment's three files are
// named by its own first offset in 20 digits and each segment starts where
// the one before it ended (so a name one below, the previous segment's
// last offset, fails); true for no segments.
func namesAreBaseOffsets(segs []storage.SegmentInfo) bool {
	for i, s := range segs {
		for _, f := range s.Files {
			if !twentyDigits.MatchString(f) || f[:20] != fmt.Sprintf("%020d", s.BaseOffset) {
				return false
			}
		}
		if i > 0 && s.BaseOffset != segs[i-1].NextOffset {
			return false
		}
	}
	return true
}

// sayLanes tells the controller's view of a topic and every replica's.
func (e *Env) sayLanes(topic string) {
	m := e.Meta(topic)
	e.Say(T("Controller: leader %d, leader epoch %d, ISR %s.", "控制器：leader %d，leader epoch %d，ISR %s。", "控制器：leader %d，leader epoch %d，ISR %s。").F(m.Leader, m.LeaderEpoch, ints32(m.ISR).Canon()))
	for _, id := range e.c.BrokerIDs() {
		st, ok := e.Status(id, topic)
		if !ok {
			e.Say(T("Broker %d is down.", "broker %d 已停止。", "broker %d 已停止。").F(id))
			continue
		}
		role := T("follower", "follower", "follower")
		if m.Leader == id {
			role = T("leader", "leader", "leader")
		}
		e.Say(T("Broker %d (%s, %s): LEO %d, HW %d, records %s.", "broker %d（%s，%s）：LEO %d，HW %d，记录 %s。", "broker %d（%s，%s）：LEO %d，HW %d，記錄 %s。").F(
			id, topic, role, st.LogEndOffset, st.HighWatermark, list(e.Values(id, topic)).Human()))
	}
}

// initProducerID asks the leader of topic for a producer id, as an
// idempotent producer's first request does.
func initProducerID(e *Env, topic string) (int64, error) {
	b := e.c.Broker(e.Meta(topic).Leader)
	if b == nil {
		return 0, errors.New("no running leader")
	}
	ctx, cancel := context.WithTimeout(e.ctx, 5*time.Second)
	defer cancel()
	cl, err := wire.Dial(ctx, b.Addr(), "lesson-producer")
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	raw, err := cl.Request(ctx, kmsg.NewPtrInitProducerIDRequest())
	if err != nil {
		return 0, err
	}
	resp := raw.(*kmsg.InitProducerIDResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return 0, err
	}
	return resp.ProducerID, nil
}

// truncatedValue returns the value of r, truncated from partition 0 of topic
// on broker id, as snap's lanes have it ("" when it is not there).
func truncatedValue(snap *events.Snapshot, id int32, topic string, r events.TruncatedRecord) string {
	if p := snap.Partition(topic, 0); p != nil {
		for _, rl := range p.ReplicaLogs {
			for _, t := range rl.Truncated {
				if rl.Broker == id && t.Offset == r.Offset && t.Digest == r.Digest {
					return t.Value
				}
			}
		}
	}
	return r.Value
}
