package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DefaultMaxRequestBytes is Kafka's default socket.request.max.bytes (100 MiB):
// the largest request frame a listener accepts.
const DefaultMaxRequestBytes = 104857600

// readChunk is how much of a frame is allocated before any of its bytes have
// arrived; the buffer then doubles as bytes actually arrive, so a peer that
// claims a huge size and sends nothing costs at most this much.
const readChunk = 64 << 10

// minRequestHeaderBytes is api key (2) + api version (2) + correlation id (4).
const minRequestHeaderBytes = 8

// ErrMalformed is wrapped by every error that means the peer broke the
// framing or the encoding: the only safe reaction is to close the connection,
// because the position of the next frame can no longer be trusted.
var ErrMalformed = errors.New("malformed request")

// ErrUnsupported is wrapped by ParseRequest's error when the header is fine
// but kmsg cannot decode the body: an unknown API key or a version outside
// [0, kmsg's MaxVersion]. The returned Request still carries the header.
var ErrUnsupported = errors.New("unsupported api key or version")

// RequestHeader is Kafka's request header (v0–v2). ClientID is nil when the
// client sent a null client id (and always for ControlledShutdown v0, whose
// header has no client id); Tags holds the header's tagged fields of flexible
// versions (none are defined today, so it is normally empty).
type RequestHeader struct {
	APIKey        int16
	APIVersion    int16
	CorrelationID int32
	ClientID      *string
	Tags          kmsg.Tags
}

// Request is one decoded request frame. Body is nil only when ParseRequest
// returned an error wrapping ErrUnsupported.
type Request struct {
	Header RequestHeader
	Body   kmsg.Request
	// Size is the frame's length without its 4-byte size prefix.
	Size int
}

// ReadFrame reads one size-prefixed frame from r and returns its payload
// (without the prefix). A negative size, or one above maxBytes, is an error
// wrapping ErrMalformed; memory grows only as bytes actually arrive. io.EOF
// is returned unwrapped when r ends cleanly before a frame starts.
func ReadFrame(r io.Reader, maxBytes int32) ([]byte, error) {
	var sizeBuf [4]byte
	if _, err := io.ReadFull(r, sizeBuf[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%w: truncated size prefix", ErrMalformed)
		}
		return nil, err
	}
	size := int32(binary.BigEndian.Uint32(sizeBuf[:]))
	switch {
	case size < 0:
		return nil, fmt.Errorf("%w: negative frame size %d", ErrMalformed, size)
	case size > maxBytes:
		return nil, fmt.Errorf("%w: frame size %d is larger than the limit of %d bytes", ErrMalformed, size, maxBytes)
	}
	var buf []byte
	if size <= readChunk {
		buf = make([]byte, 0, size)
	} else {
		// The first readChunk bytes of a larger frame (a produce's batch, a
		// fetched one) are read into a pooled chunk: the frame's own buffer
		// is allocated once they have arrived, so the chunk is not garbage
		// on every such frame.
		chunk := firstChunks.Get().(*[]byte)
		n, err := io.ReadFull(r, *chunk)
		if err == nil {
			buf = make([]byte, readChunk, min(int(size), 2*readChunk))
			copy(buf, *chunk)
		}
		firstChunks.Put(chunk)
		if err != nil {
			return nil, frameCut(err, n, size)
		}
	}
	for len(buf) < int(size) {
		if len(buf) == cap(buf) {
			// Double, capped at the claimed size.
			grown := make([]byte, len(buf), min(int(size), 2*cap(buf)))
			copy(grown, buf)
			buf = grown
		}
		n, err := io.ReadFull(r, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err != nil {
			return nil, frameCut(err, len(buf), size)
		}
	}
	return buf, nil
}

// firstChunks holds the readChunk-byte buffers ReadFrame reads the start of
// a large frame into.
var firstChunks = sync.Pool{New: func() any {
	b := make([]byte, readChunk)
	return &b
}}

// frameCut is the error for a frame whose read failed after got of its
// size bytes: an end of input is a truncated (malformed) frame.
func frameCut(err error, got int, size int32) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: frame truncated after %d of %d bytes", ErrMalformed, got, size)
	}
	return err
}

// ReadRequest reads one frame from r (see ReadFrame) and parses it (see
// ParseRequest).
func ReadRequest(r io.Reader, maxBytes int32) (*Request, error) {
	frame, err := ReadFrame(r, maxBytes)
	if err != nil {
		return nil, err
	}
	return ParseRequest(frame)
}

// ParseRequest decodes a request frame payload: the header, then the body
// with kmsg at the header's version. A header or body that does not decode,
// or bytes left over after the body, give an error wrapping ErrMalformed. An
// API key or version kmsg does not know gives the parsed header (Body nil)
// and an error wrapping ErrUnsupported.
func ParseRequest(frame []byte) (*Request, error) {
	hdr, body, err := parseRequestHeader(frame)
	if err != nil {
		return nil, err
	}
	req := &Request{Header: hdr, Size: len(frame)}
	if !kmsgKnows(hdr.APIKey, hdr.APIVersion) {
		return req, fmt.Errorf("%w: %s", ErrUnsupported, describeKey(hdr.APIKey, hdr.APIVersion))
	}
	req.Body, err = decodeBody(hdr, body)
	if err != nil {
		return nil, err
	}
	return req, nil
}

// kmsgKnows reports whether kmsg can decode (and encode) key at version.
func kmsgKnows(key, version int16) bool {
	r := kmsg.RequestForKey(key)
	return r != nil && version >= 0 && version <= r.MaxVersion()
}

// describeKey names an API key and version for logs, e.g. "Fetch v12 (key 1)".
func describeKey(key, version int16) string {
	name := kmsg.NameForKey(key)
	if name == "" {
		name = "unknown"
	}
	return fmt.Sprintf("%s v%d (key %d)", name, version, key)
}

// isFlexibleRequest reports whether the request header for key at version is
// header v2 (tagged fields). It asks kmsg so the flexible cut-over versions
// are not duplicated here; unknown keys are treated as non-flexible, which
// only matters for reading the client id, which is laid out the same way.
func isFlexibleRequest(key, version int16) bool {
	r := kmsg.RequestForKey(key)
	if r == nil {
		return false
	}
	r.SetVersion(version)
	return r.IsFlexible()
}

// parseRequestHeader reads the request header and returns it with the
// remaining body bytes.
func parseRequestHeader(frame []byte) (RequestHeader, []byte, error) {
	var hdr RequestHeader
	if len(frame) < minRequestHeaderBytes {
		return hdr, nil, fmt.Errorf("%w: truncated request header (%d bytes)", ErrMalformed, len(frame))
	}
	b := kbin.Reader{Src: frame}
	hdr.APIKey = b.Int16()
	hdr.APIVersion = b.Int16()
	hdr.CorrelationID = b.Int32()
	// ControlledShutdown v0 predates the client id (request header v0).
	if hdr.APIKey == 7 && hdr.APIVersion == 0 {
		return hdr, b.Src, nil
	}
	// The client id stays a classic (int16-length) nullable string even in
	// the flexible header v2, so that ApiVersions can be parsed by brokers
	// that do not yet know the client's version.
	hdr.ClientID = b.NullableString()
	if isFlexibleRequest(hdr.APIKey, hdr.APIVersion) {
		hdr.Tags = kmsg.ReadTags(&b)
	}
	if !b.Ok() {
		return RequestHeader{}, nil, fmt.Errorf("%w: truncated request header for %s", ErrMalformed, describeKey(hdr.APIKey, hdr.APIVersion))
	}
	return hdr, b.Src, nil
}

// decodeBody decodes body as the request hdr names, which kmsg must know.
// kmsg's ReadFrom ignores bytes left over after the last field, so leftovers
// are detected by decoding the body minus its last byte: a decoder reads
// strictly left to right, so that shorter decode fails exactly when the full
// decode needed every byte.
func decodeBody(hdr RequestHeader, body []byte) (kmsg.Request, error) {
	req := kmsg.RequestForKey(hdr.APIKey)
	req.SetVersion(hdr.APIVersion)
	if err := req.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("%w: %s body does not decode: %v", ErrMalformed, describeKey(hdr.APIKey, hdr.APIVersion), err)
	}
	if len(body) > 0 {
		probe := kmsg.RequestForKey(hdr.APIKey)
		probe.SetVersion(hdr.APIVersion)
		read := probe.ReadFrom
		if u, ok := probe.(kmsg.UnsafeReadFrom); ok {
			read = u.UnsafeReadFrom // the probe is dropped, so no copies
		}
		if read(body[:len(body)-1]) == nil {
			return nil, fmt.Errorf("%w: %s body has trailing bytes", ErrMalformed, describeKey(hdr.APIKey, hdr.APIVersion))
		}
	}
	return req, nil
}

// isFlexibleResponseHeader reports whether a response to key at version uses
// response header v1 (correlation id + tagged fields). ApiVersions responses
// always use header v0, so that a client can read the error code of a
// response to a version the broker does not understand.
func isFlexibleResponseHeader(key, version int16) bool {
	return key != 18 && isFlexibleRequest(key, version)
}

// appendResponseFrame appends a complete response frame (size, header, body)
// for resp answering correlationID. resp's version must already be set.
func appendResponseFrame(dst []byte, correlationID int32, resp kmsg.Response) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0) // size, patched below
	dst = kbin.AppendInt32(dst, correlationID)
	if isFlexibleResponseHeader(resp.Key(), resp.GetVersion()) {
		dst = append(dst, 0) // no header tags
	}
	dst = resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}
