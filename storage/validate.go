package storage

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Batch attribute bits a producer may not set or must set consistently
// (Kafka's RecordBatch: bit 3 timestamp type, 4 transactional, 5 control).
const (
	controlBatchBit = 0x20
	maxKnownCodec   = 4 // zstd; 5–7 are unassigned
)

// ValidateProducedBatch checks the record set a producer sent for one
// partition the way Kafka's broker does before it appends anything
// (ProduceRequest.validateRecords, then LogValidator): exactly one
// RecordBatch v2 with base offset 0 and a good CRC-32C; a compression codec
// Kafka knows, whose bytes decompress; every record parses and fills exactly
// its length prefix; the records number NumRecords, which is
// LastOffsetDelta+1, and their offset deltas run 0, 1, …; no control batch;
// an idempotent batch (producer id ≥ 0) has a base sequence. Without
// message.timestamp.* configs in the lab, timestamps only have to parse.
// It returns the batch's header. The error wraps UNSUPPORTED_COMPRESSION_TYPE
// for codecs 5–7, MESSAGE_TOO_LARGE for records that decompress past
// MaxDecompressedBatchBytes, CORRUPT_MESSAGE for bytes that do not decode,
// and INVALID_RECORD for a batch that decodes but breaks a rule. An empty record
// set is INVALID_RECORD. A batch that passes cannot stop a consumer at its
// offset: that is the point, since a bad batch once appended is replicated
// and served to every reader.
func ValidateProducedBatch(records []byte) (BatchHeader, error) {
	h, _, err := ValidateProducedBatchTail(records, 0)
	return h, err
}

// ValidateProducedBatchTail is ValidateProducedBatch that also returns the
// batch's last tail records, decoded by the same pass (offsets relative to
// the produced batch's base offset 0; keys, values and headers copied), so
// the leader can show what it appended without decompressing the batch
// again.
func ValidateProducedBatchTail(records []byte, tail int) (BatchHeader, []DecodedRecord, error) {
	if len(records) == 0 {
		return BatchHeader{}, nil, fmt.Errorf("%w: the produce request has no record batch for this partition", kerr.InvalidRecord)
	}
	if len(records) < batchHeaderSize {
		return BatchHeader{}, nil, fmt.Errorf("%w: %d bytes cannot hold a record batch header (%d bytes)", ErrCorruptMessage, len(records), batchHeaderSize)
	}
	h, err := parseBatchHeader(records)
	if err != nil {
		return h, nil, err
	}
	if h.Size() > int64(len(records)) {
		return h, nil, fmt.Errorf("%w: the batch says %d bytes, %d were sent", ErrCorruptMessage, h.Size(), len(records))
	}
	if h.Size() < int64(len(records)) {
		return h, nil, fmt.Errorf("%w: a produce request may carry exactly one record batch per partition; %d bytes follow the first", kerr.InvalidRecord, int64(len(records))-h.Size())
	}
	if _, err := checkBatch(records); err != nil {
		return h, nil, err
	}
	if err := validateBatchHeader(h); err != nil {
		return h, nil, err
	}
	codec := h.Attributes & compressionMask
	if codec > maxKnownCodec {
		return h, nil, fmt.Errorf("%w: compression codec %d is not one Kafka knows (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd)", kerr.UnsupportedCompressionType, codec)
	}
	buf := getDecodeBuf()
	raw, err := decompressTo(*buf, codec, records[batchHeaderSize:], MaxDecompressedBatchBytes)
	defer putDecodeBuf(buf, codec, raw)
	if errors.Is(err, errInflates) {
		return h, nil, fmt.Errorf("%w: the %s records of a %d-byte batch decompress to more than %d bytes (the lab's bound on a produced batch, MaxDecompressedBatchBytes)",
			kerr.MessageTooLarge, h.Compression(), len(records), MaxDecompressedBatchBytes)
	}
	if err != nil {
		return h, nil, fmt.Errorf("%w: the records do not decompress as %s: %v", ErrCorruptMessage, h.Compression(), err)
	}
	kept, err := validateRecords(h, raw, tail)
	if err != nil {
		return h, nil, err
	}
	return h, kept, nil
}

// validateBatchHeader checks the header fields LogValidator.validateBatch
// checks for a batch from a client.
func validateBatchHeader(h BatchHeader) error {
	switch {
	case h.BaseOffset != 0:
		return fmt.Errorf("%w: a produced batch has base offset 0 (the broker assigns offsets), not %d", kerr.InvalidRecord, h.BaseOffset)
	case h.NumRecords <= 0:
		return fmt.Errorf("%w: the batch says it holds %d records", kerr.InvalidRecord, h.NumRecords)
	case int64(h.LastOffsetDelta)+1 != int64(h.NumRecords):
		return fmt.Errorf("%w: the batch's last offset delta %d does not match its %d records", kerr.InvalidRecord, h.LastOffsetDelta, h.NumRecords)
	case h.Attributes&controlBatchBit != 0:
		return fmt.Errorf("%w: clients may not write control batches", kerr.InvalidRecord)
	case h.ProducerID >= 0 && h.BaseSequence < 0:
		return fmt.Errorf("%w: producer id %d with base sequence %d", kerr.InvalidRecord, h.ProducerID, h.BaseSequence)
	}
	return nil
}

// validateRecords walks the decompressed records: each is a varint length
// and that many bytes, which must decode as a kmsg.Record using all of them,
// with offset delta i for the i-th record; exactly h.NumRecords of them and
// nothing after. It returns copies of the last tail records.
func validateRecords(h BatchHeader, raw []byte, tail int) ([]DecodedRecord, error) {
	keepFrom := max(int64(h.NumRecords)-int64(tail), 0)
	kept := make([]DecodedRecord, 0, int64(h.NumRecords)-keepFrom)
	var r kmsg.Record
	var arena *[]byte // the kept records' bytes, copied out of raw
	for i := int32(0); i < h.NumRecords; i++ {
		if int64(i) < keepFrom {
			// Most records are a producer's plain ones, not kept: pass a
			// run of them in one loop, then read the record that ended it
			// (if any) the long way, which also says what is wrong with it.
			n, used := scanPlainRun(raw, i, int32(keepFrom))
			if i, raw = i+n, raw[used:]; i == h.NumRecords {
				break
			}
		}
		length, n := shortLength(raw)
		if n == 0 {
			length, n = binary.Varint(raw)
		}
		if n <= 0 || length < 0 || int64(len(raw)-n) < length {
			return nil, fmt.Errorf("%w: the batch says %d records, record %d is cut short", ErrCorruptMessage, h.NumRecords, i)
		}
		rec := raw[:n+int(length)]
		raw = raw[n+int(length):]
		// scanRecord, without its extra call per record
		offsetDelta, size, ok := scanPlainRecord(rec)
		if !ok {
			if offsetDelta, size, ok = scanAnyRecord(rec); ok {
				// Off the fast path (headers, long varints, negative
				// lengths): the lengths kmsg reads leniently.
				if bad := negativeLength(rec); bad != "" {
					return nil, fmt.Errorf("%w: record %d has %s", kerr.InvalidRecord, i, bad)
				}
			}
		}
		if !ok {
			return nil, fmt.Errorf("%w: record %d does not decode: %v", ErrCorruptMessage, i, kbin.ErrNotEnoughData)
		}
		if size != len(rec) {
			return nil, fmt.Errorf("%w: record %d says %d bytes, its fields take %d", kerr.InvalidRecord, i, len(rec), size)
		}
		if offsetDelta != i {
			return nil, fmt.Errorf("%w: record %d has offset delta %d; a batch's records must have offset deltas 0, 1, 2, …", kerr.InvalidRecord, i, offsetDelta)
		}
		if int64(i) >= keepFrom {
			if err := r.UnsafeReadFrom(rec); err != nil { // scanRecord read it: cannot fail
				return nil, fmt.Errorf("%w: record %d does not decode: %v", ErrCorruptMessage, i, err)
			}
			if arena == nil {
				arena = arenaFor(rec, raw)
			}
			kept = append(kept, decodedRecord(h, &r, arena))
		}
	}
	if len(raw) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the batch's %d records", kerr.InvalidRecord, len(raw), h.NumRecords)
	}
	return kept, nil
}

// plainVarint reads a minimal uvarint of one or two bytes at b[p:]: its
// value and where it ends; end 0 for anything else (longer, cut short, or a
// two-byte varint kmsg would write in one).
func plainVarint(b []byte, p int) (u uint32, end int) {
	if p >= len(b) {
		return 0, 0
	}
	if c := b[p]; c < 0x80 {
		return uint32(c), p + 1
	}
	if p+1 >= len(b) || b[p+1] >= 0x80 || b[p+1] == 0 {
		return 0, 0
	}
	return uint32(b[p]&0x7f) | uint32(b[p+1])<<7, p + 2
}

// scanPlainRun passes the records at the start of raw for as long as each
// is a plain record (see scanPlainRecord) written exactly as kmsg writes
// it, with offset delta next, next+1, … up to end (exclusive), and returns
// how many it passed and the bytes they take. It stops at the first record
// it does not pass, valid or not, which validateRecords then reads on its
// own: so it passes only records validateRecords would pass.
func scanPlainRun(raw []byte, next, end int32) (n int32, used int) {
	for i := next; i < end; i++ {
		length, q := plainVarint(raw, 0) // zigzag: a length is even
		if q == 0 || length&1 != 0 || int(length>>1) > len(raw)-q {
			break
		}
		rec := raw[:q+int(length>>1)]
		if q >= len(rec) { // the attributes: one byte, any value
			break
		}
		if _, q = plainVarint(rec, q+1); q == 0 { // the timestamp delta
			break
		}
		// The offset delta must be i, written minimally: zigzag 2i.
		z := uint32(i) << 1
		switch {
		case z < 1<<7 && q < len(rec) && uint32(rec[q]) == z:
			q++
		case z >= 1<<7 && z < 1<<14 && q+1 < len(rec) && rec[q] == byte(z)|0x80 && uint32(rec[q+1]) == z>>7:
			q += 2
		case z >= 1<<14 && z < 1<<21 && q+2 < len(rec) && rec[q] == byte(z)|0x80 && rec[q+1] == byte(z>>7)|0x80 && uint32(rec[q+2]) == z>>14:
			q += 3
		default:
			return n, used
		}
		if q < len(rec) && rec[q] == 1 { // a null key
			q++
		} else {
			key, kq := plainVarint(rec, q)
			if kq == 0 || key&1 != 0 || int(key>>1) > len(rec)-kq {
				break
			}
			q = kq + int(key>>1)
		}
		// The value, then the header count 0 as the record's last byte.
		value, vq := plainVarint(rec, q)
		if vq == 0 || value&1 != 0 || int(value>>1) != len(rec)-vq-1 || rec[len(rec)-1] != 0 {
			break
		}
		raw = raw[len(rec):]
		used += len(rec)
		n++
	}
	return n, used
}

// scanRecord reads one record's fields in kmsg.Record's order by kbin's
// rules, and fails (ok false) exactly where kmsg.Record.UnsafeReadFrom
// fails: a varint that is cut short or too long, a length past the record's
// end (a negative length is a null), fewer bytes left than headers. It
// returns the record's offset delta and its size as kmsg.Record.AppendTo
// would write it (every varint minimal, a null as -1, a header key as a
// string), without building a kmsg.Record: a produced batch holds thousands
// of records, and decoding each was most of what a produce cost the broker.
// FuzzScanRecord checks it against kmsg; validateRecords makes the same two
// calls in line, saving a call per record.
func scanRecord(rec []byte) (offsetDelta int32, size int, ok bool) {
	if offsetDelta, size, ok = scanPlainRecord(rec); ok {
		return offsetDelta, size, true
	}
	return scanAnyRecord(rec)
}

// scanPlainRecord is scanRecord for the record nearly every producer
// writes: every varint one or two bytes (the offset delta up to three), a
// key or a null key (-1), a value, no headers. It reads it in one pass without sizing each field (a varint
// is written shorter only when two bytes end in 0) and reports ok false for
// any other record, valid or not, which scanAnyRecord then reads.
func scanPlainRecord(rec []byte) (offsetDelta int32, size int, ok bool) {
	_, p, longer := shortVarint(rec, 0) // the length
	if p == 0 || p >= len(rec) {
		return 0, 0, false
	}
	_, p, x := shortVarint(rec, p+1) // after the attributes: the timestamp delta
	longer += x
	if p == 0 {
		return 0, 0, false
	}
	delta, end, x := shortVarint(rec, p)
	if end == 0 { // offset deltas from 8,192 on take three bytes
		delta, end, x = threeByteVarint(rec, p)
	}
	p, longer = end, longer+x
	if p == 0 {
		return 0, 0, false
	}
	key, p, x := shortVarint(rec, p)
	longer += x
	switch {
	case p == 0:
		return 0, 0, false
	case key&1 == 0:
		if int(key>>1) > len(rec)-p {
			return 0, 0, false
		}
		p += int(key >> 1)
	case key != 1: // a negative length other than -1: kmsg writes -1
		return 0, 0, false
	}
	value, p, x := shortVarint(rec, p)
	longer += x
	if p == 0 || value&1 != 0 || int(value>>1) > len(rec)-p-1 {
		return 0, 0, false
	}
	p += int(value >> 1)
	if p != len(rec)-1 || rec[p] != 0 { // no headers, and nothing after
		return 0, 0, false
	}
	return int32(delta>>1) ^ -int32(delta&1), len(rec) - longer, true
}

// shortVarint reads a uvarint of one or two bytes at rec[p:]: its value,
// where it ends (0 for any other), and 1 if kmsg would write it in one
// byte fewer (two bytes whose second is 0).
func shortVarint(rec []byte, p int) (u uint32, end, longer int) {
	if p < len(rec) && rec[p] < 0x80 {
		return uint32(rec[p]), p + 1, 0
	}
	if p+1 < len(rec) && rec[p+1] < 0x80 {
		if rec[p+1] == 0 {
			longer = 1
		}
		return uint32(rec[p]&0x7f) | uint32(rec[p+1])<<7, p + 2, longer
	}
	return 0, 0, 0
}

// threeByteVarint reads a uvarint of three bytes at rec[p:] where
// shortVarint found none of one or two, as shortVarint reports it.
func threeByteVarint(rec []byte, p int) (u uint32, end, longer int) {
	if p+2 >= len(rec) || rec[p+2] >= 0x80 {
		return 0, 0, 0
	}
	u = uint32(rec[p]&0x7f) | uint32(rec[p+1]&0x7f)<<7 | uint32(rec[p+2])<<14
	return u, p + 3, 3 - kbin.UvarintLen(u)
}

// scanAnyRecord is scanRecord for every record.
func scanAnyRecord(rec []byte) (offsetDelta int32, size int, ok bool) {
	// Every 32-bit varint's minimal size is kbin.UvarintLen of its
	// zigzag-encoded form, so fields are sized without decoding them.
	u, n := uvarintShort(rec)
	if n == 0 {
		u, n = kbin.Uvarint(rec)
	}
	if n <= 0 || n >= len(rec) { // the length, then one byte of attributes
		return 0, 0, false
	}
	size = kbin.UvarintLen(u) + 1
	p := n + 1
	if u, n = uvarintShort(rec[p:]); n > 0 { // the timestamp delta, a varlong
		size += kbin.UvarintLen(u)
	} else {
		ts, m := kbin.Varlong(rec[p:])
		if m <= 0 {
			return 0, 0, false
		}
		n = m
		size += kbin.VarlongLen(ts)
	}
	p += n
	if u, n = uvarintShort(rec[p:]); n == 0 {
		u, n = kbin.Uvarint(rec[p:])
	}
	if n <= 0 {
		return 0, 0, false
	}
	offsetDelta = int32(u>>1) ^ -int32(u&1)
	size += kbin.UvarintLen(u)
	p += n
	if n, size, ok = skipBytes(rec, p, size); !ok { // key
		return 0, 0, false
	}
	if p, size, ok = skipBytes(rec, n, size); !ok { // value
		return 0, 0, false
	}
	if u, n = uvarintShort(rec[p:]); n == 0 {
		u, n = kbin.Uvarint(rec[p:])
	}
	if n <= 0 {
		return 0, 0, false
	}
	p += n
	headers := int32(u>>1) ^ -int32(u&1)
	if len(rec)-p < int(headers) { // kbin's VarintArrayLen: a byte at least per header
		return 0, 0, false
	}
	size += kbin.VarintLen(max(headers, 0))
	// A header key is a string: a negative length reads as "" and is
	// written as 0, one byte either way, as skipBytes counts it.
	for range 2 * max(headers, 0) {
		if p, size, ok = skipBytes(rec, p, size); !ok {
			return 0, 0, false
		}
	}
	return offsetDelta, size, true
}

// negativeLength returns what breaks Kafka's record reader
// (DefaultRecord.readFrom) in rec, a record scanAnyRecord passed, or "":
// a header count or a header key length below 0, which Java's reader
// refuses (InvalidRecordException), and a key, value or header value length
// below -1. Java and franz-go read those as null, but librdkafka refuses
// the batch and a consumer such as kcat then fetches the same offset
// forever; kmsg writes a null as -1 and its count and key lengths as 0, so
// a batch that passes here reads back byte for byte.
func negativeLength(rec []byte) string {
	varint := func(p int) (int32, int) {
		u, n := uvarintShort(rec[p:])
		if n == 0 {
			u, n = kbin.Uvarint(rec[p:])
		}
		return int32(u>>1) ^ -int32(u&1), p + n
	}
	_, p := varint(0)             // the length
	p++                           // the attributes
	_, n := kbin.Varlong(rec[p:]) // the timestamp delta
	p += n
	_, p = varint(p) // the offset delta
	for _, field := range []string{"key", "value"} {
		l, q := varint(p)
		if l < -1 {
			return fmt.Sprintf("%s length %d (-1 is null; no other length is negative)", field, l)
		}
		p = q + int(max(l, 0))
	}
	headers, p := varint(p)
	if headers < 0 {
		return fmt.Sprintf("header count %d", headers)
	}
	for h := range headers {
		l, q := varint(p)
		if l < 0 {
			return fmt.Sprintf("header %d key length %d", h, l)
		}
		p = q + int(l)
		if l, q = varint(p); l < -1 {
			return fmt.Sprintf("header %d value length %d (-1 is null; no other length is negative)", h, l)
		}
		p = q + int(max(l, 0))
	}
	return ""
}

// skipBytes skips the varint-length bytes (negative: null) at rec[p:],
// returning where they end and size plus their written size.
func skipBytes(rec []byte, p, size int) (int, int, bool) {
	u, n := uvarintShort(rec[p:])
	if n == 0 {
		u, n = kbin.Uvarint(rec[p:])
	}
	if n <= 0 {
		return 0, 0, false
	}
	p += n
	l := int32(u>>1) ^ -int32(u&1)
	if l < 0 {
		return p, size + 1, true // a null: -1, one byte
	}
	if int(l) > len(rec)-p {
		return 0, 0, false
	}
	return p + int(l), size + kbin.UvarintLen(u) + int(l), true
}

// uvarintShort decodes a uvarint of one or two bytes (nearly every length
// and delta in a batch) and inlines; n is 0 for any other, which callers
// hand to kbin.Uvarint (at most 5 bytes, a value within 32 bits).
func uvarintShort(b []byte) (u uint32, n int) {
	if len(b) > 0 && b[0] < 0x80 {
		return uint32(b[0]), 1
	}
	if len(b) > 1 && b[1] < 0x80 {
		return uint32(b[0]&0x7f) | uint32(b[1])<<7, 2
	}
	return 0, 0
}
