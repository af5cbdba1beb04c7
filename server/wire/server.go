package wire

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"reflect"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"tidemark/internal/fds"
)

// Handler serves the requests a listener decodes. The listener answers
// ApiVersions itself from Versions and never passes it to Handle.
type Handler interface {
	// Versions returns the API keys and version ranges the handler
	// implements; the listener advertises exactly these (plus ApiVersions)
	// and never calls Handle with anything else. It is read once, when the
	// Server is created. An empty table implements nothing.
	Versions() VersionTable

	// Handle serves one request and returns its response, whose version the
	// listener sets to the request's. Requests of one connection are handed
	// over one at a time, in arrival order, so Handle may block (an acks=all
	// produce waiting for the high watermark) without reordering responses;
	// it must return once ctx is done, which happens when the server stops.
	// A client that disconnects meanwhile does not cancel ctx (as in Kafka,
	// the operation completes and its response is dropped). A nil response sends nothing, which
	// Kafka allows only for a Produce request with acks=0; a non-nil error
	// closes the connection and is logged as the reason. A *Spliced response
	// lets byte fields be sent from file regions without a user-space copy.
	Handle(ctx context.Context, rc *RequestContext, req kmsg.Request) (kmsg.Response, error)
}

// Preparer is implemented by a Handler that can do part of a request's
// work before its turn. Prepare runs on the connection's reader goroutine
// as soon as the request is decoded, while the connection's earlier
// requests are still being handled, so work that depends only on the
// request's own bytes (checking a produce's records) overlaps with an
// earlier request's wait (an acks=all produce waiting for its followers)
// instead of adding to it. Handle gets the result as
// RequestContext.Prepared. Prepare must not block or touch state Handle
// changes; at most QueuedRequests prepared requests wait per connection.
type Preparer interface {
	Prepare(req kmsg.Request) any
}

// RequestContext describes where a request came from. ConnID numbers the
// listener's connections from 1, in accept order. Prepared is what the
// Handler's Prepare returned for the request (nil without a Preparer).
type RequestContext struct {
	Header     RequestHeader
	ConnID     uint64
	RemoteAddr net.Addr
	LocalAddr  net.Addr
	Prepared   any
}

// Options configures a Server. The zero value gives Kafka's defaults.
type Options struct {
	// MaxRequestBytes bounds one request frame, like Kafka's
	// socket.request.max.bytes; a larger size prefix closes the connection.
	// 0 means DefaultMaxRequestBytes (104857600).
	MaxRequestBytes int32

	// QueuedRequests is how many decoded requests of one connection may wait
	// while the previous one is handled: reading and decoding overlap with
	// handling, while handling and responses stay strictly in order. 0
	// means 4.
	QueuedRequests int

	// CopyFileRegions sends the file regions of *Spliced responses by
	// reading them into memory and writing them, instead of with
	// sendfile(2). It exists to measure what zero copy saves. Connections
	// that do not implement syscall.Conn (wrappers) always copy.
	CopyFileRegions bool

	// ConnectionsMaxIdle is Kafka's connections.max.idle.ms: a connection
	// that has had no request and no response for this long, with none in
	// flight, is closed. 0 means DefaultConnectionsMaxIdle (10 minutes, as
	// in Kafka); negative never closes idle connections.
	ConnectionsMaxIdle time.Duration

	// MaxConnectionsPerIP is Kafka's max.connections.per.ip: a connection
	// from an address that already holds this many is closed as soon as it
	// is accepted, and counted (Stats). 0 means DefaultMaxConnectionsPerIP of the process's descriptor limit;
	// negative means no limit.
	MaxConnectionsPerIP int

	// Logger receives one record per connection closed by the server,
	// with the reason, and the listener's state (accept failures, refused
	// connections: at most one line per LogInterval each, with a count).
	// nil means slog.Default().
	Logger *slog.Logger

	// LogInterval is the most often a repeated listener error is logged.
	// 0 means 10s.
	LogInterval time.Duration

	// OnRequest, when set, is told of every request answered (or, for an
	// acks=0 produce, handled): its API key and Kafka's TotalTimeMs, from
	// the frame read to the response written. It runs on the connection's
	// goroutine, so it must be quick (a histogram's Observe).
	OnRequest func(apiKey int16, total time.Duration)
}

// validate fills defaults and rejects contradictions.
func (o *Options) validate() error {
	if o.MaxRequestBytes == 0 {
		o.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if o.MaxRequestBytes < minRequestHeaderBytes {
		return fmt.Errorf("wire: MaxRequestBytes %d is below the %d bytes of a request header", o.MaxRequestBytes, minRequestHeaderBytes)
	}
	if o.QueuedRequests == 0 {
		o.QueuedRequests = 4
	}
	if o.QueuedRequests < 0 {
		return fmt.Errorf("wire: QueuedRequests %d is negative", o.QueuedRequests)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.ConnectionsMaxIdle == 0 {
		o.ConnectionsMaxIdle = DefaultConnectionsMaxIdle
	}
	if o.MaxConnectionsPerIP == 0 {
		o.MaxConnectionsPerIP = DefaultMaxConnectionsPerIP(fds.Limit())
	}
	if o.LogInterval <= 0 {
		o.LogInterval = 10 * time.Second
	}
	return nil
}

// Server is a Kafka-protocol listener loop: it frames and decodes requests,
// answers ApiVersions, and hands the rest to a Handler. One Server may serve
// several listeners at once.
type Server struct {
	h        Handler
	opts     Options
	table    VersionTable // handler's table plus ApiVersions
	handled  VersionTable // handler's table
	connIDs  atomic.Uint64
	limits   listenerLimits // limits.go
	regions  regionCounters // stats.go
	closeLog closeLog       // closelog.go
}

// NewServer returns a Server for h, or an error if opts or h's version table
// are invalid.
func NewServer(h Handler, opts Options) (*Server, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	handled := h.Versions()
	if err := validateHandlerTable(handled); err != nil {
		return nil, err
	}
	s := &Server{h: h, opts: opts, table: advertised(handled), handled: handled}
	s.limits.init(opts)
	s.closeLog.every = opts
	return s, nil
}

// Advertised returns a copy of the table the server sends in ApiVersions
// responses.
func (s *Server) Advertised() VersionTable { return advertised(s.handled) }

// Serve is NewServer followed by (*Server).Serve.
func Serve(ctx context.Context, ln net.Listener, h Handler, opts Options) error {
	s, err := NewServer(h, opts)
	if err != nil {
		return err
	}
	return s.Serve(ctx, ln)
}

// Serve accepts connections on ln until ctx is done or Accept fails for
// good, then closes ln and every connection it accepted, waits for their
// handlers to return, and returns nil if ctx ended it or Accept's error
// otherwise, which it also logs: a listener never stops unnoticed. A
// temporary Accept error (out of file descriptors: EMFILE, ENFILE) does not
// stop it: it waits, 5 ms doubling up to 1 s as net/http does, and accepts
// again. A connection over MaxConnectionsPerIP is closed at once.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()

	var wg sync.WaitGroup
	var delay time.Duration // backoff after temporary Accept errors
	for {
		c, err := ln.Accept()
		if err != nil && parent.Err() == nil && isTemporary(err) {
			delay = nextDelay(delay)
			s.limits.acceptFailed(s.opts.Logger, ln.Addr(), err, delay)
			select {
			case <-time.After(delay):
				continue
			case <-parent.Done():
			}
		}
		if err != nil || parent.Err() != nil {
			if c != nil {
				c.Close()
			}
			cancel()
			wg.Wait()
			if parent.Err() != nil {
				return nil
			}
			s.opts.Logger.Error("Kafka listener stopped: accept failed", "listener", ln.Addr().String(), "err", err)
			return fmt.Errorf("wire: accept: %w", err)
		}
		delay = 0
		release, ok := s.limits.admit(s.opts.Logger, c)
		if !ok {
			c.Close()
			continue
		}
		id := s.connIDs.Add(1)
		wg.Go(func() {
			defer release()
			s.serveConn(ctx, c, id)
		})
	}
}

// connItem is what a connection's reader hands to its processor: a decoded
// request, a request with an unsupported key/version (err wraps
// ErrUnsupported), or the error that ends reading.
type connItem struct {
	req      *Request
	prepared any // the Handler's Prepare result for req
	err      error
	received time.Time // when its frame was read (Options.OnRequest)
}

// errClosed is the internal reason for a connection the peer closed cleanly.
var errClosed = errors.New("connection closed by client")

// serveConn runs one connection: a reader goroutine decodes frames ahead
// while this goroutine handles them in order and writes the responses.
func (s *Server) serveConn(ctx context.Context, c net.Conn, id uint64) {
	log := s.opts.Logger.With("conn", id, "remote", c.RemoteAddr().String(), "local", c.LocalAddr().String())
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()

	idle := s.watchIdle(ctx, cancel)
	items := make(chan connItem, s.opts.QueuedRequests)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		defer close(items)
		s.readLoop(ctx, c, items, idle, log)
	}()
	defer func() { <-readerDone }()
	defer cancel() // runs before the wait: closes c, so the reader's Read returns

	reason, err := s.processLoop(ctx, c, id, items, idle)
	switch {
	case idle.expired.Load():
		s.limits.idleClosed.Add(1)
		log.Info("closing idle connection", "idle", s.opts.ConnectionsMaxIdle.String(), "config", "connections.max.idle.ms")
	case ctx.Err() != nil:
		log.Debug("connection closed: server stopping")
	case errors.Is(err, errClosed):
		log.Debug("connection closed by client")
	default:
		ip := c.RemoteAddr().String()
		if host, _, err := net.SplitHostPort(ip); err == nil {
			ip = host
		}
		s.closeLog.warn(log, ip, reason, err) // closelog.go: at most a few per LogInterval per address
	}
}

// readLoop reads and decodes frames into items until an error, which it
// sends as the last item. It recovers from panics so one connection's bad
// bytes can never take down the process.
func (s *Server) readLoop(ctx context.Context, c net.Conn, items chan<- connItem, idle *activity, log *slog.Logger) {
	send := func(it connItem) bool {
		select {
		case items <- it:
			return true
		case <-ctx.Done():
			return false
		}
	}
	defer func() {
		if p := recover(); p != nil {
			log.Error("panic while reading request", "panic", p, "stack", string(debug.Stack()))
			send(connItem{err: fmt.Errorf("%w: panic while decoding: %v", ErrMalformed, p)})
		}
	}()
	br := bufio.NewReaderSize(c, 16<<10)
	for {
		frame, err := ReadFrame(br, s.opts.MaxRequestBytes)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errClosed
			}
			send(connItem{err: err})
			return
		}
		idle.begin()
		received := time.Now()
		req, err := s.decode(frame)
		var prepared any
		if p, ok := s.h.(Preparer); ok && err == nil {
			prepared = p.Prepare(req.Body)
		}
		if !send(connItem{req: req, prepared: prepared, err: err, received: received}) {
			return
		}
		if err != nil && !errors.Is(err, ErrUnsupported) {
			return
		}
	}
}

// decode parses a frame, decoding the body only when the advertised table
// has its key and version; otherwise it returns the header with an error
// wrapping ErrUnsupported, as Kafka does not parse bodies it cannot serve.
func (s *Server) decode(frame []byte) (*Request, error) {
	hdr, body, err := parseRequestHeader(frame)
	if err != nil {
		return nil, err
	}
	req := &Request{Header: hdr, Size: len(frame)}
	if !s.table.Supports(hdr.APIKey, hdr.APIVersion) {
		if kmsgKnows(hdr.APIKey, hdr.APIVersion) && unsupportedResponse(hdr.APIKey, hdr.APIVersion) == nil {
			// Its answer must name the request's items (unserved.go); a
			// body that does not decode is simply not kept.
			req.Body, _ = decodeBody(hdr, body)
		}
		return req, fmt.Errorf("%w: %s is not served by this listener", ErrUnsupported, describeKey(hdr.APIKey, hdr.APIVersion))
	}
	req.Body, err = decodeBody(hdr, body)
	if err != nil {
		return nil, err
	}
	return req, nil
}

// processLoop handles items in order until one ends the connection, and
// returns a short reason with the error. A handler panic is recovered here.
func (s *Server) processLoop(ctx context.Context, c net.Conn, id uint64, items <-chan connItem, idle *activity) (reason string, err error) {
	defer func() {
		if p := recover(); p != nil {
			reason = "panic while handling request"
			err = fmt.Errorf("panic: %v\n%s", p, debug.Stack())
		}
	}()
	w := newResponseWriter(c, s.opts.CopyFileRegions, &s.regions)
	for it := range items {
		if it.err != nil && !errors.Is(it.err, ErrUnsupported) {
			switch {
			case errors.Is(it.err, errClosed):
				return "", it.err
			case errors.Is(it.err, ErrMalformed):
				return "malformed request", it.err
			default:
				return "read failed", it.err
			}
		}
		hdr := it.req.Header
		resp, reason, err := s.respond(ctx, c, id, it)
		if err != nil {
			return reason, fmt.Errorf("%s: %w", describeKey(hdr.APIKey, hdr.APIVersion), err)
		}
		if resp != nil {
			err = w.write(hdr.CorrelationID, resp)
		}
		idle.end()
		if s.opts.OnRequest != nil && err == nil {
			s.opts.OnRequest(hdr.APIKey, time.Since(it.received))
		}
		if err != nil {
			return "write failed", fmt.Errorf("%s response: %w", describeKey(hdr.APIKey, hdr.APIVersion), err)
		}
	}
	return "", errClosed // the reader stopped because ctx ended
}

// respond produces the response for one item: nil with a nil error means
// send nothing; an error closes the connection with reason.
func (s *Server) respond(ctx context.Context, c net.Conn, id uint64, it connItem) (kmsg.Response, string, error) {
	hdr := it.req.Header
	if hdr.APIKey == apiVersionsKey {
		return answerAPIVersions(s.table, hdr.APIVersion), "", nil
	}
	if it.err != nil { // ErrUnsupported
		if resp := unsupportedResponse(hdr.APIKey, hdr.APIVersion); resp != nil {
			return resp, "", nil
		}
		if it.req.Body != nil {
			if resp := unservedAnswer(it.req.Body); resp != nil {
				resp.SetVersion(hdr.APIVersion)
				return resp, "", nil
			}
		}
		return nil, "unsupported api key or version, and its response has no error code to say so", it.err
	}
	rc := &RequestContext{Header: hdr, ConnID: id, RemoteAddr: c.RemoteAddr(), LocalAddr: c.LocalAddr(), Prepared: it.prepared}
	resp, err := s.h.Handle(ctx, rc, it.req.Body)
	if err != nil {
		return nil, "handler error", err
	}
	if produce, ok := it.req.Body.(*kmsg.ProduceRequest); ok && produce.Acks == 0 {
		return nil, "", acksZeroOutcome(resp)
	}
	if resp == nil {
		return nil, "handler returned no response", errors.New("only a Produce request with acks=0 may go unanswered")
	}
	if resp.Key() != hdr.APIKey {
		return nil, "handler returned the wrong response type", fmt.Errorf("response is %s", kmsg.NameForKey(resp.Key()))
	}
	resp.SetVersion(hdr.APIVersion)
	return resp, "", nil
}

// acksZeroOutcome decides what an acks=0 produce's response means: Kafka
// never sends it, and tells the producer of a failure the only way left, by
// closing the connection.
func acksZeroOutcome(resp kmsg.Response) error {
	pr, ok := resp.(*kmsg.ProduceResponse)
	if !ok {
		return nil
	}
	for _, t := range pr.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return fmt.Errorf("acks=0 produce to %s[%d] failed: %w", t.Topic, p.Partition, err)
			}
		}
	}
	return nil
}

// unsupportedResponse returns a response to key at version carrying
// UNSUPPORTED_VERSION, or nil when kmsg cannot encode that version or the
// response has no top-level ErrorCode to carry it (those responses only have
// per-partition error codes, which cannot be filled without the body).
func unsupportedResponse(key, version int16) kmsg.Response {
	resp := kmsg.ResponseForKey(key)
	if resp == nil || version < 0 || version > resp.MaxVersion() {
		return nil
	}
	resp.SetVersion(version)
	f := reflect.ValueOf(resp).Elem().FieldByName("ErrorCode")
	if !f.IsValid() || f.Kind() != reflect.Int16 || !f.CanSet() {
		return nil
	}
	// Some responses gained ErrorCode in a later version (Fetch in v7): if
	// setting it does not change the encoding, this version cannot carry it.
	without := resp.AppendTo(nil)
	f.SetInt(int64(kerr.UnsupportedVersion.Code))
	if string(resp.AppendTo(nil)) == string(without) {
		return nil
	}
	return resp
}
