package wire

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Dialer opens a connection to addr. It has the shape of
// (*net.Dialer).DialContext; the cluster runtime injects its own to simulate
// cut links between brokers.
type Dialer func(ctx context.Context, network, addr string) (net.Conn, error)

// DefaultMaxResponseBytes bounds one response frame a Client accepts unless
// ClientOptions says otherwise (100 MiB, the same as a listener's default
// request limit).
const DefaultMaxResponseBytes = DefaultMaxRequestBytes

// ClientOptions configures a Client. The zero value dials with net.Dialer
// and accepts responses up to DefaultMaxResponseBytes.
type ClientOptions struct {
	// Dialer opens the connection; nil means net.Dialer's, the connection
	// marked as the process's own (own.go): this process's listeners admit
	// it past their connection limits.
	Dialer Dialer
	// MaxResponseBytes bounds one response frame; 0 means
	// DefaultMaxResponseBytes. A larger size prefix breaks the connection.
	MaxResponseBytes int32
	// ConnectionsMaxIdle is the client's connections.max.idle.ms: a request
	// after the connection has been unused this long first replaces it with
	// a fresh one, so the broker's own idle timeout (longer, as in Kafka:
	// 9 against 10 minutes) never closes it under a request. 0 means
	// DefaultClientConnectionsMaxIdle; negative never redials.
	ConnectionsMaxIdle time.Duration
}

// DefaultClientConnectionsMaxIdle is Kafka clients' default
// connections.max.idle.ms (9 minutes), below the broker's 10.
const DefaultClientConnectionsMaxIdle = 9 * time.Minute

// ErrClientBroken is wrapped by every error of a Client whose connection an
// earlier failure (I/O error, cancellation mid-request, protocol error)
// left in an unknown state; dial a new one.
var ErrClientBroken = errors.New("wire: client connection broken by an earlier error")

// Client is one Kafka-protocol connection, as a follower's fetcher or a test
// uses it. Its methods are safe for concurrent use but requests are
// serialized: one is in flight at a time, so a long fetch delays the rest
// (open one Client per independent stream, as Kafka's replica fetchers do).
type Client struct {
	mu       sync.Mutex
	conn     net.Conn
	br       *bufio.Reader
	format   *kmsg.RequestFormatter
	maxResp  int32
	corr     int32
	buf      []byte
	broken   error
	versions VersionTable // from Negotiate; nil before it

	addr     string
	remote   net.Addr // the first connection's; set once
	dial     Dialer
	maxIdle  time.Duration
	lastUsed time.Time
}

// Dial connects to addr with net.Dialer, naming itself clientID in request
// headers.
func Dial(ctx context.Context, addr, clientID string) (*Client, error) {
	return DialOptions(ctx, addr, clientID, ClientOptions{})
}

// DialOptions is Dial with options (an injected Dialer, a response limit).
func DialOptions(ctx context.Context, addr, clientID string, opts ClientOptions) (*Client, error) {
	dial := opts.Dialer
	if dial == nil {
		dial = dialOwn
	}
	if opts.MaxResponseBytes == 0 {
		opts.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if opts.MaxResponseBytes < 4 {
		return nil, fmt.Errorf("wire: MaxResponseBytes %d is below a response header", opts.MaxResponseBytes)
	}
	if opts.ConnectionsMaxIdle == 0 {
		opts.ConnectionsMaxIdle = DefaultClientConnectionsMaxIdle
	}
	c := &Client{
		format:  kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID)),
		maxResp: opts.MaxResponseBytes,
		addr:    addr,
		dial:    dial,
		maxIdle: opts.ConnectionsMaxIdle,
	}
	if err := c.connect(ctx); err != nil {
		return nil, err
	}
	c.remote = c.conn.RemoteAddr()
	return c, nil
}

// connect dials c's broker and makes the new connection c's.
func (c *Client) connect(ctx context.Context) error {
	conn, err := c.dial(ctx, "tcp", c.addr)
	if err != nil {
		return fmt.Errorf("wire: dial %s: %w", c.addr, err)
	}
	c.conn, c.br, c.lastUsed = conn, bufio.NewReaderSize(conn, 16<<10), time.Now()
	return nil
}

// Close closes the connection; requests after it fail.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken == nil {
		c.broken = net.ErrClosed
	}
	return c.conn.Close()
}

// RemoteAddr returns the address of the broker.
func (c *Client) RemoteAddr() net.Addr { return c.remote }

// Versions returns the broker's table learned by Negotiate; nil before it.
func (c *Client) Versions() VersionTable {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.versions
}

// Negotiate sends ApiVersions and remembers the broker's table for
// PickVersion. If the broker does not know the version asked, it retries
// once at the version the broker names, as Kafka clients do (KIP-511).
func (c *Client) Negotiate(ctx context.Context) (VersionTable, error) {
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(req.MaxVersion())
	req.ClientSoftwareName, req.ClientSoftwareVersion = "tidemark", "0"
	for try := 0; ; try++ {
		resp, err := c.Request(ctx, req)
		if err != nil {
			return nil, err
		}
		av := resp.(*kmsg.ApiVersionsResponse)
		if av.ErrorCode == kerr.UnsupportedVersion.Code && try == 0 {
			for _, k := range av.ApiKeys {
				if k.ApiKey == apiVersionsKey && k.MaxVersion < req.GetVersion() && k.MaxVersion >= 0 {
					req.SetVersion(k.MaxVersion)
				}
			}
			if req.GetVersion() != req.MaxVersion() {
				continue
			}
		}
		if err := kerr.ErrorForCode(av.ErrorCode); err != nil {
			return nil, fmt.Errorf("wire: ApiVersions: %w", err)
		}
		t := make(VersionTable, len(av.ApiKeys))
		for _, k := range av.ApiKeys {
			t[k.ApiKey] = VersionRange{Min: k.MinVersion, Max: k.MaxVersion}
		}
		c.mu.Lock()
		c.versions = t
		c.mu.Unlock()
		return t, nil
	}
}

// PickVersion sets req's version to the highest one in want that kmsg and
// (after Negotiate) the broker support. It returns an error wrapping
// kerr.UnsupportedVersion, leaving req unchanged, when there is none.
func (c *Client) PickVersion(req kmsg.Request, want VersionRange) error {
	lo, hi := want.Min, min(want.Max, req.MaxVersion())
	if t := c.Versions(); t != nil {
		r, ok := t[req.Key()]
		if !ok {
			return fmt.Errorf("wire: broker does not serve %s: %w", kmsg.NameForKey(req.Key()), kerr.UnsupportedVersion)
		}
		lo, hi = max(lo, r.Min), min(hi, r.Max)
	}
	if lo > hi {
		return fmt.Errorf("wire: no common %s version in %d..%d: %w", kmsg.NameForKey(req.Key()), want.Min, want.Max, kerr.UnsupportedVersion)
	}
	req.SetVersion(hi)
	return nil
}

// longAgo is a deadline in the past, used to interrupt blocked I/O.
var longAgo = time.Unix(1, 0)

// Request sends req at the version it carries (see PickVersion) and waits
// for its response, honoring ctx's deadline and cancellation. A Produce
// request with acks=0 gets no response from Kafka: Request returns (nil,
// nil) once it is written. Any failure after the request started to be
// written breaks the Client (ErrClientBroken), because the stream position
// is then unknown.
func (c *Client) Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken != nil {
		return nil, fmt.Errorf("%w: %w", ErrClientBroken, c.broken)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if c.maxIdle > 0 && time.Since(c.lastUsed) > c.maxIdle {
		// Nothing is in flight, so a fresh connection loses nothing.
		c.conn.Close()
		if err := c.connect(ctx); err != nil {
			c.broken = err
			return nil, err
		}
	}
	defer func() { c.lastUsed = time.Now() }()
	deadline, _ := ctx.Deadline() // zero: none
	if err := c.conn.SetDeadline(deadline); err != nil {
		return nil, c.fail(ctx, err)
	}
	interrupted := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		c.conn.SetDeadline(longAgo)
		close(interrupted)
	})
	defer func() {
		if !stop() {
			<-interrupted // the next request must not see this deadline land late
		}
	}()

	corr := c.corr
	c.corr++
	c.buf = c.format.AppendRequest(c.buf[:0], req, corr)
	_, err := c.conn.Write(c.buf)
	if cap(c.buf) > maxKeptBuf {
		c.buf = nil
	}
	if err != nil {
		return nil, c.fail(ctx, err)
	}
	if p, ok := req.(*kmsg.ProduceRequest); ok && p.Acks == 0 {
		return nil, nil
	}

	frame, err := ReadFrame(c.br, c.maxResp)
	if err != nil {
		return nil, c.fail(ctx, err)
	}
	b := kbin.Reader{Src: frame}
	if got := b.Int32(); got != corr || !b.Ok() {
		return nil, c.fail(ctx, fmt.Errorf("response correlation id %d, want %d", got, corr))
	}
	if isFlexibleResponseHeader(req.Key(), req.GetVersion()) {
		kmsg.SkipTags(&b)
		if !b.Ok() {
			return nil, c.fail(ctx, errors.New("truncated response header"))
		}
	}
	body := b.Src
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	// A broker that does not know our ApiVersions version answers at v0
	// with UNSUPPORTED_VERSION (error code 35 in the first two bytes).
	if req.Key() == apiVersionsKey && len(body) >= 2 && body[0] == 0 && body[1] == byte(kerr.UnsupportedVersion.Code) {
		resp.SetVersion(0)
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, c.fail(ctx, fmt.Errorf("decode %s response: %w", describeKey(req.Key(), resp.GetVersion()), err))
	}
	return resp, nil
}

// fail breaks the client with err (or ctx's error, if ctx caused it) and
// closes the connection.
func (c *Client) fail(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		err = fmt.Errorf("%w (%w)", ctxErr, err)
	} else if _, ok := ctx.Deadline(); ok && errors.Is(err, os.ErrDeadlineExceeded) {
		// The socket deadline is ctx's; it can fire a moment before ctx
		// itself reports being done.
		err = fmt.Errorf("%w (%w)", context.DeadlineExceeded, err)
	}
	c.broken = err
	c.conn.Close()
	return fmt.Errorf("wire: %w", err)
}
