package storage

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxDecompressedBytes bounds what one batch may inflate to when decoded for
// display, so a hostile batch cannot exhaust memory.
const maxDecompressedBytes = 64 << 20

// Batch is one decoded RecordBatch: its header and its records with absolute
// offsets and timestamps.
type Batch struct {
	Header   BatchHeader
	Position int64 // byte position in its segment's .log file
	Records  []DecodedRecord
}

// DecodedRecord is one record of a decoded batch.
type DecodedRecord struct {
	Offset    int64
	Timestamp int64
	Key       []byte
	Value     []byte
	Headers   []kmsg.Header
}

// DecodeBatch checks one whole batch and decodes it with kmsg, decompressing
// the records if the batch is compressed.
func DecodeBatch(b []byte) (Batch, error) { return DecodeBatchTail(b, -1) }

// DecodeBatchTail is DecodeBatch that decodes only the last n records (all
// of them for n < 0): earlier records are skipped by their length prefix,
// so showing the newest records of a large batch stays cheap.
func DecodeBatchTail(b []byte, n int) (Batch, error) {
	h, err := checkBatch(b)
	if err != nil {
		return Batch{}, err
	}
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(b); err != nil {
		return Batch{}, fmt.Errorf("%w: %v", ErrCorruptMessage, err)
	}
	raw, err := decompress(h.Attributes&compressionMask, rb.Records)
	if err != nil {
		return Batch{}, fmt.Errorf("%w: %s records: %v", ErrCorruptMessage, h.Compression(), err)
	}
	skip := int32(0)
	if n >= 0 && int(h.NumRecords) > n {
		skip = h.NumRecords - int32(n)
	}
	out := Batch{Header: h, Records: make([]DecodedRecord, 0, min(int(h.NumRecords-skip), 1<<16))}
	for i := int32(0); i < h.NumRecords; i++ {
		length, vn := binary.Varint(raw)
		if vn <= 0 || length < 0 || int64(len(raw)-vn) < length {
			return Batch{}, fmt.Errorf("%w: record %d of %d is cut short", ErrCorruptMessage, i, h.NumRecords)
		}
		rec := raw[:vn+int(length)]
		raw = raw[vn+int(length):]
		if i < skip {
			continue
		}
		var r kmsg.Record
		if err := r.ReadFrom(rec); err != nil {
			return Batch{}, fmt.Errorf("%w: record %d: %v", ErrCorruptMessage, i, err)
		}
		out.Records = append(out.Records, DecodedRecord{
			Offset:    h.BaseOffset + int64(r.OffsetDelta),
			Timestamp: rb.FirstTimestamp + r.TimestampDelta64,
			Key:       r.Key,
			Value:     r.Value,
			Headers:   r.Headers,
		})
	}
	if len(raw) != 0 {
		return Batch{}, fmt.Errorf("%w: %d bytes after the last record", ErrCorruptMessage, len(raw))
	}
	return out, nil
}

// xerialMagic starts snappy data framed by the Java client's xerial library.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

func decompress(codec int16, data []byte) ([]byte, error) {
	limited := func(r io.Reader) ([]byte, error) {
		out, err := io.ReadAll(io.LimitReader(r, maxDecompressedBytes+1))
		if err == nil && len(out) > maxDecompressedBytes {
			err = fmt.Errorf("inflates past %d bytes", maxDecompressedBytes)
		}
		return out, err
	}
	switch codec {
	case 0:
		return data, nil
	case 1:
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, err
		}
		return limited(zr)
	case 2:
		if bytes.HasPrefix(data, xerialMagic) {
			return unxerial(data[len(xerialMagic):])
		}
		return snappyBlock(data)
	case 3:
		return limited(lz4.NewReader(bytes.NewReader(data)))
	case 4:
		zr, err := zstd.NewReader(bytes.NewReader(data), zstd.WithDecoderMaxMemory(maxDecompressedBytes))
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		return limited(zr)
	}
	return nil, fmt.Errorf("unknown compression codec %d", codec)
}

func snappyBlock(data []byte) ([]byte, error) {
	n, err := s2.DecodedLen(data)
	if err != nil {
		return nil, err
	}
	if n > maxDecompressedBytes {
		return nil, fmt.Errorf("inflates past %d bytes", maxDecompressedBytes)
	}
	return s2.Decode(nil, data)
}

// unxerial reads xerial framing: an 8-byte version header, then chunks of
// int32 length + snappy block.
func unxerial(data []byte) ([]byte, error) {
	if len(data) < 8 {
		return nil, fmt.Errorf("xerial header cut short")
	}
	data = data[8:]
	var out []byte
	for len(data) > 0 {
		if len(data) < 4 {
			return nil, fmt.Errorf("xerial chunk length cut short")
		}
		n := int(binary.BigEndian.Uint32(data))
		data = data[4:]
		if n < 0 || n > len(data) {
			return nil, fmt.Errorf("xerial chunk of %d bytes, %d left", n, len(data))
		}
		chunk, err := snappyBlock(data[:n])
		if err != nil {
			return nil, err
		}
		if len(out)+len(chunk) > maxDecompressedBytes {
			return nil, fmt.Errorf("inflates past %d bytes", maxDecompressedBytes)
		}
		out = append(out, chunk...)
		data = data[n:]
	}
	return out, nil
}
