package storage

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"reflect"
	"strconv"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// sealed returns a copy of batch after edit, with its length and CRC-32C
// made right again, so only the edit is wrong.
func sealed(batch []byte, edit func(b []byte) []byte) []byte {
	b := edit(bytes.Clone(batch))
	binary.BigEndian.PutUint32(b[batchLengthOffset:], uint32(len(b)-batchLogOverhead))
	binary.BigEndian.PutUint32(b[batchCRCOffset:], crc32.Checksum(b[batchAttrOffset:], castagnoli))
	return b
}

// withRecords replaces a batch's records with body and sets its codec.
func withRecords(codec int16, body []byte) func([]byte) []byte {
	return func(b []byte) []byte {
		attrs := binary.BigEndian.Uint16(b[batchAttrOffset:])&^compressionMask | uint16(codec)
		binary.BigEndian.PutUint16(b[batchAttrOffset:], attrs)
		return append(b[:batchHeaderSize], body...)
	}
}

// setField writes v at off (a header field) as big-endian of v's size.
func setField[T int16 | int32 | int64](off int, v T) func([]byte) []byte {
	return func(b []byte) []byte {
		switch x := any(v).(type) {
		case int16:
			binary.BigEndian.PutUint16(b[off:], uint16(x))
		case int32:
			binary.BigEndian.PutUint32(b[off:], uint32(x))
		case int64:
			binary.BigEndian.PutUint64(b[off:], uint64(x))
		}
		return b
	}
}

func gzipped(t testing.TB, p []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(p)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Header field offsets used by the cases below.
const (
	lastOffsetDeltaAt = 23
	producerIDAt      = 43
	numRecordsAt      = 57
)

// badBatches are produced record sets Kafka refuses, each with the error it
// answers. good is a valid three-record batch to derive them from.
func badBatches(t testing.TB, good []byte) []struct {
	name    string
	records []byte
	want    *kerr.Error
} {
	body := good[batchHeaderSize:]
	oneRecord := NewBatch([]Record{{Value: []byte("x")}})
	// A record whose offset delta is 5 instead of 1.
	var skewed []byte
	for i, d := range []int32{0, 5} {
		r := kmsg.Record{OffsetDelta: d, Value: []byte{byte('a' + i)}}
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		skewed = r.AppendTo(skewed)
	}
	// A record whose length prefix claims one byte more than its fields.
	padded := kmsg.Record{Value: []byte("p")}
	padded.Length = int32(len(padded.AppendTo(nil)))
	paddedBytes := append(padded.AppendTo(nil), 0)
	return []struct {
		name    string
		records []byte
		want    *kerr.Error
	}{
		{"empty", nil, kerr.InvalidRecord},
		{"short of a header", good[:30], kerr.CorruptMessage},
		{"bad CRC", func() []byte { b := bytes.Clone(good); b[len(b)-1] ^= 1; return b }(), kerr.CorruptMessage},
		{"magic 1", func() []byte { b := bytes.Clone(good); b[batchMagicOffset] = 1; return b }(), kerr.CorruptMessage},
		{"two batches", append(bytes.Clone(good), good...), kerr.InvalidRecord},
		{"codec 7", sealed(good, withRecords(7, body)), kerr.UnsupportedCompressionType},
		{"codec 5", sealed(good, withRecords(5, body)), kerr.UnsupportedCompressionType},
		{"gzip flag on plain bytes", sealed(good, withRecords(1, body)), kerr.CorruptMessage},
		{"snappy flag on plain bytes", sealed(good, withRecords(2, body)), kerr.CorruptMessage},
		{"zstd flag on gzip bytes", sealed(good, withRecords(4, gzipped(t, body))), kerr.CorruptMessage},
		{"records that do not parse", sealed(good, withRecords(0, bytes.Repeat([]byte{0xff}, 40))), kerr.CorruptMessage},
		{"gzip of garbage records", sealed(good, withRecords(1, gzipped(t, []byte{6, 1, 2, 3}))), kerr.CorruptMessage},
		{"fewer records than the count", sealed(good, withRecords(0, body[:len(body)/2])), kerr.CorruptMessage},
		{"more records than the count", sealed(good, withRecords(0, append(bytes.Clone(body), oneRecord[batchHeaderSize:]...))), kerr.InvalidRecord},
		{"count and last offset delta disagree", sealed(good, setField(numRecordsAt, int32(2))), kerr.InvalidRecord},
		{"zero records", sealed(good, func(b []byte) []byte {
			return setField(lastOffsetDeltaAt, int32(-1))(setField(numRecordsAt, int32(0))(b[:batchHeaderSize]))
		}), kerr.CorruptMessage},
		{"offset deltas skip", sealed(good, func(b []byte) []byte {
			b = withRecords(0, skewed)(b)
			return setField(lastOffsetDeltaAt, int32(1))(setField(numRecordsAt, int32(2))(b))
		}), kerr.InvalidRecord},
		{"record longer than its fields", sealed(oneRecord, withRecords(0, paddedBytes)), kerr.InvalidRecord},
		{"base offset not 0", sealed(good, setField(0, int64(7))), kerr.InvalidRecord},
		{"control batch", sealed(good, setField(batchAttrOffset, int16(controlBatchBit))), kerr.InvalidRecord},
		{"producer id without sequence", sealed(good, setField(producerIDAt, int64(9))), kerr.InvalidRecord},
	}
}

func goodBatch() []byte {
	return NewBatch([]Record{{Key: []byte("k"), Value: []byte("v0"), Timestamp: 10},
		{Value: []byte("v1"), Headers: []kmsg.Header{{Key: "h", Value: []byte("1")}}, Timestamp: 11},
		{Value: nil, Timestamp: 12}})
}

// TestValidateProducedBatch refuses each kind of bad batch with Kafka's code
// and passes good batches in every codec.
func TestValidateProducedBatch(t *testing.T) {
	good := goodBatch()
	for _, tc := range badBatches(t, good) {
		_, err := ValidateProducedBatch(tc.records)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %s", tc.name, err, tc.want.Message)
		}
	}
	body := good[batchHeaderSize:]
	for name, b := range map[string][]byte{
		"none":   good,
		"gzip":   sealed(good, withRecords(1, gzipped(t, body))),
		"snappy": sealed(good, withRecords(2, s2.EncodeSnappy(nil, body))),
	} {
		h, err := ValidateProducedBatch(b)
		if err != nil || h.NumRecords != 3 {
			t.Errorf("%s: %v (%d records)", name, err, h.NumRecords)
		}
	}
}

// FuzzValidateProducedBatch feeds arbitrary bytes, and good batches with one
// byte changed and the CRC fixed, to the validator: it must never panic, and
// whatever it passes must decode completely, as a consumer would decode it.
func FuzzValidateProducedBatch(f *testing.F) {
	good := goodBatch()
	f.Add(good, -1, byte(0))
	for _, tc := range badBatches(f, good) {
		f.Add(tc.records, -1, byte(0))
	}
	f.Add(good, batchHeaderSize+3, byte(0x7f)) // a record field
	f.Add(good, batchAttrOffset+1, byte(3))    // lz4 flag on plain bytes
	for _, tc := range poisonCases() {         // also in testdata/fuzz
		f.Add(poisonBatch(tc.rec), -1, byte(0))
	}
	f.Fuzz(func(t *testing.T, records []byte, at int, b byte) {
		if at >= batchAttrOffset && at < len(records) { // a CRC-covered byte: fix the CRC up
			records = sealed(records, func(r []byte) []byte { r[at] = b; return r })
		}
		h, err := ValidateProducedBatch(records)
		if err != nil {
			var ke *kerr.Error
			if !errors.As(err, &ke) {
				t.Fatalf("error without a Kafka code: %v", err)
			}
			return
		}
		d, err := DecodeBatch(records)
		if err != nil {
			t.Fatalf("validated batch does not decode: %v", err)
		}
		if int32(len(d.Records)) != h.NumRecords {
			t.Fatalf("validated batch decodes to %d records, header says %d", len(d.Records), h.NumRecords)
		}
		for i, r := range d.Records {
			if r.Offset != int64(i) {
				t.Fatalf("record %d at offset %d", i, r.Offset)
			}
		}
		// The reference: franz-go's kmsg reads every record and writes it
		// back byte for byte.
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(records); err != nil {
			t.Fatalf("kmsg.RecordBatch: %v", err)
		}
		raw, err := decompress(h.Attributes&compressionMask, rb.Records)
		if err != nil {
			t.Fatal(err)
		}
		recordsRoundTrip(t, raw, h.NumRecords)
	})
}

// TestDecodedTailsOwnTheirBytes checks that the tails validation and
// CopyBatchTail decode match DecodeBatchTail in every codec, and stay intact
// when the pooled buffer they were decompressed into is reused.
func TestDecodedTailsOwnTheirBytes(t *testing.T) {
	good := goodBatch()
	body := good[batchHeaderSize:]
	other := NewBatch([]Record{{Key: []byte("zzzzzzzz"), Value: bytes.Repeat([]byte("z"), 64), Timestamp: 20}})
	otherSnappy := sealed(other, withRecords(2, s2.EncodeSnappy(nil, other[batchHeaderSize:])))
	for name, b := range map[string][]byte{
		"none":   good,
		"gzip":   sealed(good, withRecords(1, gzipped(t, body))),
		"snappy": sealed(good, withRecords(2, s2.EncodeSnappy(nil, body))),
	} {
		for _, tail := range []int{0, 2, 10} {
			want, err := DecodeBatchTail(bytes.Clone(b), tail)
			if err != nil {
				t.Fatal(err)
			}
			_, validated, err := ValidateProducedBatchTail(b, tail)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			copied, err := CopyBatchTail(b, tail)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			// Decompress other batches into the pooled buffers.
			for range 4 {
				if _, _, err := ValidateProducedBatchTail(otherSnappy, 1); err != nil {
					t.Fatal(err)
				}
				if _, err := CopyBatchTail(otherSnappy, 1); err != nil {
					t.Fatal(err)
				}
			}
			if !reflect.DeepEqual(validated, want.Records) && !(len(validated) == 0 && len(want.Records) == 0) {
				t.Errorf("%s tail %d: validation kept %#v, want %#v", name, tail, validated, want.Records)
			}
			if !reflect.DeepEqual(copied.Records, want.Records) {
				t.Errorf("%s tail %d: CopyBatchTail %+v, want %+v", name, tail, copied.Records, want.Records)
			}
		}
	}
}

// recordSize is the encoded size of r, length prefix included: what
// r.AppendTo would write (the reference scanRecord is checked against).
func recordSize(r *kmsg.Record) int {
	bytesLen := func(b []byte) int {
		if b == nil {
			return kbin.VarintLen(-1)
		}
		return kbin.VarintLen(int32(len(b))) + len(b)
	}
	n := 1 + kbin.VarlongLen(r.TimestampDelta64) + kbin.VarintLen(r.OffsetDelta) +
		bytesLen(r.Key) + bytesLen(r.Value) + kbin.VarintLen(int32(len(r.Headers)))
	for _, hd := range r.Headers {
		n += kbin.VarintLen(int32(len(hd.Key))) + len(hd.Key) + bytesLen(hd.Value)
	}
	return kbin.VarintLen(r.Length) + n
}

// FuzzScanRecord checks scanRecord against decoding with
// kmsg.Record.UnsafeReadFrom and sizing the decoded record: both fail alike
// and otherwise agree on the offset delta and the size.
func FuzzScanRecord(f *testing.F) {
	for _, r := range []Record{{Key: []byte("k"), Value: []byte("v0"), Timestamp: 10},
		{Value: []byte("v1"), Headers: []kmsg.Header{{Key: "h", Value: []byte("1")}, {Key: "", Value: nil}}, Timestamp: 11},
		{Value: bytes.Repeat([]byte("x"), 300), Timestamp: -5}} {
		b := NewBatch([]Record{r})
		f.Add(b[batchHeaderSize:])
	}
	f.Add([]byte{0x02, 0x00, 0x01, 0x02, 0x01, 0x01, 0x7f})                         // null key and value, header count -64
	f.Add([]byte{0x10, 0x00, 0x00, 0x00, 0x80, 0x00, 0x01, 0x00})                   // a non-minimal varint
	f.Add([]byte{0x80})                                                             // a varint cut short
	f.Add([]byte{0x0c, 0x00, 0x80, 0x00, 0x02, 0x81, 0x00, 0x04, 0x61, 0x62, 0x00}) // two-byte varints kmsg writes in one, a null key
	f.Add([]byte{0x0e, 0x00, 0x00, 0xd0, 0x8c, 0x01, 0x01, 0x04, 0x61, 0x62, 0x00}) // offset delta 9,000: three bytes
	f.Add([]byte{0x0e, 0x00, 0x00, 0x82, 0x80, 0x00, 0x01, 0x04, 0x61, 0x62, 0x00}) // offset delta 1 in three bytes
	f.Fuzz(func(t *testing.T, rec []byte) {
		offsetDelta, size, ok := scanRecord(rec)
		var r kmsg.Record
		err := r.UnsafeReadFrom(rec)
		if ok != (err == nil) {
			t.Fatalf("scanRecord ok %v, kmsg error %v", ok, err)
		}
		if ok && (offsetDelta != r.OffsetDelta || size != recordSize(&r)) {
			t.Fatalf("scanRecord: offset delta %d size %d; kmsg: %d %d", offsetDelta, size, r.OffsetDelta, recordSize(&r))
		}
		// The fast path, where it answers, answers as the general one.
		if d, n, ok := scanPlainRecord(rec); ok {
			if wd, wn, wok := scanAnyRecord(rec); !wok || d != wd || n != wn {
				t.Fatalf("scanPlainRecord: %d %d; scanAnyRecord: %d %d %v", d, n, wd, wn, wok)
			}
		}
	})
}

// TestRecordLength checks shortLength against binary.Varint, and
// uvarintShort against kbin.Uvarint, on every encoding of up to two bytes
// and on longer and cut-short ones.
func TestRecordLength(t *testing.T) {
	var cases [][]byte
	for a := range 256 {
		cases = append(cases, []byte{byte(a)})
		for b := range 256 {
			cases = append(cases, []byte{byte(a), byte(b)})
		}
	}
	cases = append(cases, nil, binary.AppendVarint(nil, 1<<20), binary.AppendVarint(nil, -1<<40), []byte{0x80, 0x80})
	for _, c := range cases {
		wv, wn := binary.Varint(c)
		if v, n := shortLength(c); n > 0 && (v != wv || n != wn) {
			t.Fatalf("% x: shortLength %d, %d; binary.Varint %d, %d", c, v, n, wv, wn)
		}
		if _, n := shortLength(c); n == 0 && len(c) == 1 && c[0] < 0x80 || n == 0 && len(c) == 2 && c[1] < 0x80 {
			t.Fatalf("% x: shortLength passes a short varint on", c)
		}
		if u, n := uvarintShort(c); n > 0 {
			if wu, wn := kbin.Uvarint(c); u != wu || n != wn {
				t.Fatalf("% x: uvarintShort %d, %d; kbin.Uvarint %d, %d", c, u, n, wu, wn)
			}
		}
	}
}

// FuzzScanPlainRun checks that scanPlainRun passes only records the
// record-by-record path passes: each record it passed, read again with
// shortLength and scanRecord, decodes, fills its length exactly and has the
// offset delta it was due.
func FuzzScanPlainRun(f *testing.F) {
	for _, next := range []int32{0, 63, 8190, 1 << 20} {
		recs := make([]Record, 3)
		for i := range recs {
			recs[i] = Record{Value: bytes.Repeat([]byte("v"), 100*i), Timestamp: int64(i * 300)}
		}
		recs[1].Key = []byte("k")
		body := NewBatch(recs)[batchHeaderSize:]
		f.Add(body, int32(0))
		f.Add(body, next)
	}
	f.Add([]byte{0x16, 0x00, 0x00, 0x00, 0x01, 0x04, 0x61, 0x62, 0x00, 0x00, 0x00}, int32(0))
	f.Fuzz(func(t *testing.T, raw []byte, next int32) {
		if next < 0 || next > 1<<22 {
			return
		}
		n, used := scanPlainRun(raw, next, next+8)
		if n < 0 || n > 8 || used < 0 || used > len(raw) {
			t.Fatalf("scanPlainRun passed %d records in %d of %d bytes", n, used, len(raw))
		}
		rest := raw
		for i := next; i < next+n; i++ {
			length, vn := shortLength(rest)
			if vn == 0 {
				length, vn = binary.Varint(rest)
			}
			if vn <= 0 || length < 0 || int64(len(rest)-vn) < length {
				t.Fatalf("record %d: scanPlainRun passed a record cut short", i)
			}
			rec := rest[:vn+int(length)]
			rest = rest[len(rec):]
			if delta, size, ok := scanRecord(rec); !ok || size != len(rec) || delta != i {
				t.Fatalf("record %d: scanPlainRun passed it; scanRecord: delta %d size %d of %d, ok %v", i, delta, size, len(rec), ok)
			}
		}
		if len(raw)-len(rest) != used {
			t.Fatalf("scanPlainRun says %d bytes, its records take %d", used, len(raw)-len(rest))
		}
	})
}

// TestScanPlainRunPassesProducerRecords checks that the run passes what
// producers write, so validation takes its fast loop: null and non-null
// keys, values up to a few KiB, offset deltas of one, two and three bytes,
// timestamps within a few seconds of the first.
func TestScanPlainRunPassesProducerRecords(t *testing.T) {
	recs := make([]Record, 10_000)
	for i := range recs {
		recs[i] = Record{Value: bytes.Repeat([]byte("x"), i%5000), Timestamp: int64(i / 100)} // ms apart
		if i%3 == 0 {
			recs[i].Key = []byte(strconv.Itoa(i))
		}
	}
	body := NewBatch(recs)[batchHeaderSize:]
	if n, used := scanPlainRun(body, 0, int32(len(recs))); n != int32(len(recs)) || used != len(body) {
		t.Fatalf("scanPlainRun passed %d of %d records, %d of %d bytes", n, len(recs), used, len(body))
	}
	// A record with headers is not plain: the run stops before it.
	recs[7].Headers = []kmsg.Header{{Key: "h"}}
	if n, _ := scanPlainRun(NewBatch(recs)[batchHeaderSize:], 0, int32(len(recs))); n != 7 {
		t.Fatalf("scanPlainRun passed %d records, want the 7 before the one with a header", n)
	}
}

// TestNewIdempotentBatch checks that the producer fields land in the header
// and that the CRC-32C (checked here with hash/crc32) covers them.
func TestNewIdempotentBatch(t *testing.T) {
	b := NewIdempotentBatch([]Record{{Value: []byte("v"), Timestamp: 1}, {Value: []byte("w"), Timestamp: 2}}, 7, 3, 41)
	h, err := ValidateProducedBatch(b)
	if err != nil {
		t.Fatal(err)
	}
	if h.ProducerID != 7 || h.ProducerEpoch != 3 || h.BaseSequence != 41 || h.NumRecords != 2 {
		t.Fatalf("header %+v", h)
	}
	if want := crc32.Checksum(b[batchAttrOffset:], castagnoli); h.CRC != want {
		t.Fatalf("CRC %08x, want %08x", h.CRC, want)
	}
	if h := ScanBatchHeaders(NewBatch([]Record{{Value: []byte("v")}}))[0]; h.ProducerID != -1 || h.ProducerEpoch != -1 || h.BaseSequence != -1 {
		t.Fatalf("NewBatch's producer fields %+v", h)
	}
}
