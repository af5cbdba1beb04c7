package web

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"tidemark/events"
)

// closedWithin reads conn until the server closes it, failing after limit
// (a bound against a hang); it returns how long that took since start and
// what the server sent first.
func closedWithin(t *testing.T, conn net.Conn, start time.Time, limit time.Duration) (time.Duration, string) {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(limit))
	b, err := io.ReadAll(conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("connection still open after %v (read %q)", limit, b)
	}
	return time.Since(start), string(b)
}

// serveWith starts the lab's HTTP server for lab with the timeouts tm. They
// are in force only while the server is built, so no request of another
// server reads them as they change.
func serveWith(t *testing.T, lab Lab, tm httpTimeouts) *httptest.Server {
	t.Helper()
	saved := timeouts
	timeouts = tm
	s := newTestServer(t, lab, Options{})
	srv := httptest.NewUnstartedServer(s.Handler())
	srv.Config = NewHTTPServer(s.Handler(), context.Background())
	timeouts = saved
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// TestHTTPTimeouts: a client that never finishes its headers, or trickles
// a body, has its connection closed once the header or read timeout
// passes, not before; a /ws websocket open past the read, write and idle
// timeouts still receives events; a normal request is served after.
//
// Each case has its own server in which only the timeouts it watches are
// short (short) and the others long: a loaded machine then cannot close a
// connection by another timeout than the one under test, nor cut the
// requests that must succeed. Durations are measured from before the dial,
// which is before the server starts any deadline, so "not before the
// timeout" holds however late the test runs; the bound on "closed at all"
// (hang) is generous.
func TestHTTPTimeouts(t *testing.T) {
	const short, long, hang = 200 * time.Millisecond, 10 * time.Minute, time.Minute
	lab := newTestLab(events.BusOptions{})
	dial := func(srv *httptest.Server) net.Conn {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}

	// Slow headers: never finished.
	srv := serveWith(t, lab, httpTimeouts{readHeader: short, read: long, write: long, idle: long})
	start := time.Now()
	conn := dial(srv)
	io.WriteString(conn, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
	if took, _ := closedWithin(t, conn, start, hang); took < short {
		t.Fatalf("closed after %v, before the header timeout %v", took, short)
	}

	// A slow body: 15 of 100 bytes, then nothing. The handler's read fails
	// at the read deadline (the control answers INVALID_REQUEST); the
	// connection is closed.
	srv = serveWith(t, lab, httpTimeouts{readHeader: long, read: short, write: long, idle: long})
	start = time.Now()
	conn = dial(srv)
	io.WriteString(conn, "POST /ui/action HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n"+
		"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\naction=step&ms=")
	if took, got := closedWithin(t, conn, start, hang); took < short || !strings.Contains(got, "INVALID_REQUEST") || !strings.Contains(got, "i/o timeout") {
		t.Fatalf("slow body: closed after %v with %q, want the read timeout's INVALID_REQUEST", took, got)
	}

	// /ws: open past the read, write and idle timeouts, still served.
	ws := serveWith(t, lab, httpTimeouts{readHeader: long, read: short, write: short, idle: short})
	c := dialWS(t, ws)
	if m := c.next(); m.Type != events.MessageSnapshot {
		t.Fatalf("first message %+v", m)
	}
	// The handler started before the snapshot came: its deadlines, were
	// they set, would be past by now.
	time.Sleep(2 * short)
	lab.publish(events.Event{Kind: events.KindHW, Broker: 1, Topic: "demo", Offsets: &events.Offsets{HW: 7}})
	for {
		m := c.next() // fails the test if the connection was cut
		if m.Type == events.MessageEvents && len(m.Events) > 0 {
			break
		}
	}
	// The server that cut the slow body serves a normal request.
	if resp, err := http.Get(srv.URL + "/api/v1/cluster"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("a normal request after the timeouts: %v %v", resp, err)
	}
}
