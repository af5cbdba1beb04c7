package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"tidemark/server/wire"
	"tidemark/storage"
)

// TestCompactedTopicLatestWins creates a topic with cleanup.policy=compact
// (tiny segments, a low dirty ratio) through kadm, overwrites a few keys
// many times with franz-go, lets the running lab's cleaner pass, and reads
// the topic back from the start: below the cleaned end each key appears
// once, with its latest value, at its original offset. A keyless record
// is INVALID_RECORD, DeleteRecords is POLICY_VIOLATION, and an unknown
// config names the known ones.
func TestCompactedTopicLatestWins(t *testing.T) {
	c := openRunning(t, 3)
	adm := adminClient(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	configs := map[string]*string{"cleanup.policy": ptr("compact"), "segment.bytes": ptr("1024"),
		"min.cleanable.dirty.ratio": ptr("0.01"), "delete.retention.ms": ptr("0")}
	if res, err := adm.CreateTopic(ctx, 1, 3, configs, "latest"); err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
	bogus, _ := adm.CreateTopic(ctx, 1, 3, map[string]*string{"cleanup.polic": ptr("compact")}, "typo")
	if !errors.Is(bogus.Err, kerr.InvalidConfig) || !strings.Contains(bogus.ErrMessage, "cleanup.policy") {
		t.Fatalf("unknown config: %v %q; want INVALID_CONFIG naming the known keys", bogus.Err, bogus.ErrMessage)
	}

	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds(c)...), kgo.DefaultProduceTopic("latest"))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	const keys, rounds = 5, 40
	latest := map[string]string{}
	for round := range rounds {
		var recs []*kgo.Record
		for k := range keys {
			v := fmt.Sprintf("round %d", round)
			recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "key-%d", k), Value: []byte(v)})
			latest[fmt.Sprintf("key-%d", k)] = v
		}
		if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	err = prod.ProduceSync(ctx, &kgo.Record{Value: []byte("no key")}).FirstErr()
	if !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("keyless record on a compacted topic: %v, want INVALID_RECORD", err)
	}

	tp, _ := c.Controller().Topic("latest")
	leader := c.Broker(tp.Partitions[0].Leader).Replica("latest", 0)
	var cleanedTo int64
	waitFor(t, "the cleaner's pass", func() bool {
		_, cleanedTo = leader.CleanerSections()
		return cleanedTo > 0
	})
	t.Logf("cleaned [0, %d) of LEO %d; log %d bytes", cleanedTo, leader.Log().LogEndOffset(), leader.Log().Size())

	cons, err := kgo.NewClient(kgo.SeedBrokers(seeds(c)...), kgo.ConsumeTopics("latest"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	end := leader.Log().LogEndOffset()
	seen := map[string]int64{}
	got := map[string]string{}
	var next int64
	for next < end {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed up to %d of %d: %v", next, end, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if want := int64(round(string(r.Value)))*keys + int64(keyIndex(string(r.Key))); r.Offset != want {
				t.Errorf("%s=%s at offset %d, produced at %d: offsets moved", r.Key, r.Value, r.Offset, want)
			}
			if r.Offset < cleanedTo {
				if prev, dup := seen[string(r.Key)]; dup {
					t.Errorf("key %s at %d and %d, below the cleaned end %d", r.Key, prev, r.Offset, cleanedTo)
				}
				seen[string(r.Key)] = r.Offset
			}
			got[string(r.Key)] = string(r.Value)
			next = r.Offset + 1
		})
	}
	for k, v := range latest {
		if got[k] != v {
			t.Errorf("key %s reads %q last, want %q", k, got[k], v)
		}
	}

	// Every replica cleans its own log, to the same records at the same
	// offsets.
	for _, id := range tp.Partitions[0].Replicas {
		r := c.Broker(id).Replica("latest", 0)
		waitFor(t, fmt.Sprintf("broker %d's cleaner", id), func() bool { _, d := r.CleanerSections(); return d > 0 })
		bs, err := r.Log().ReadBatches(0, end, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		last := map[string]string{}
		for _, b := range bs {
			for _, rec := range b.Records {
				if want := int64(round(string(rec.Value)))*keys + int64(keyIndex(string(rec.Key))); rec.Offset != want {
					t.Fatalf("broker %d: %s=%s at offset %d, produced at %d", id, rec.Key, rec.Value, rec.Offset, want)
				}
				last[string(rec.Key)] = string(rec.Value)
			}
		}
		for k, v := range latest {
			if last[k] != v {
				t.Fatalf("broker %d: key %s ends with %q, want %q", id, k, last[k], v)
			}
		}
	}

	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "latest", Partition: 0, At: 1})
	res, err := adm.DeleteRecords(ctx, offs)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := res.Lookup("latest", 0); !errors.Is(r.Err, kerr.PolicyViolation) {
		t.Fatalf("DeleteRecords on a compacted topic: %v, want POLICY_VIOLATION", r.Err)
	}
}

// TestLogAppendTimeWithKgo: on a message.timestamp.type=LogAppendTime
// topic with compression.type=gzip, franz-go reads back records stamped
// by the broker (the timestamp type bit set, its lab clock's time) and the
// batch recompressed; ListOffsets by that time finds them.
func TestLogAppendTimeWithKgo(t *testing.T) {
	c := openRunning(t, 1)
	adm := adminClient(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	configs := map[string]*string{"message.timestamp.type": ptr("LogAppendTime"), "compression.type": ptr("gzip")}
	if res, err := adm.CreateTopic(ctx, 1, 1, configs, "stamped"); err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds(c)...), kgo.DefaultProduceTopic("stamped"), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := prod.ProduceSync(ctx, &kgo.Record{Key: []byte("k"), Value: []byte("v"), Timestamp: old}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(seeds(c)...), kgo.ConsumeTopics("stamped"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var rec *kgo.Record
	for rec == nil {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatal(ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) { rec = r })
	}
	if rec.Attrs.TimestampType() != 1 || rec.Timestamp.Equal(old) || rec.Timestamp.Before(old) {
		t.Fatalf("timestamp %v type %d: want the broker's LogAppendTime", rec.Timestamp, rec.Attrs.TimestampType())
	}
	if rec.Attrs.CompressionType() != 1 {
		t.Fatalf("compression %d, want gzip (1), the topic's compression.type", rec.Attrs.CompressionType())
	}
	lo, err := adm.ListOffsetsAfterMilli(ctx, rec.Timestamp.UnixMilli(), "stamped")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := lo.Lookup("stamped", 0); o.Offset != 0 {
		t.Fatalf("ListOffsets at the append time: %+v, want offset 0", o)
	}
}

// TestProduceAnswersLogAppendTime: Kafka's produce response carries the
// time the leader stamped on a LogAppendTime topic's batch (the producer
// learns its records' timestamps from it), and -1 on a CreateTime topic.
func TestProduceAnswersLogAppendTime(t *testing.T) {
	c := openRunning(t, 1)
	adm := adminClient(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for topic, typ := range map[string]string{"appendtime": "LogAppendTime", "createtime": "CreateTime"} {
		if res, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"message.timestamp.type": ptr(typ)}, topic); err != nil || res.Err != nil {
			t.Fatalf("create %s: %v %v", topic, err, res.Err)
		}
	}
	cl, err := wire.Dial(ctx, c.Broker(1).Addr(), "stamps")
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce := func(topic string) int64 {
		t.Helper()
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(9)
		req.Acks, req.TimeoutMillis = 1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = storage.NewBatch([]storage.Record{{Value: []byte("v")}})
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := cl.Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		p := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			t.Fatalf("produce to %s: %v", topic, kerr.ErrorForCode(p.ErrorCode))
		}
		return p.LogAppendTime
	}
	if got := produce("createtime"); got != -1 {
		t.Fatalf("CreateTime topic: LogAppendTime %d, want -1", got)
	}
	stamped := produce("appendtime")
	cons, err := kgo.NewClient(kgo.SeedBrokers(seeds(c)...), kgo.ConsumeTopics("appendtime"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var rec *kgo.Record
	for rec == nil {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatal(ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) { rec = r })
	}
	if stamped < 0 || rec.Timestamp.UnixMilli() != stamped {
		t.Fatalf("LogAppendTime topic: the response said %d, the record reads %d", stamped, rec.Timestamp.UnixMilli())
	}
}

func round(v string) int {
	var n int
	fmt.Sscanf(v, "round %d", &n)
	return n
}

func keyIndex(k string) int {
	var n int
	fmt.Sscanf(k, "key-%d", &n)
	return n
}
