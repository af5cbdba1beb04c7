package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"syscall"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FileRegion is Length bytes of File starting at Offset, sent as part of a
// response. It is read with explicit offsets (sendfile(2) with an offset, or
// ReadAt), never through the file's shared position, so any number of
// connections may send regions of one *os.File at the same time. The file
// must stay open, and at least Offset+Length long, until the response has
// been written; a shorter file closes the connection, because the frame's
// size was already sent.
type FileRegion struct {
	File   *os.File
	Offset int64
	Length int64
}

// placeholderLen is the size of one placeholder: a 12-byte per-response
// random nonce followed by a 4-byte region-list index.
const placeholderLen = 16

// Spliced wraps a response in which some byte fields stand for file regions,
// so that fetch record data can go from the segment file to the socket with
// sendfile(2) instead of through user space. The handler stores
// Placeholder(...) in each such field (for a FetchResponse partition,
// RecordBatches) and returns the *Spliced. When writing, the listener
// encodes the wrapped response with kmsg as usual, finds each placeholder
// (a random 16-byte marker, so it cannot be confused with real bytes), and
// replaces the placeholder and its length prefix with the real length
// prefix followed by the regions, then fixes the frame size. The bytes on
// the wire are exactly those of the same response with the regions' bytes
// stored in the fields.
//
// Calling AppendTo on a Spliced directly yields the placeholders, not the
// file bytes.
type Spliced struct {
	kmsg.Response
	nonce   [12]byte
	regions [][]FileRegion
}

// NewSpliced wraps resp, which has no placeholders yet.
func NewSpliced(resp kmsg.Response) *Spliced {
	s := &Spliced{Response: resp}
	// math/rand/v2's generator is ChaCha8 seeded from the OS: as hard to
	// guess as crypto/rand here, at a fraction of the cost per response.
	binary.LittleEndian.PutUint64(s.nonce[:8], rand.Uint64())
	binary.LittleEndian.PutUint32(s.nonce[8:], rand.Uint32())
	return s
}

// Placeholder returns the bytes to store in one byte field of the wrapped
// response; on the wire the field becomes the regions, back to back. With no
// regions the field is empty (not null). Each call returns a new placeholder,
// which must be stored in exactly one field.
func (s *Spliced) Placeholder(regions ...FileRegion) []byte {
	p := make([]byte, 0, placeholderLen)
	p = append(p, s.nonce[:]...)
	p = binary.BigEndian.AppendUint32(p, uint32(len(s.regions)))
	s.regions = append(s.regions, regions)
	return p
}

// framePart is one piece of a response frame on the wire: bytes, or a file
// region when region.File is non-nil.
type framePart struct {
	b      []byte
	region FileRegion
}

// split turns an encoded frame of s (size prefix included, placeholders in
// place) into parts with the regions spliced in, and patches the size prefix.
func (s *Spliced) split(frame []byte) ([]framePart, error) {
	flexible := s.IsFlexible()
	found := make([]bool, len(s.regions))
	var parts []framePart
	last, total := 0, int64(len(frame))
	for {
		i := bytes.Index(frame[last:], s.nonce[:])
		if i < 0 {
			break
		}
		p := last + i
		if p+placeholderLen > len(frame) {
			return nil, errors.New("spliced response: placeholder cut short")
		}
		idx := binary.BigEndian.Uint32(frame[p+12 : p+placeholderLen])
		if int(idx) >= len(s.regions) || found[idx] {
			return nil, fmt.Errorf("spliced response: placeholder %d unknown or used twice", idx)
		}
		found[idx] = true
		var prefixLen int
		if flexible { // compact bytes: uvarint(len+1)
			prefixLen = 1
			if p < 1 || frame[p-1] != placeholderLen+1 {
				return nil, errors.New("spliced response: placeholder is not a whole compact bytes field")
			}
		} else { // classic bytes: int32 len
			prefixLen = 4
			if p < 4 || binary.BigEndian.Uint32(frame[p-4:p]) != placeholderLen {
				return nil, errors.New("spliced response: placeholder is not a whole bytes field")
			}
		}
		var n int64
		for _, r := range s.regions[idx] {
			if r.File == nil || r.Offset < 0 || r.Length < 0 {
				return nil, fmt.Errorf("spliced response: invalid file region %+v", r)
			}
			n += r.Length
		}
		if n > math.MaxInt32-1 {
			return nil, fmt.Errorf("spliced response: field of %d bytes does not fit a Kafka bytes field", n)
		}
		var prefix []byte
		if flexible {
			prefix = kbin.AppendUvarint(nil, uint32(n)+1)
		} else {
			prefix = kbin.AppendInt32(nil, int32(n))
		}
		parts = append(parts, framePart{b: frame[last : p-prefixLen]}, framePart{b: prefix})
		for _, r := range s.regions[idx] {
			if r.Length > 0 {
				parts = append(parts, framePart{region: r})
			}
		}
		total += int64(len(prefix)) + n - int64(prefixLen) - placeholderLen
		last = p + placeholderLen
	}
	for idx, ok := range found {
		if !ok {
			return nil, fmt.Errorf("spliced response: placeholder %d is not in the response", idx)
		}
	}
	parts = append(parts, framePart{b: frame[last:]})
	if total-4 > math.MaxInt32 {
		return nil, fmt.Errorf("spliced response: frame of %d bytes is too large", total)
	}
	binary.BigEndian.PutUint32(frame, uint32(total-4))
	return parts, nil
}

// responseWriter writes response frames to one connection; it is owned by
// the connection's processing goroutine.
type responseWriter struct {
	c       net.Conn
	raw     syscall.RawConn // nil: copy file regions through user space
	buf     []byte          // reused encode buffer
	copyBuf []byte          // lazily allocated for copied regions
	count   regionCount     // the process's and the Server's counters
}

// maxKeptBuf bounds the encode buffer kept between responses.
const maxKeptBuf = 1 << 20

// copyBufSize is the chunk size of user-space region copies.
const copyBufSize = 256 << 10

func newResponseWriter(c net.Conn, copyRegions bool, regions *regionCounters) *responseWriter {
	w := &responseWriter{c: c, count: regionCount{regions}}
	if sc, ok := c.(syscall.Conn); ok && !copyRegions {
		if raw, err := sc.SyscallConn(); err == nil {
			w.raw = raw
		}
	}
	return w
}

// write sends one response frame answering correlationID.
func (w *responseWriter) write(correlationID int32, resp kmsg.Response) error {
	w.buf = appendResponseFrame(w.buf[:0], correlationID, resp)
	defer func() {
		if cap(w.buf) > maxKeptBuf {
			w.buf = nil
		}
	}()
	sp, ok := resp.(*Spliced)
	if !ok {
		_, err := w.c.Write(w.buf)
		return err
	}
	parts, err := sp.split(w.buf)
	if err != nil {
		return err
	}
	var pending net.Buffers
	for _, p := range parts {
		if p.region.File == nil {
			if len(p.b) > 0 {
				pending = append(pending, p.b)
			}
			continue
		}
		if len(pending) > 0 {
			if _, err := pending.WriteTo(w.c); err != nil {
				return err
			}
			pending = pending[:0]
		}
		if err := w.writeRegion(p.region); err != nil {
			return err
		}
	}
	_, err = pending.WriteTo(w.c)
	return err
}

// writeRegion sends one file region, with sendfile(2) where possible.
func (w *responseWriter) writeRegion(r FileRegion) error {
	if w.raw != nil {
		if handled, err := sendFileRegion(w.raw, r, w.count); handled {
			return err
		}
	}
	return w.copyRegion(r)
}

// copyRegion sends r by reading it into memory and writing it.
func (w *responseWriter) copyRegion(r FileRegion) error {
	w.count.copiedRegion()
	if w.copyBuf == nil {
		w.copyBuf = make([]byte, copyBufSize)
	}
	off, left := r.Offset, r.Length
	for left > 0 {
		chunk := w.copyBuf[:min(left, int64(len(w.copyBuf)))]
		n, err := r.File.ReadAt(chunk, off)
		w.count.copySyscall()
		if n > 0 {
			w.count.copySyscall()
			w.count.copied(int64(n))
			if _, werr := w.c.Write(chunk[:n]); werr != nil {
				return werr
			}
			off += int64(n)
			left -= int64(n)
		}
		if err != nil && left > 0 {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("file region %s [%d, %d) ends past the end of the file", r.File.Name(), r.Offset, r.Offset+r.Length)
			}
			return err
		}
	}
	return nil
}
