package storage

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/internal/crc32c"
)

// Codecs by Kafka's compression.type name (the attribute's low 3 bits).
var codecByName = map[string]int16{"uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}

// CodecOf returns the codec of a compression.type value; false for
// "producer" (keep the producer's) or an unknown name.
func CodecOf(compressionType string) (int16, bool) {
	c, ok := codecByName[compressionType]
	return c, ok
}

// compressRecords compresses a batch's records section with codec.
func compressRecords(codec int16, raw []byte) ([]byte, error) {
	var buf bytes.Buffer
	switch codec {
	case 0:
		return raw, nil
	case 1:
		zw := gzip.NewWriter(&buf)
		if _, err := zw.Write(raw); err != nil {
			return nil, err
		}
		if err := zw.Close(); err != nil {
			return nil, err
		}
	case 2:
		return s2.EncodeSnappy(nil, raw), nil // a plain snappy block, as franz-go and librdkafka send
	case 3:
		zw := lz4.NewWriter(&buf)
		if _, err := zw.Write(raw); err != nil {
			return nil, err
		}
		if err := zw.Close(); err != nil {
			return nil, err
		}
	case 4:
		zw, err := zstd.NewWriter(&buf, zstd.WithEncoderConcurrency(1))
		if err != nil {
			return nil, err
		}
		if _, err := zw.Write(raw); err != nil {
			return nil, err
		}
		if err := zw.Close(); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("unknown compression codec %d", codec)
	}
	return buf.Bytes(), nil
}

// encodeBatch writes h's header (with codec in its attributes and
// numRecords records) followed by raw compressed with codec, and a fresh
// CRC-32C: the broker's own rewrite of a batch (recompression, the
// cleaner, LogAppendTime).
func encodeBatch(h BatchHeader, codec int16, numRecords int32, raw []byte) ([]byte, error) {
	body, err := compressRecords(codec, raw)
	if err != nil {
		return nil, err
	}
	out := make([]byte, batchHeaderSize+len(body))
	be := binary.BigEndian
	be.PutUint64(out[0:], uint64(h.BaseOffset))
	be.PutUint32(out[8:], uint32(batchHeaderSize-batchLogOverhead+len(body)))
	be.PutUint32(out[12:], uint32(h.PartitionLeaderEpoch))
	out[16] = batchMagic
	be.PutUint16(out[21:], uint16(h.Attributes&^compressionMask|codec))
	be.PutUint32(out[23:], uint32(h.LastOffsetDelta))
	be.PutUint64(out[27:], uint64(h.FirstTimestamp))
	be.PutUint64(out[35:], uint64(h.MaxTimestamp))
	be.PutUint64(out[43:], uint64(h.ProducerID))
	be.PutUint16(out[51:], uint16(h.ProducerEpoch))
	be.PutUint32(out[53:], uint32(h.BaseSequence))
	be.PutUint32(out[57:], uint32(numRecords))
	copy(out[batchHeaderSize:], body)
	be.PutUint32(out[batchCRCOffset:], crc32c.Checksum(out[batchAttrOffset:]))
	return out, nil
}

// timestampTypeBit is the attribute bit of a LogAppendTime batch.
const timestampTypeBit = 0x08

// brokerRewrite applies the topic's compression.type and
// message.timestamp.type to a batch the leader appends: recompressed with
// the topic's codec when it names one the producer did not use; with
// LogAppendTime, the attribute set and the max timestamp overwritten with
// nowMs (Kafka leaves the records' own timestamps, which readers then
// ignore). It returns batch itself when nothing changes.
func brokerRewrite(cfg Config, h BatchHeader, batch []byte, nowMs int64) ([]byte, BatchHeader, error) {
	codec := h.Attributes & compressionMask
	if cfg.Cleanup.Compacts() && h.Attributes&controlBatchBit == 0 {
		if err := requireKeys(h, batch); err != nil {
			return nil, h, err
		}
	}
	want, recompress := CodecOf(cfg.CompressionType)
	recompress = recompress && want != codec && h.Attributes&controlBatchBit == 0
	if !recompress && !cfg.LogAppendTime {
		return batch, h, nil
	}
	if cfg.LogAppendTime {
		h.Attributes |= timestampTypeBit
		h.MaxTimestamp = nowMs
	}
	if !recompress {
		out := append([]byte(nil), batch...)
		be := binary.BigEndian
		be.PutUint16(out[batchAttrOffset:], uint16(h.Attributes))
		be.PutUint64(out[35:], uint64(h.MaxTimestamp))
		h.CRC = crc32c.Checksum(out[batchAttrOffset:])
		be.PutUint32(out[batchCRCOffset:], h.CRC)
		return out, h, nil
	}
	raw, err := decompress(codec, batch[batchHeaderSize:])
	if err != nil {
		return nil, h, fmt.Errorf("%w: recompressing a %s batch: %v", ErrCorruptMessage, h.Compression(), err)
	}
	out, err := encodeBatch(h, want, h.NumRecords, raw)
	if err != nil {
		return nil, h, err
	}
	nh, err := parseBatchHeader(out)
	return out, nh, err
}

// requireKeys refuses a batch with a record without a key, as Kafka refuses
// one for a compacted topic: the cleaner keeps records by key.
func requireKeys(h BatchHeader, batch []byte) error {
	raw, err := decompress(h.Attributes&compressionMask, batch[batchHeaderSize:])
	if err != nil {
		return fmt.Errorf("%w: %v", ErrCorruptMessage, err)
	}
	keyless := false
	if err := eachRawRecord(raw, h.NumRecords, func(_ []byte, _ int32, _ []byte, hasKey, _ bool) { keyless = keyless || !hasKey }); err != nil {
		return err
	}
	if keyless {
		return fmt.Errorf("%w: a compacted topic (cleanup.policy=compact) cannot accept a record without a key", kerr.InvalidRecord)
	}
	return nil
}
