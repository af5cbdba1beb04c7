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
// (a bound against a hang); it returns how long that took and what the
// server sent first.
func closedWithin(t *testing.T, conn net.Conn, limit time.Duration) (time.Duration, string) {
	t.Helper()
	start := time.Now()
	conn.SetReadDeadline(start.Add(limit))
	b, err := io.ReadAll(conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("connection still open after %v (read %q)", limit, b)
	}
	return time.Since(start), string(b)
}

// TestHTTPTimeouts: with the timeouts shortened, a client that never
// finishes its headers, or trickles a body, has its connection closed once
// the header or read timeout passes, while a /ws websocket open past all of
// them still receives events.
func TestHTTPTimeouts(t *testing.T) {
	saved := timeouts
	timeouts.readHeader, timeouts.read, timeouts.write, timeouts.idle = 100*time.Millisecond, 200*time.Millisecond, 300*time.Millisecond, 200*time.Millisecond
	t.Cleanup(func() { timeouts = saved })
	lab := newTestLab(events.BusOptions{})
	s := newTestServer(t, lab, Options{})
	srv := httptest.NewUnstartedServer(s.Handler())
	srv.Config = NewHTTPServer(s.Handler(), context.Background())
	srv.Start()
	t.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()
	dial := func() net.Conn {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}

	// Slow headers: never finished.
	conn := dial()
	io.WriteString(conn, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
	if took, _ := closedWithin(t, conn, 5*time.Second); took < timeouts.readHeader/2 {
		t.Fatalf("closed after %v, before the header timeout", took)
	}

	// A slow body: 15 of 100 bytes, then nothing. The handler's read fails
	// at the read deadline (the control answers INVALID_REQUEST); the
	// connection is closed.
	conn = dial()
	io.WriteString(conn, "POST /ui/action HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n"+
		"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\naction=step&ms=")
	if took, got := closedWithin(t, conn, 5*time.Second); took < timeouts.read/2 || got != "" && !strings.Contains(got, "i/o timeout") {
		t.Fatalf("slow body: closed after %v with %q, want the read timeout", took, got)
	}

	// /ws: open past the read, write and idle timeouts, still served.
	c := dialWS(t, srv)
	if m := c.next(); m.Type != events.MessageSnapshot {
		t.Fatalf("first message %+v", m)
	}
	deadline := time.Now().Add(2 * timeouts.write)
	for time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond) // real time must pass the deadlines
	}
	lab.publish(events.Event{Kind: events.KindHW, Broker: 1, Topic: "demo", Offsets: &events.Offsets{HW: 7}})
	for {
		m := c.next() // fails the test if the connection was cut
		if m.Type == events.MessageEvents && len(m.Events) > 0 {
			break
		}
	}
	if resp, err := http.Get(srv.URL + "/api/v1/cluster"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("a normal request after the timeouts: %v %v", resp, err)
	}
}
