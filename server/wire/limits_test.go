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
)

// roundTrip negotiates versions on a fresh connection to addr and asks for
// metadata once: the listener is serving.
func roundTrip(t *testing.T, addr string) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, addr, "limits-test")
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
	if o.ConnectionsMaxIdle != DefaultConnectionsMaxIdle || o.MaxConnectionsPerIP != DefaultMaxConnectionsPerIP {
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
