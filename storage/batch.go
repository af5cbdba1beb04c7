package storage

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"tidemark/internal/crc32c"
)

// RecordBatch v2 (magic 2) layout, the unit of everything in a .log file.
// Only the fixed 61-byte header is read directly, so lookups can scan from
// batch to batch without reading record bodies; whole batches are encoded
// and decoded with kmsg.RecordBatch.
const (
	batchHeaderSize   = 61 // baseOffset .. recordCount
	batchLengthOffset = 8  // int32 batchLength: bytes after this field
	batchLogOverhead  = 12 // baseOffset + batchLength
	batchEpochOffset  = 12 // int32 partitionLeaderEpoch
	batchMagicOffset  = 16
	batchCRCOffset    = 17 // uint32 CRC-32C over attributes..end
	batchAttrOffset   = 21 // start of the CRC-covered bytes
	batchMagic        = 2

	compressionMask = 0x07
)

// BatchHeader is the fixed header of one RecordBatch as stored in a .log file.
type BatchHeader struct {
	BaseOffset           int64
	Length               int32 // batchLength: the bytes after this field
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           int16
	LastOffsetDelta      int32
	FirstTimestamp       int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	NumRecords           int32
}

// LastOffset returns the offset of the batch's last record.
func (h BatchHeader) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// NextOffset returns the offset just after the batch.
func (h BatchHeader) NextOffset() int64 { return h.LastOffset() + 1 }

// Size returns the batch's size in the file, header included.
func (h BatchHeader) Size() int64 { return int64(h.Length) + batchLogOverhead }

// Compression returns the codec name from the attributes: none, gzip,
// snappy, lz4 or zstd.
func (h BatchHeader) Compression() string {
	switch h.Attributes & compressionMask {
	case 0:
		return "none"
	case 1:
		return "gzip"
	case 2:
		return "snappy"
	case 3:
		return "lz4"
	case 4:
		return "zstd"
	}
	return fmt.Sprintf("unknown(%d)", h.Attributes&compressionMask)
}

// parseBatchHeader reads the fixed header; b must hold at least
// batchHeaderSize bytes. It checks only what the header alone can show.
func parseBatchHeader(b []byte) (BatchHeader, error) {
	if len(b) < batchHeaderSize {
		return BatchHeader{}, fmt.Errorf("%w: %d bytes, a batch header is %d", ErrCorruptMessage, len(b), batchHeaderSize)
	}
	be := binary.BigEndian
	h := BatchHeader{
		BaseOffset:           int64(be.Uint64(b[0:])),
		Length:               int32(be.Uint32(b[8:])),
		PartitionLeaderEpoch: int32(be.Uint32(b[12:])),
		Magic:                int8(b[16]),
		CRC:                  be.Uint32(b[17:]),
		Attributes:           int16(be.Uint16(b[21:])),
		LastOffsetDelta:      int32(be.Uint32(b[23:])),
		FirstTimestamp:       int64(be.Uint64(b[27:])),
		MaxTimestamp:         int64(be.Uint64(b[35:])),
		ProducerID:           int64(be.Uint64(b[43:])),
		ProducerEpoch:        int16(be.Uint16(b[51:])),
		BaseSequence:         int32(be.Uint32(b[53:])),
		NumRecords:           int32(be.Uint32(b[57:])),
	}
	switch {
	case h.Magic != batchMagic:
		return h, fmt.Errorf("%w: magic %d, only RecordBatch v2 (magic 2) is stored", ErrCorruptMessage, h.Magic)
	case h.Length < batchHeaderSize-batchLogOverhead:
		return h, fmt.Errorf("%w: batch length %d is shorter than the header", ErrCorruptMessage, h.Length)
	case h.BaseOffset < 0 || h.LastOffsetDelta < 0 || h.NumRecords < 0:
		return h, fmt.Errorf("%w: negative base offset, last offset delta or record count", ErrCorruptMessage)
	case h.NumRecords > 0 && int64(h.LastOffsetDelta) < int64(h.NumRecords)-1:
		return h, fmt.Errorf("%w: %d records cannot fit in last offset delta %d", ErrCorruptMessage, h.NumRecords, h.LastOffsetDelta)
	}
	return h, nil
}

// checkBatch validates one whole batch (header, length and CRC-32C) and
// returns its header.
func checkBatch(b []byte) (BatchHeader, error) {
	h, err := parseBatchHeader(b)
	if err != nil {
		return h, err
	}
	if h.Size() != int64(len(b)) {
		return h, fmt.Errorf("%w: batch length says %d bytes, have %d", ErrCorruptMessage, h.Size(), len(b))
	}
	return h, checkCRC(h, b)
}

// checkCRC checks a whole batch's CRC-32C against its header's.
func checkCRC(h BatchHeader, b []byte) error {
	if got := crc32c.Checksum(b[batchAttrOffset:]); got != h.CRC {
		return fmt.Errorf("%w: CRC-32C %08x, batch says %08x", ErrCorruptMessage, got, h.CRC)
	}
	return nil
}

// nextBatch splits the first batch off a record set, checking its header
// and that it is whole, but not its CRC.
func nextBatch(records []byte) (h BatchHeader, batch, rest []byte, err error) {
	if len(records) < batchHeaderSize {
		return h, nil, nil, fmt.Errorf("%w: %d trailing bytes are not a batch", ErrCorruptMessage, len(records))
	}
	if h, err = parseBatchHeader(records); err != nil {
		return h, nil, nil, err
	}
	if h.Size() > int64(len(records)) {
		return h, nil, nil, fmt.Errorf("%w: batch of %d bytes, only %d given", ErrCorruptMessage, h.Size(), len(records))
	}
	return h, records[:h.Size()], records[h.Size():], nil
}

// splitBatches walks a record set (batches back to back), checking each.
func splitBatches(records []byte, fn func(h BatchHeader, batch []byte) error) error {
	for len(records) > 0 {
		h, batch, rest, err := nextBatch(records)
		if err != nil {
			return err
		}
		if err := checkCRC(h, batch); err != nil {
			return err
		}
		if err := fn(h, batch); err != nil {
			return err
		}
		records = rest
	}
	return nil
}

// ParseBatches checks a record set (batches back to back, as a Fetch
// response carries them) and returns each batch's header; none for an empty
// set.
func ParseBatches(records []byte) ([]BatchHeader, error) {
	var hs []BatchHeader
	err := splitBatches(records, func(h BatchHeader, _ []byte) error {
		hs = append(hs, h)
		return nil
	})
	return hs, err
}

// ScanBatchHeaders reads the header of each batch of a record set without
// checking CRCs (for batches already validated, e.g. just appended); it
// stops at the first header that does not parse or does not fit.
func ScanBatchHeaders(records []byte) []BatchHeader {
	var hs []BatchHeader
	for len(records) >= batchHeaderSize {
		h, err := parseBatchHeader(records)
		if err != nil || h.Size() > int64(len(records)) {
			break
		}
		hs = append(hs, h)
		records = records[h.Size():]
	}
	return hs
}

// stampBatch sets the broker-assigned fields of a batch in place. Neither is
// covered by the CRC, so the producer's checksum stays valid.
func stampBatch(batch []byte, baseOffset int64, leaderEpoch int32) {
	binary.BigEndian.PutUint64(batch[0:], uint64(baseOffset))
	binary.BigEndian.PutUint32(batch[batchEpochOffset:], uint32(leaderEpoch))
}

// Record is one record handed to NewBatch.
type Record struct {
	Key       []byte
	Value     []byte
	Headers   []kmsg.Header
	Timestamp int64 // milliseconds since the epoch
}

// NewBatch encodes uncompressed records as one RecordBatch v2 with kmsg, the
// way a producer without idempotence would (producer id -1, base offset 0,
// partition leader epoch -1): the log stamps offset and epoch on append.
func NewBatch(records []Record) []byte { return NewIdempotentBatch(records, -1, -1, -1) }

// NewIdempotentBatch is NewBatch for an idempotent producer: producerID,
// producerEpoch and the first record's baseSequence go into the header,
// under the batch's CRC-32C.
func NewIdempotentBatch(records []Record, producerID int64, producerEpoch int16, baseSequence int32) []byte {
	return newBatch(records, producerID, producerEpoch, baseSequence, 0)
}

// NewTransactionalBatch is NewIdempotentBatch with the transactional
// attribute set: a transactional producer's batch, part of the producer's
// open transaction until a commit or abort marker ends it.
func NewTransactionalBatch(records []Record, producerID int64, producerEpoch int16, baseSequence int32) []byte {
	return newBatch(records, producerID, producerEpoch, baseSequence, transactionalBit)
}

// transactionalBit is the attribute bit of a transactional batch.
const transactionalBit = 0x10

func newBatch(records []Record, producerID int64, producerEpoch int16, baseSequence int32, attributes int16) []byte {
	if len(records) == 0 {
		return nil
	}
	first, maxTS := records[0].Timestamp, records[0].Timestamp
	for _, r := range records {
		maxTS = max(maxTS, r.Timestamp)
		first = min(first, r.Timestamp)
	}
	var body []byte
	for i, r := range records {
		rec := kmsg.Record{
			TimestampDelta64: r.Timestamp - first,
			OffsetDelta:      int32(i),
			Key:              r.Key,
			Value:            r.Value,
			Headers:          r.Headers,
		}
		// Length is a varint of the bytes after it; encode once to learn it.
		n := len(rec.AppendTo(nil)) - 1
		rec.Length = int32(n)
		body = rec.AppendTo(body)
	}
	b := kmsg.RecordBatch{
		FirstOffset:          0,
		PartitionLeaderEpoch: -1,
		Magic:                batchMagic,
		Attributes:           attributes,
		LastOffsetDelta:      int32(len(records) - 1),
		FirstTimestamp:       first,
		MaxTimestamp:         maxTS,
		ProducerID:           producerID,
		ProducerEpoch:        producerEpoch,
		FirstSequence:        baseSequence,
		NumRecords:           int32(len(records)),
		Records:              body,
	}
	b.Length = int32(batchHeaderSize - batchLogOverhead + len(body))
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[batchCRCOffset:], crc32c.Checksum(out[batchAttrOffset:]))
	return out
}
