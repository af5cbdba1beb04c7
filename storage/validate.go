package storage

import (
	"encoding/binary"
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
// for codecs 5–7, CORRUPT_MESSAGE for bytes that do not decode, and
// INVALID_RECORD for a batch that decodes but breaks a rule. An empty record
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
	raw, err := decompressTo(*buf, codec, records[batchHeaderSize:])
	defer putDecodeBuf(buf, codec, raw)
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
	var r kmsg.Record
	keepFrom := max(int64(h.NumRecords)-int64(tail), 0)
	kept := make([]DecodedRecord, 0, int64(h.NumRecords)-keepFrom)
	for i := int32(0); i < h.NumRecords; i++ {
		length, n := binary.Varint(raw)
		if n <= 0 || length < 0 || int64(len(raw)-n) < length {
			return nil, fmt.Errorf("%w: the batch says %d records, record %d is cut short", ErrCorruptMessage, h.NumRecords, i)
		}
		rec := raw[:n+int(length)]
		raw = raw[n+int(length):]
		if err := r.UnsafeReadFrom(rec); err != nil {
			return nil, fmt.Errorf("%w: record %d does not decode: %v", ErrCorruptMessage, i, err)
		}
		if used := recordSize(&r); used != len(rec) {
			return nil, fmt.Errorf("%w: record %d says %d bytes, its fields take %d", kerr.InvalidRecord, i, len(rec), used)
		}
		if r.OffsetDelta != i {
			return nil, fmt.Errorf("%w: record %d has offset delta %d; a batch's records must have offset deltas 0, 1, 2, …", kerr.InvalidRecord, i, r.OffsetDelta)
		}
		if int64(i) >= keepFrom {
			kept = append(kept, decodedRecord(h, &r, true))
		}
	}
	if len(raw) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the batch's %d records", kerr.InvalidRecord, len(raw), h.NumRecords)
	}
	return kept, nil
}

// recordSize is the encoded size of r, length prefix included: what
// r.AppendTo would write, counted without writing it.
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
