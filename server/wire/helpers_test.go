package wire

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// funcHandler is a Handler built from a table and a function.
type funcHandler struct {
	table VersionTable
	fn    func(ctx context.Context, rc *RequestContext, req kmsg.Request) (kmsg.Response, error)
}

func (h *funcHandler) Versions() VersionTable { return h.table }
func (h *funcHandler) Handle(ctx context.Context, rc *RequestContext, req kmsg.Request) (kmsg.Response, error) {
	return h.fn(ctx, rc, req)
}

// logSink is a slog.Handler that keeps records so tests can assert the
// reason a connection was closed.
type logSink struct {
	mu      sync.Mutex
	records []string
	changed chan struct{} // closed and replaced on every record
}

func newLogSink() *logSink { return &logSink{changed: make(chan struct{})} }

func (s *logSink) Enabled(context.Context, slog.Level) bool { return true }
func (s *logSink) WithAttrs(as []slog.Attr) slog.Handler {
	return &attrSink{sink: s, attrs: as}
}
func (s *logSink) WithGroup(string) slog.Handler { return s }
func (s *logSink) Handle(_ context.Context, r slog.Record) error {
	return s.add(r, nil)
}

func (s *logSink) add(r slog.Record, pre []slog.Attr) error {
	var b strings.Builder
	b.WriteString(r.Level.String() + " " + r.Message)
	for _, a := range pre {
		b.WriteString(" " + a.String())
	}
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.String())
		return true
	})
	s.mu.Lock()
	s.records = append(s.records, b.String())
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
	return nil
}

// waitFor returns the first record containing every part, failing the test
// if none appears within a generous bound.
func (s *logSink) waitFor(t *testing.T, parts ...string) string {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		s.mu.Lock()
		for _, r := range s.records {
			ok := true
			for _, p := range parts {
				ok = ok && strings.Contains(r, p)
			}
			if ok {
				s.mu.Unlock()
				return r
			}
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-timeout:
			s.mu.Lock()
			defer s.mu.Unlock()
			t.Fatalf("no log record with %q; have:\n%s", parts, strings.Join(s.records, "\n"))
		}
	}
}

type attrSink struct {
	sink  *logSink
	attrs []slog.Attr
}

func (a *attrSink) Enabled(context.Context, slog.Level) bool { return true }
func (a *attrSink) WithAttrs(as []slog.Attr) slog.Handler {
	return &attrSink{sink: a.sink, attrs: append(append([]slog.Attr{}, a.attrs...), as...)}
}
func (a *attrSink) WithGroup(string) slog.Handler { return a }
func (a *attrSink) Handle(_ context.Context, r slog.Record) error {
	return a.sink.add(r, a.attrs)
}

// startServer serves h on a fresh 127.0.0.1 listener until the test ends
// and returns its address and log.
func startServer(t testing.TB, h Handler, opts Options) (string, *logSink) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, sink := serveListener(t, h, opts, ln)
	return ln.Addr().String(), sink
}

// serveListener serves h on ln until the test ends and returns the Server
// and its log.
func serveListener(t testing.TB, h Handler, opts Options, ln net.Listener) (*Server, *logSink) {
	t.Helper()
	sink := newLogSink()
	if opts.Logger == nil {
		opts.Logger = slog.New(sink)
	}
	s, err := NewServer(h, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return s, sink
}

// metadataHandler answers Metadata with one broker (the listener itself,
// node 1) and, for each requested topic, one partition led by it; it echoes
// the requested topic names in order, which the ordering tests use.
func metadataResponse(rc *RequestContext, req *kmsg.MetadataRequest) *kmsg.MetadataResponse {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	host, port, _ := net.SplitHostPort(rc.LocalAddr.String())
	var p int32
	for _, c := range port {
		p = p*10 + int32(c-'0')
	}
	b := kmsg.NewMetadataResponseBroker()
	b.NodeID, b.Host, b.Port = 1, host, p
	resp.Brokers = []kmsg.MetadataResponseBroker{b}
	resp.ControllerID = 1
	for _, rt := range req.Topics {
		t := kmsg.NewMetadataResponseTopic()
		t.Topic = rt.Topic
		pt := kmsg.NewMetadataResponseTopicPartition()
		pt.Partition, pt.Leader, pt.Replicas, pt.ISR = 0, 1, []int32{1}, []int32{1}
		t.Partitions = []kmsg.MetadataResponseTopicPartition{pt}
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}

// makeBatch encodes a valid magic-2 record batch (CRC-32C included) holding
// values at offsets base, base+1, ….
func makeBatch(base int64, values ...string) []byte {
	var recs []byte
	for i, v := range values {
		r := kmsg.Record{OffsetDelta: int32(i), Value: []byte(v)}
		r.Length = int32(len(r.AppendTo(nil)) - 1) // Length 0 encodes in one byte
		recs = r.AppendTo(recs)
	}
	b := kmsg.RecordBatch{
		FirstOffset: base, Magic: 2, LastOffsetDelta: int32(len(values) - 1),
		FirstTimestamp: 1, MaxTimestamp: 1, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
		NumRecords: int32(len(values)), Records: recs,
	}
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}

// frameOf encodes req as a complete request frame.
func frameOf(req kmsg.Request, version int16, corr int32, clientID string) []byte {
	req.SetVersion(version)
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID)).AppendRequest(nil, req, corr)
}

// dialServer starts a server for h with default options and returns a raw
// connection to it, closed when the test ends.
func dialServer(t *testing.T, h Handler) net.Conn {
	t.Helper()
	addr, _ := startServer(t, h, Options{})
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// metadataFrame is the frame of a Metadata request for one topic.
func metadataFrame(topic string, version int16, corr int32) []byte {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = []kmsg.MetadataRequestTopic{rt}
	return frameOf(req, version, corr, "c")
}
