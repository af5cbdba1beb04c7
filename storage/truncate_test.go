package storage

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestTruncateTo(t *testing.T) {
	cfg := smallConfig()
	d, l, clock := openTestLog(t, cfg)
	produce(t, l, 1, 0, 30, 2, 100)
	produce(t, l, 2, 60, 30, 2, 100)
	segsBefore, _ := l.Segments()
	leo, err := l.TruncateTo(41) // inside the batch [40,41]: the whole batch goes
	if err != nil || leo != 40 {
		t.Fatalf("TruncateTo(41) = %d, %v; want 40", leo, err)
	}
	if got := l.Epochs(); !reflect.DeepEqual(got, []EpochEntry{{Epoch: 1, StartOffset: 0}}) {
		t.Fatalf("epochs after truncation %v", got)
	}
	segs, _ := l.Segments()
	if len(segs) >= len(segsBefore) || !segs[len(segs)-1].Active || segs[len(segs)-1].NextOffset != 40 {
		t.Fatalf("segments after truncation: %+v", segs)
	}
	files, _ := filepath.Glob(filepath.Join(l.Dir(), "*.log"))
	if len(files) != len(segs) {
		t.Fatalf("%d .log files for %d segments", len(files), len(segs))
	}
	checkRebuiltIndexes(t, l)
	if rp := l.RecoveryPoint(); rp > 40 {
		t.Fatalf("recovery point %d above the LEO", rp)
	}
	// Appends continue at the new LEO with the new epoch.
	produce(t, l, 3, 40, 2, 2, 100)
	if got := l.Epochs(); !reflect.DeepEqual(got, []EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 3, StartOffset: 40}}) {
		t.Fatalf("epochs after append %v", got)
	}
	// The truncation is durable: a power cut must not bring back epoch 2.
	lost, err := d.PowerLoss()
	if err != nil {
		t.Fatal(err)
	}
	_, l2 := reopen(t, d, clock, cfg)
	recs := readAll(t, l2, l2.LogEndOffset())
	for _, r := range recs {
		if r.Offset >= 40 && bytes.Equal(r.Value, value(int(r.Offset), 100)) && r.Offset >= 60 {
			t.Fatalf("truncated record %d came back after power loss (lost %v)", r.Offset, lost)
		}
	}
	if l2.LogEndOffset() < 40 {
		t.Fatalf("LEO %d: fsynced records below the truncation point were lost", l2.LogEndOffset())
	}
}

func TestTruncateBelowLogStartEmptiesTheLog(t *testing.T) {
	_, l, _ := openTestLog(t, smallConfig())
	produce(t, l, 0, 0, 30, 2, 100)
	if err := l.SetLogStartOffset(20, 30); err != nil {
		t.Fatal(err)
	}
	if leo, err := l.TruncateTo(10); err != nil || leo != 10 {
		t.Fatalf("TruncateTo below log start = %d, %v", leo, err)
	}
	if l.LogStartOffset() != 10 || l.LogEndOffset() != 10 || len(l.Epochs()) != 0 {
		t.Fatalf("log start %d LEO %d epochs %v", l.LogStartOffset(), l.LogEndOffset(), l.Epochs())
	}
	produce(t, l, 5, 10, 1, 1, 10)
	if recs := readAll(t, l, 11); len(recs) != 1 || recs[0].Offset != 10 {
		t.Fatalf("records %v", recs)
	}
}

func TestRetentionDeletesWholeSegments(t *testing.T) {
	cfg := smallConfig()
	d, l, clock := openTestLog(t, cfg)
	produce(t, l, 0, 0, 60, 2, 100)
	segs, _ := l.Segments()
	if len(segs) < 5 {
		t.Fatalf("%d segments", len(segs))
	}
	// retention.bytes: delete oldest segments while the rest still hold at
	// least retention.bytes — but never at or past the upper bound.
	cfg.RetentionBytes = 2 * cfg.SegmentBytes
	cfg.RetentionMs = -1 // the test's timestamps are from 1970
	l.SetConfig(cfg)
	bound := segs[2].BaseOffset
	deleted, err := l.ApplyRetention(bound)
	if err != nil {
		t.Fatal(err)
	}
	if len(deleted) != 2 || deleted[0].BaseOffset != 0 || deleted[1].BaseOffset != segs[1].BaseOffset {
		t.Fatalf("deleted %+v with upper bound %d", deleted, bound)
	}
	if l.LogStartOffset() != bound {
		t.Fatalf("log start %d, want %d", l.LogStartOffset(), bound)
	}
	if _, err := l.Read(0, 1<<40, 100); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below log start: %v", err)
	}
	deleted, _ = l.ApplyRetention(l.LogEndOffset())
	var total int64
	left, _ := l.Segments()
	for _, s := range left {
		total += s.LogBytes
	}
	// Kafka's rule: a segment goes only if the rest still hold retention.bytes.
	if total < cfg.RetentionBytes || total-left[0].LogBytes >= cfg.RetentionBytes {
		t.Fatalf("size retention left %d bytes in %d segments (deleted %d more)", total, len(left), len(deleted))
	}
	if !left[len(left)-1].Active {
		t.Fatal("active segment deleted")
	}

	// retention.ms: by the newest timestamp in each segment.
	cfg.RetentionBytes = -1
	cfg.RetentionMs = time.Hour
	l.SetConfig(cfg)
	if deleted, _ := l.ApplyRetention(l.LogEndOffset()); len(deleted) != len(left)-1 {
		t.Fatalf("time retention deleted %d of %d segments", len(deleted), len(left))
	}
	after, _ := l.Segments()
	if len(after) != 1 || !after[0].Active {
		t.Fatalf("time retention left %d segments", len(after))
	}
	if l.LogStartOffset() != after[0].BaseOffset {
		t.Fatalf("log start %d, first segment %d", l.LogStartOffset(), after[0].BaseOffset)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	_, l2 := reopen(t, d, clock, cfg)
	if l2.LogStartOffset() != after[0].BaseOffset {
		t.Fatalf("log start %d after reopen", l2.LogStartOffset())
	}
}

// TestReadersNeverSeePartialBatches runs readers against a writer; every
// region a reader gets must decode as whole batches.
func TestReadersNeverSeePartialBatches(t *testing.T) {
	_, l, _ := openTestLog(t, smallConfig())
	produce(t, l, 0, 0, 1, 1, 10)
	var wg sync.WaitGroup
	done := make(chan struct{})
	errs := make(chan error, 4)
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				d, err := l.Read(0, 1<<40, 1<<20)
				if err != nil {
					errs <- err
					return
				}
				b, err := d.Region.ReadAll()
				if err == nil {
					err = splitBatches(b, func(BatchHeader, []byte) error { return nil })
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	produce(t, l, 0, 1, 200, 3, 50)
	close(done)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
}

// TestCompressedBatchesStoredAsReceived appends batches compressed with each
// codec and checks the bytes on disk are the producer's, offsets aside.
func TestCompressedBatchesStoredAsReceived(t *testing.T) {
	_, l, _ := openTestLog(t, DefaultConfig())
	recs := []Record{{Key: []byte("k1"), Value: []byte("hello"), Timestamp: 5}, {Value: bytes.Repeat([]byte("z"), 300), Timestamp: 9}}
	codecs := map[int16]func([]byte) []byte{
		1: func(b []byte) []byte {
			var buf bytes.Buffer
			w := gzip.NewWriter(&buf)
			w.Write(b)
			w.Close()
			return buf.Bytes()
		},
		2: func(b []byte) []byte { return s2.EncodeSnappy(nil, b) },
		3: func(b []byte) []byte {
			var buf bytes.Buffer
			w := lz4.NewWriter(&buf)
			w.Write(b)
			w.Close()
			return buf.Bytes()
		},
		4: func(b []byte) []byte {
			w, _ := zstd.NewWriter(nil)
			return w.EncodeAll(b, nil)
		},
	}
	for codec := int16(1); codec <= 4; codec++ {
		batch := compressBatch(t, NewBatch(recs), codec, codecs[codec])
		sent := append([]byte(nil), batch...)
		info, err := l.AppendAsLeader(batch, 7)
		if err != nil {
			t.Fatalf("codec %d: %v", codec, err)
		}
		d, _ := l.Read(info.FirstOffset, 1<<40, 1)
		stored, _ := d.Region.ReadAll()
		if !bytes.Equal(stored[batchAttrOffset:], sent[batchAttrOffset:]) || !bytes.Equal(stored[8:12], sent[8:12]) {
			t.Fatalf("codec %d: stored batch differs from the one received", codec)
		}
		b, err := DecodeBatch(stored)
		if err != nil {
			t.Fatalf("codec %d: %v", codec, err)
		}
		if b.Header.Compression() == "none" || len(b.Records) != 2 || string(b.Records[0].Value) != "hello" || b.Records[1].Offset != info.FirstOffset+1 {
			t.Fatalf("codec %d decoded %+v", codec, b)
		}
	}
}

// compressBatch re-encodes an uncompressed batch with its records compressed.
func compressBatch(t *testing.T, batch []byte, codec int16, compress func([]byte) []byte) []byte {
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(batch); err != nil {
		t.Fatal(err)
	}
	rb.Attributes |= codec
	rb.Records = compress(rb.Records)
	rb.Length = int32(batchHeaderSize - batchLogOverhead + len(rb.Records))
	out := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(out[batchCRCOffset:], crc32.Checksum(out[batchAttrOffset:], castagnoli))
	return out
}

func TestTruncateFullyAndStartAtPastLEO(t *testing.T) {
	_, l, _ := openTestLog(t, smallConfig())
	produce(t, l, 0, 0, 3, 1, 10)
	if err := l.TruncateFullyAndStartAt(100); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 100 || l.LogEndOffset() != 100 {
		t.Fatalf("log start %d LEO %d, want 100 100", l.LogStartOffset(), l.LogEndOffset())
	}
	hs, err := ParseBatches(NewBatch([]Record{{Value: []byte("a")}, {Value: []byte("b")}}))
	if err != nil || len(hs) != 1 || hs[0].NumRecords != 2 {
		t.Fatalf("ParseBatches: %v %v", hs, err)
	}
}

func TestDecodeBatchTail(t *testing.T) {
	var recs []Record
	for i := 0; i < 10; i++ {
		recs = append(recs, Record{Value: value(i, 5), Timestamp: int64(i)})
	}
	b, err := DecodeBatchTail(NewBatch(recs), 3)
	if err != nil || len(b.Records) != 3 || b.Records[0].Offset != 7 || !bytes.Equal(b.Records[2].Value, value(9, 5)) || b.Records[2].Timestamp != 9 {
		t.Fatalf("tail: %+v %v", b.Records, err)
	}
	if all, _ := DecodeBatchTail(NewBatch(recs), -1); len(all.Records) != 10 {
		t.Fatalf("all: %d records", len(all.Records))
	}
}
