package storage

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxDecompressedBytes bounds what one batch already in a log may inflate
// to when decoded (for display, the records route), so a hostile batch
// cannot exhaust memory. A produced batch has the tighter
// MaxDecompressedBatchBytes.
const maxDecompressedBytes = 64 << 20

// MaxDecompressedBatchBytes bounds what the records of one produced batch
// may decompress to: 8 MiB, eight times Kafka's default max.message.bytes
// (1 MiB), which applies to the compressed batch only. Kafka has no such
// bound, so a 2 KiB zstd batch could hold a 60 MiB value, and every reader
// that decoded it (the lab's UI among them) would pay the 60 MiB. A larger
// batch is refused with MESSAGE_TOO_LARGE, the code Kafka gives a batch
// past max.message.bytes (Java's RecordTooLargeException: its producer
// splits a batch of several records and retries, and fails a single one
// without retrying, which is what a record too large for the lab needs).
const MaxDecompressedBatchBytes = 8 << 20

// errInflates is the cause of a decompression cut off at its limit.
var errInflates = errors.New("inflates past the limit")

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
func DecodeBatchTail(b []byte, n int) (Batch, error) { return decodeBatchTail(b, n, false, nil) }

// CopyBatchTail is DecodeBatchTail for callers that keep a few records of
// many batches (the UI's newest records): it decompresses into a pooled
// buffer and returns records that own their bytes, so decoding a large
// compressed batch allocates only what is kept.
func CopyBatchTail(b []byte, n int) (Batch, error) { return decodeBatchTail(b, n, true, nil) }

// VisitBatchTail is CopyBatchTail for a caller that keeps only part of each
// record (the UI: the first bytes of a key and value, and a digest of the
// whole): visit gets the last n records in turn, their keys, values and
// headers in a pooled buffer that is valid only during the call, so
// nothing of a record is copied but what visit copies. The Batch returned
// has the header and no records.
func VisitBatchTail(b []byte, n int, visit func(DecodedRecord)) (Batch, error) {
	return decodeBatchTail(b, n, true, visit)
}

func decodeBatchTail(b []byte, n int, pooled bool, visit func(DecodedRecord)) (Batch, error) {
	h, err := checkBatch(b)
	if err != nil {
		return Batch{}, err
	}
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(b); err != nil {
		return Batch{}, fmt.Errorf("%w: %v", ErrCorruptMessage, err)
	}
	codec := h.Attributes & compressionMask
	var raw []byte
	if pooled {
		buf := getDecodeBuf()
		raw, err = decompressTo(*buf, codec, rb.Records, maxDecompressedBytes)
		defer putDecodeBuf(buf, codec, raw)
	} else {
		raw, err = decompressTo(nil, codec, rb.Records, maxDecompressedBytes)
	}
	if err != nil {
		return Batch{}, fmt.Errorf("%w: %s records: %v", ErrCorruptMessage, h.Compression(), err)
	}
	skip := int32(0)
	if n >= 0 && int(h.NumRecords) > n {
		skip = h.NumRecords - int32(n)
	}
	out := Batch{Header: h, Records: make([]DecodedRecord, 0, min(int(h.NumRecords-skip), 1<<16))}
	var arena *[]byte // pooled: where the kept records' bytes are copied
	for i := int32(0); i < h.NumRecords; i++ {
		length, vn := shortLength(raw)
		if vn == 0 {
			length, vn = binary.Varint(raw)
		}
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
		if visit != nil {
			visit(decodedRecord(h, &r, nil))
			continue
		}
		if pooled && arena == nil {
			arena = arenaFor(rec, raw)
		}
		out.Records = append(out.Records, decodedRecord(h, &r, arena))
	}
	if len(raw) != 0 {
		return Batch{}, fmt.Errorf("%w: %d bytes after the last record", ErrCorruptMessage, len(raw))
	}
	return out, nil
}

// shortLength reads a record's length prefix of one or two bytes (records
// up to 8 KiB) as binary.Varint does, and inlines; n is 0 for any other,
// which callers hand to binary.Varint. Skipping the records of a batch by
// their lengths was otherwise a quarter of decoding its newest ones.
func shortLength(b []byte) (length int64, n int) {
	u, n := uvarintShort(b)
	return int64(u>>1) ^ -int64(u&1), n
}

// decodedRecord is r, a record of the batch with header h, with its offset
// and timestamp made absolute. With an arena, its key, value and headers are
// copied out of the buffer r was read from, the bytes into *arena: the
// caller sizes it for every record it keeps, so they share one allocation
// instead of one or two each.
func decodedRecord(h BatchHeader, r *kmsg.Record, arena *[]byte) DecodedRecord {
	d := DecodedRecord{Offset: h.BaseOffset + int64(r.OffsetDelta), Timestamp: h.FirstTimestamp + r.TimestampDelta64,
		Key: r.Key, Value: r.Value, Headers: r.Headers}
	if h.Attributes&timestampTypeBit != 0 {
		d.Timestamp = h.MaxTimestamp // LogAppendTime: every record has the batch's append time, as clients read it
	}
	if arena != nil {
		d.Key, d.Value = detach(arena, r.Key), detach(arena, r.Value)
		d.Headers = nil // as a fresh kmsg.Record has none
		for _, hd := range r.Headers {
			d.Headers = append(d.Headers, kmsg.Header{Key: strings.Clone(hd.Key), Value: detach(arena, hd.Value)})
		}
	}
	return d
}

// detach copies b to the end of *arena and returns the copy, its capacity
// capped so that appending to it cannot overwrite the next; nil stays nil
// (a null key is not an empty one). Should *arena be too small, append
// moves it and earlier copies keep the old array, still correct.
func detach(arena *[]byte, b []byte) []byte {
	if b == nil {
		return nil
	}
	start := len(*arena)
	*arena = append(*arena, b...)
	return (*arena)[start:len(*arena):len(*arena)]
}

// arenaFor returns an arena for the records from rec on, rest being the
// bytes after rec: their keys and values fit in the records' own bytes.
func arenaFor(rec, rest []byte) *[]byte {
	a := make([]byte, 0, len(rec)+len(rest))
	return &a
}

// decodeBufs holds the buffers batches are decompressed into when the
// decompressed bytes are not kept (produce validation, the UI's copies): a
// fresh buffer per batch cost as much again as the decompression, in
// clearing it and in garbage collection.
var decodeBufs = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledDecodeBuffer is the largest buffer kept for reuse: a default
// 1 MiB producer batch fits; a rare larger one is left to the collector.
const maxPooledDecodeBuffer = MaxDecompressedBatchBytes + 1

func getDecodeBuf() *[]byte { return decodeBufs.Get().(*[]byte) }

// putDecodeBuf returns raw, what codec decompressed into buf, to the pool.
// Uncompressed records are the caller's bytes, not a buffer of ours.
func putDecodeBuf(buf *[]byte, codec int16, raw []byte) {
	if codec == 0 || cap(raw) > maxPooledDecodeBuffer {
		return
	}
	if cap(raw) > cap(*buf) {
		*buf = raw[:0]
	}
	decodeBufs.Put(buf)
}

// xerialMagic starts snappy data framed by the Java client's xerial library.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// decompress returns a batch's records section decompressed as codec says:
// data itself for codec 0, else a new buffer.
func decompress(codec int16, data []byte) ([]byte, error) {
	return decompressTo(nil, codec, data, maxDecompressedBytes)
}

// decompressTo is decompress into dst's spare capacity when it suffices
// (dst's contents are overwritten; for codec 0 it returns data itself).
// Output past limit bytes fails with errInflates, having decoded no more
// than limit (+ one read) bytes.
func decompressTo(dst []byte, codec int16, data []byte, limit int) ([]byte, error) {
	switch codec {
	case 0:
		return data, nil
	case 1:
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, err
		}
		return readLimited(dst, zr, limit)
	case 2:
		if bytes.HasPrefix(data, xerialMagic) {
			return unxerial(dst, data[len(xerialMagic):], limit)
		}
		return snappyBlock(dst, data, limit)
	case 3:
		return readLimited(dst, lz4.NewReader(bytes.NewReader(data)), limit)
	case 4:
		// A frame that says it holds more than limit is refused before
		// any of it is decoded (one that lies is cut off at limit).
		var zh zstd.Header
		if zh.Decode(data) == nil && zh.HasFCS && zh.FrameContentSize > uint64(limit) {
			return nil, fmt.Errorf("%w: %d bytes (the zstd frame says %d)", errInflates, limit, zh.FrameContentSize)
		}
		// One goroutine, synchronous: the default decodes blocks ahead on
		// every core, each with its own buffers.
		zr, err := zstd.NewReader(bytes.NewReader(data), zstd.WithDecoderMaxMemory(uint64(limit)),
			zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		out, err := readLimited(dst, zr, limit)
		if errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) {
			err = fmt.Errorf("%w: %d bytes (%v)", errInflates, limit, err)
		}
		return out, err
	}
	return nil, fmt.Errorf("unknown compression codec %d", codec)
}

// readLimited reads r to its end into dst[:0], growing it as needed, and
// fails once more than limit bytes have come.
func readLimited(dst []byte, r io.Reader, limit int) ([]byte, error) {
	r = io.LimitReader(r, int64(limit)+1)
	dst = dst[:0]
	for {
		if len(dst) == cap(dst) {
			// Double, but never past limit+1: the read that crosses the
			// limit needs one byte more, not twice the limit.
			grown := make([]byte, len(dst), min(max(2*cap(dst), 64<<10), limit+1))
			copy(grown, dst)
			dst = grown
		}
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if len(dst) > limit {
			return dst, fmt.Errorf("%w: %d bytes", errInflates, limit)
		}
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
}

// snappyBlock decodes one snappy block into dst's capacity if it fits.
func snappyBlock(dst, data []byte, limit int) ([]byte, error) {
	n, err := s2.DecodedLen(data)
	if err != nil {
		return nil, err
	}
	if n > limit {
		return nil, fmt.Errorf("%w: %d bytes", errInflates, limit)
	}
	return s2.Decode(dst, data)
}

// unxerial reads xerial framing: an 8-byte version header, then chunks of
// int32 length + snappy block.
func unxerial(dst, data []byte, limit int) ([]byte, error) {
	if len(data) < 8 {
		return nil, fmt.Errorf("xerial header cut short")
	}
	data = data[8:]
	out := dst[:0]
	for len(data) > 0 {
		if len(data) < 4 {
			return nil, fmt.Errorf("xerial chunk length cut short")
		}
		n := int(binary.BigEndian.Uint32(data))
		data = data[4:]
		if n < 0 || n > len(data) {
			return nil, fmt.Errorf("xerial chunk of %d bytes, %d left", n, len(data))
		}
		chunk, err := snappyBlock(nil, data[:n], limit-len(out))
		if err != nil {
			return nil, err
		}
		out = append(out, chunk...)
		data = data[n:]
	}
	return out, nil
}
