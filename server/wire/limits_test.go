package wire

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"tidemark/internal/fds"
)

// roundTrip negotiates versions on a fresh connection to addr, dialed as
// another process's client (not the lab's own), and asks for metadata
// once: the listener is serving.
func roundTrip(t *testing.T, addr string) *Client {
	t.Helper()
	return roundTripWith(t, addr, (&net.Dialer{}).DialContext)
}

// roundTripWith is roundTrip dialing with dial (nil: the Client's own).
func roundTripWith(t *testing.T, addr string, dial Dialer) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := DialOptions(ctx, addr, "limits-test", ClientOptions{Dialer: dial})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Negotiate(ctx); err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrMetadataRequest()
	if err := c.PickVersion(req, VersionRange{0, 12}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Request(ctx, req); err != nil {
		t.Fatal(err)
	}
	return c
}

// waitClosed fails the test unless the server closes conn within a bounded
// wait.
func waitClosed(t *testing.T, conn net.Conn, what string) {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := conn.Read(make([]byte, 1))
	var ne net.Error
	switch {
	case err == nil:
		t.Fatalf("%s: the server sent %d bytes instead of closing", what, n)
	case errors.As(err, &ne) && ne.Timeout():
		t.Fatalf("%s: the server did not close the connection", what)
	}
}

// waitFor polls cond (a server counter) until it holds, within a bound.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestMaxConnectionsPerIP holds two connections from 127.0.0.1 against a
// limit of two: a third is closed at once, counted and logged; once one of
// the two ends, a new one is served.
func TestMaxConnectionsPerIP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, sink := serveListener(t, labHandler(new(atomic.Int64)), Options{MaxConnectionsPerIP: 2}, ln)
	addr := ln.Addr().String()
	a, b := roundTrip(t, addr), roundTrip(t, addr)
	defer b.Close()

	third, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	waitClosed(t, third, "third connection")
	if st := s.Stats(); st.RefusedPerIP != 1 || st.Open != 2 {
		t.Fatalf("stats %+v, want 1 refused and 2 open", st)
	}
	sink.waitFor(t, "max.connections.per.ip", "limit=2", "refused=1")

	a.Close()
	waitFor(t, "the closed connection to be released", func() bool { return s.Stats().Open == 1 })
	roundTrip(t, addr).Close()
}

// TestOwnConnectionsReserved: the lab's own connections (a follower's
// fetches dial with the Client's default dialer) are admitted past
// max.connections.per.ip and while the process is short of descriptors,
// where another client's are closed at once; the port an own connection
// holds cannot be bound by anyone else while it is open, and is forgotten
// once closed. Before, a follower's new connection to its leader was
// refused like any client's, and the follower fell out of the ISR.
func TestOwnConnectionsReserved(t *testing.T) {
	var open atomic.Int64
	defer fds.SetAccount(1000, func() int { return int(open.Load()) })()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := serveListener(t, labHandler(new(atomic.Int64)), Options{MaxConnectionsPerIP: 1}, ln)
	addr := ln.Addr().String()
	client := roundTrip(t, addr) // another process's: fills 127.0.0.1's one place
	defer client.Close()
	foreign, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer foreign.Close()
	waitClosed(t, foreign, "a second client connection over max.connections.per.ip 1")

	own := roundTripWith(t, addr, nil) // past the per-address limit
	defer own.Close()
	open.Store(900) // short of descriptors: refuse-connections and past
	foreign2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer foreign2.Close()
	waitClosed(t, foreign2, "a client connection while short of descriptors")
	own2 := roundTripWith(t, addr, nil)
	if st := s.Stats(); st.Own != 2 || st.RefusedPerIP != 2 || st.Open != 3 {
		t.Fatalf("stats %+v: want 2 own admitted, 2 refused, 3 open", st)
	}

	// Nobody else may take the port an own connection holds.
	port := own2.conn.LocalAddr().(*net.TCPAddr).Port
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}}
	if c, err := d.Dial("tcp", addr); err == nil {
		c.Close()
		t.Fatalf("dialed from port %d, which an own connection holds", port)
	}
	if !isOwn(own2.conn.LocalAddr()) {
		t.Fatal("an open own connection is not marked")
	}
	own2.Close()
	if isOwn(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}) {
		t.Fatal("a closed own connection's port is still marked")
	}
}

// TestDefaultMaxConnectionsPerIP: a fortieth of the descriptor limit,
// within bounds.
func TestDefaultMaxConnectionsPerIP(t *testing.T) {
	for files, want := range map[uint64]int{20000: 500, 4096: 102, 1024: 32, 0: 204, 1 << 20: 1000} {
		if got := DefaultMaxConnectionsPerIP(files); got != want {
			t.Errorf("DefaultMaxConnectionsPerIP(%d) = %d, want %d", files, got, want)
		}
	}
}

// flakyListener fails its first fails Accept calls as a process out of
// file descriptors does, then accepts normally.
type flakyListener struct {
	net.Listener
	fails atomic.Int32
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if l.fails.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.Addr(), Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}

// TestAcceptSurvivesEMFILE: Accept fails with EMFILE four times; the
// listener backs off and keeps serving, counts the failures and logs one
// line for them (rate-limited) instead of dying.
func TestAcceptSurvivesEMFILE(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &flakyListener{Listener: inner}
	ln.fails.Store(4)
	s, sink := serveListener(t, labHandler(new(atomic.Int64)), Options{}, ln)
	roundTrip(t, inner.Addr().String()).Close()
	if got := s.Stats().AcceptErrors; got != 4 {
		t.Fatalf("%d accept errors counted, want 4", got)
	}
	sink.waitFor(t, "cannot accept", "too many open files", "failures=1")
	sink.mu.Lock()
	defer sink.mu.Unlock()
	lines := 0
	for _, r := range sink.records {
		if strings.Contains(r, "cannot accept") {
			lines++
		}
	}
	if lines != 1 {
		t.Fatalf("%d log lines for 4 accept failures within the log interval, want 1", lines)
	}
}

// brokenListener fails Accept for good.
type brokenListener struct{ net.Listener }

func (l brokenListener) Accept() (net.Conn, error) { return nil, errors.New("listener broken") }

// TestServeLogsWhenItStops: a listener that fails for good makes Serve
// return the error and log it, so a caller that drops it still leaves a trace.
func TestServeLogsWhenItStops(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Close()
	sink := newLogSink()
	err = Serve(context.Background(), brokenListener{inner}, labHandler(new(atomic.Int64)), Options{Logger: slog.New(sink)})
	if err == nil || !strings.Contains(err.Error(), "listener broken") {
		t.Fatalf("Serve returned %v", err)
	}
	sink.waitFor(t, "Kafka listener stopped", "listener broken")
}

// TestIdleConnectionsClosed: with connections.max.idle.ms at 150 ms, a
// connection that sends nothing is closed and counted; one whose request
// takes longer than that to answer is not closed meanwhile.
func TestIdleConnectionsClosed(t *testing.T) {
	const maxIdle = 150 * time.Millisecond
	slow := labHandler(new(atomic.Int64))
	inner := slow.fn
	slow.fn = func(ctx context.Context, rc *RequestContext, req kmsg.Request) (kmsg.Response, error) {
		if _, ok := req.(*kmsg.MetadataRequest); ok {
			time.Sleep(3 * maxIdle) // a long-polling fetch or an acks=all produce
		}
		return inner(ctx, rc, req)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, sink := serveListener(t, slow, Options{ConnectionsMaxIdle: maxIdle}, ln)
	c := roundTrip(t, ln.Addr().String()) // answered after 3× the idle timeout
	defer c.Close()

	quiet, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer quiet.Close()
	waitClosed(t, quiet, "idle connection")
	waitFor(t, "both idle connections to be counted", func() bool { return s.Stats().IdleClosed == 2 })
	sink.waitFor(t, "closing idle connection", "connections.max.idle.ms")
}

// TestConnectionLimitDefaults: the zero Options give Kafka's idle timeout
// and the lab's per-address limit; negative values turn them off.
func TestConnectionLimitDefaults(t *testing.T) {
	o := Options{}
	if err := o.validate(); err != nil {
		t.Fatal(err)
	}
	if o.ConnectionsMaxIdle != DefaultConnectionsMaxIdle || o.MaxConnectionsPerIP != DefaultMaxConnectionsPerIP(fds.Limit()) {
		t.Fatalf("defaults %v, %d", o.ConnectionsMaxIdle, o.MaxConnectionsPerIP)
	}
}

// TestClientRedialsAfterIdle: a Client idle for longer than its own
// connections.max.idle.ms replaces the connection the broker has closed in
// the meantime, so the next request just works.
func TestClientRedialsAfterIdle(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := serveListener(t, labHandler(new(atomic.Int64)), Options{ConnectionsMaxIdle: 100 * time.Millisecond}, ln)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := DialOptions(ctx, ln.Addr().String(), "idle-client", ClientOptions{ConnectionsMaxIdle: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Negotiate(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the broker to close the idle connection", func() bool { return s.Stats().IdleClosed == 1 })
	if _, err := c.Request(ctx, kmsg.NewPtrMetadataRequest()); err != nil {
		t.Fatalf("request after the broker closed the idle connection: %v", err)
	}
}
