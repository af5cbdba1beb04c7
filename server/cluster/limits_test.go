package cluster

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawBatch encodes a RecordBatch v2 with kmsg around records as given (no
// checks), with a correct CRC-32C: only what the case breaks is wrong.
func rawBatch(attrs int16, numRecords, lastOffsetDelta int32, records []byte) []byte {
	b := kmsg.RecordBatch{Magic: 2, Attributes: attrs, LastOffsetDelta: lastOffsetDelta, FirstTimestamp: 1, MaxTimestamp: 1,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: numRecords, Records: records}
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}

// plainRecords encodes values as records with the given offset deltas.
func plainRecords(deltas []int32, values ...string) []byte {
	var out []byte
	for i, v := range values {
		r := kmsg.Record{OffsetDelta: deltas[i], Value: []byte(v)}
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		out = r.AppendTo(out)
	}
	return out
}

// TestProduceValidation sends, over a real Kafka connection, batches whose
// CRC is right but whose contents are not (the ones that used to poison a
// partition): each is refused with Kafka's code, nothing is appended, and
// franz-go still reads the partition from the start afterwards.
func TestProduceValidation(t *testing.T) {
	c := openRunning(t, 1)
	if _, err := c.CreateTopic("checked", 1, 1, nil); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(c)...), kgo.DefaultProduceTopic("checked"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("before")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	two := plainRecords([]int32{0, 1}, "a", "b")
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte{6, 1, 2, 3}) // a record that does not parse
	zw.Close()
	for _, tc := range []struct {
		name    string
		records []byte
		want    *kerr.Error
	}{
		{"records that do not parse", rawBatch(0, 2, 1, bytes.Repeat([]byte{0xff}, 24)), kerr.CorruptMessage},
		{"compression codec 7", rawBatch(7, 2, 1, two), kerr.UnsupportedCompressionType},
		{"gzip flag on plain bytes", rawBatch(1, 2, 1, two), kerr.CorruptMessage},
		{"gzip of a record that does not parse", rawBatch(1, 1, 0, gz.Bytes()), kerr.CorruptMessage},
		{"record count above the records", rawBatch(0, 3, 2, two), kerr.CorruptMessage},
		{"count and last offset delta disagree", rawBatch(0, 2, 4, two), kerr.InvalidRecord},
		{"offset deltas skip", rawBatch(0, 2, 1, plainRecords([]int32{0, 7}, "a", "b")), kerr.InvalidRecord},
		{"two batches", append(rawBatch(0, 2, 1, two), rawBatch(0, 2, 1, two)...), kerr.InvalidRecord},
	} {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = 1, 5000
		tp := kmsg.NewProduceRequestTopic()
		tp.Topic = "checked"
		p := kmsg.NewProduceRequestTopicPartition()
		p.Records = tc.records
		tp.Partitions = append(tp.Partitions, p)
		req.Topics = append(req.Topics, tp)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		rp := resp.Topics[0].Partitions[0]
		if got := kerr.ErrorForCode(rp.ErrorCode); !errors.Is(got, tc.want) {
			t.Errorf("%s: got %v, want %s", tc.name, got, tc.want.Message)
		}
		if rp.ErrorMessage == nil {
			t.Errorf("%s: no error message for the producer", tc.name)
		}
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	seen := consumeAll(t, c, "checked", 1)
	if len(seen) != 2 || seen["before"] != 1 || seen["after"] != 1 {
		t.Fatalf("consumed %v, want before and after once each", seen)
	}
}

// fetchOf is a Fetch (as a consumer) of topic's partition at offset 0,
// repeated copies times; it names the topic by name and by id, since the
// client picks the version (v13+ carry ids).
func fetchOf(c *Cluster, topic string, copies int, maxBytes int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.MaxBytes, req.MaxWaitMillis = 12, -1, maxBytes, 0
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	if t, ok := c.Controller().Topic(topic); ok {
		ft.TopicID = t.ID
	}
	ft.Partitions = make([]kmsg.FetchRequestTopicPartition, copies)
	for i := range ft.Partitions {
		p := kmsg.NewFetchRequestTopicPartition()
		p.PartitionMaxBytes = 1 << 20
		ft.Partitions[i] = p
	}
	req.Topics = []kmsg.FetchRequestTopic{ft}
	return req
}

// TestFetchDuplicatePartitions sends one Fetch naming the same partition
// 100,000 times: it is answered once, as Kafka answers it, with at most the
// request's MaxBytes of records (plus one batch), and the broker's memory
// does not grow with the copies. Then a Fetch of many partitions with data
// stays within a small MaxBytes.
func TestFetchDuplicatePartitions(t *testing.T) {
	c := openRunning(t, 1)
	if _, err := c.CreateTopic("dup", 8, 1, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	value := bytes.Repeat([]byte("x"), 1000)
	for p := range int32(8) {
		recs := make([]Record, 10)
		for i := range recs {
			recs[i] = Record{Value: value}
		}
		for range 4 { // 4 batches of ~10 KB per partition
			if _, err := c.Produce(ctx, "dup", p, 1, recs, time.Second); err != nil {
				t.Fatal(err)
			}
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(c)...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	resp, err := fetchOf(c, "dup", 100_000, 50<<20).RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	grown := after.TotalAlloc - before.TotalAlloc
	t.Logf("one fetch of 100,000 copies: %d KB allocated in the process", grown>>10)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("answered %d topics, %d partitions; want partition 0 once", len(resp.Topics), len(resp.Topics[0].Partitions))
	}
	if got := len(resp.Topics[0].Partitions[0].RecordBatches); got == 0 || got > 64<<10 {
		t.Fatalf("partition 0: %d bytes of records, want its ~40 KB", got)
	}
	// The request is ~1.4 MB on the wire and is decoded twice by the
	// listener (the trailing-bytes check) and built once by the test: 45 MB
	// in all (59 MB under -race). Answering all 100,000 copies allocated
	// 135 MB more, besides the reads.
	if grown > 96<<20 {
		t.Errorf("the fetch allocated %d MB", grown>>20)
	}

	many := fetchOf(c, "dup", 0, 15_000)
	for p := range int32(8) {
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.PartitionMaxBytes = p, 1<<20
		many.Topics[0].Partitions = append(many.Topics[0].Partitions, fp)
	}
	resp, err = many.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, p := range resp.Topics[0].Partitions {
		total += len(p.RecordBatches)
	}
	if limit := 15_000 + 11_000; total == 0 || total > limit { // MaxBytes plus one ~10 KB batch
		t.Fatalf("a fetch with MaxBytes 15000 over 8 partitions carried %d bytes, want at most %d", total, limit)
	}
}
