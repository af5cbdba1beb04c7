package web

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"tidemark/events"
	"tidemark/internal/fds"
)

// serveLimited starts the lab's HTTP server for lab behind a ConnLimiter
// with lim, its timeouts long (10 minutes): nothing in these tests may be
// closed by a timeout.
func serveLimited(t *testing.T, lab Lab, lim ConnLimits) (*httptest.Server, *ConnLimiter) {
	t.Helper()
	const long = 10 * time.Minute
	saved := timeouts
	timeouts = httpTimeouts{long, long, long, long}
	s := newTestServer(t, lab, Options{})
	srv := httptest.NewUnstartedServer(s.Handler())
	srv.Config = NewHTTPServer(s.Handler(), context.Background())
	timeouts = saved
	var l *ConnLimiter
	if lim != (ConnLimits{}) {
		l = LimitConns(srv.Config, srv.Listener, lim, nil)
		srv.Listener = l
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, l
}

// TestRefusedRequestClosesAtOnce is the probe: a request refused
// before its handler reads the body (a bad Host, a bad Origin, /ws with a
// body) announcing 1,000 bytes of body and sending one is answered and its
// connection closed within a second, with every read timeout 10 minutes
// away. Before, net/http read the rest of the body before answering, and
// the connection hung.
func TestRefusedRequestClosesAtOnce(t *testing.T) {
	srv, _ := serveLimited(t, newTestLab(events.BusOptions{}), ConnLimits{})
	host := strings.TrimPrefix(srv.URL, "http://")
	for _, tc := range []struct{ name, req, want string }{
		{"bad Host", "POST /api/v1/topics HTTP/1.1\r\nHost: evil.example\r\nContent-Type: application/json\r\n", "421"},
		{"bad Origin", "POST /api/v1/topics HTTP/1.1\r\nHost: " + host + "\r\nOrigin: http://evil.example\r\nContent-Type: application/json\r\n", "403"},
		{"/ws with a body", "GET /ws HTTP/1.1\r\nHost: " + host + "\r\n", "400"},
		{"/ws upgrade with a body", "GET /ws HTTP/1.1\r\nHost: " + host + "\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n" +
			"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n", "400"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			conn, err := net.Dial("tcp", host)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			io.WriteString(conn, tc.req+"Content-Length: 1000\r\n\r\n{")
			took, got := closedWithin(t, conn, start, 5*time.Second)
			if took > time.Second || !strings.HasPrefix(got, "HTTP/1.1 "+tc.want) || !strings.Contains(got, "Connection: close") {
				t.Fatalf("answered and closed after %v with %q; want %s and a close within 1s", took, got, tc.want)
			}
		})
	}
}

// TestConnCaps: connections past the per-peer cap that never finish their
// headers make room by closing the oldest such ones (a slow-headers flood
// cannot keep a normal request out), and a normal request still answers;
// when every connection held is busy (open websockets), a new one is
// closed at once and the websockets keep streaming.
func TestConnCaps(t *testing.T) {
	lab := newTestLab(events.BusOptions{})
	srv, l := serveLimited(t, lab, ConnLimits{PerPeer: 8, Total: 12})
	host := strings.TrimPrefix(srv.URL, "http://")

	// 30 half-open connections: headers begun, never finished.
	var half []net.Conn
	for range 30 {
		c, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: "+host+"\r\n")
		half = append(half, c)
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	start := time.Now()
	resp, err := client.Get(srv.URL + "/api/v1/cluster")
	if err != nil {
		t.Fatalf("a normal request among 30 half-open connections: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || time.Since(start) > time.Second {
		t.Fatalf("normal request: %d after %v", resp.StatusCode, time.Since(start))
	}
	// The oldest half-open connections were closed to make room.
	half[0].SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := half[0].Read(make([]byte, 1)); err == nil {
		t.Fatal("the oldest half-open connection is still open")
	}
	if st := l.Stats(); st.Open > 8 || st.Evicted < 22 {
		t.Fatalf("stats %+v: want at most 8 open, at least 22 evicted", st)
	}

	// Eight websockets hold the peer's cap, all busy.
	var wss []*wsClient
	for range 8 {
		c := dialWS(t, srv)
		if m := c.next(); m.Type != events.MessageSnapshot {
			t.Fatalf("first message %+v", m)
		}
		wss = append(wss, c)
	}
	dialer := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	url := "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws"
	if c, _, err := dialer.Dial(url, http.Header{"Origin": {srv.URL}}); err == nil {
		c.Close()
		t.Fatal("a ninth connection was served with eight busy websockets at a per-peer cap of 8")
	}
	if st := l.Stats(); st.Refused == 0 || st.Open != 8 {
		t.Fatalf("stats %+v: want the ninth refused, eight open", st)
	}
	lab.publish(events.Event{Kind: events.KindHW, Broker: 1, Topic: "demo", Offsets: &events.Offsets{HW: 7}})
	for _, c := range wss {
		for {
			m := c.next() // fails the test if the connection was cut
			if m.Type == events.MessageEvents && len(m.Events) > 0 {
				break
			}
		}
	}
}

// TestDefaultConnLimits: a sixteenth of the descriptors, within bounds.
func TestDefaultConnLimits(t *testing.T) {
	for _, tc := range []struct {
		files uint64
		want  ConnLimits
	}{
		{20000, ConnLimits{PerPeer: 256, Total: 1250}},
		{1024, ConnLimits{PerPeer: 64, Total: 64}},
		{0, ConnLimits{PerPeer: 256, Total: 512}},
		{1 << 20, ConnLimits{PerPeer: 256, Total: 4096}},
	} {
		if got := DefaultConnLimits(tc.files); got != tc.want {
			t.Errorf("DefaultConnLimits(%d) = %+v, want %+v", tc.files, got, tc.want)
		}
	}
}

// TestConnRefusedShortOfDescriptors: with the process's account at 85 % of
// its limit (fds.RefuseConns) the server holds no more connections than it
// does: with none held a new one is closed at once; with two idle ones
// held (half-open), a normal request takes the older one's place and is
// served.
func TestConnRefusedShortOfDescriptors(t *testing.T) {
	var open atomic.Int64 // read by the server's accept loop
	open.Store(850)
	t.Cleanup(fds.SetAccount(1000, func() int { return int(open.Load()) }))
	srv, l := serveLimited(t, newTestLab(events.BusOptions{}), ConnLimits{PerPeer: 8, Total: 12})
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	if resp, err := client.Get(srv.URL + "/api/v1/cluster"); err == nil {
		resp.Body.Close()
		t.Fatalf("served (%d) with 850 of 1000 descriptors open and no connection to replace", resp.StatusCode)
	}
	if st := l.Stats(); st.Refused == 0 {
		t.Fatalf("stats %+v: want a refusal", st)
	}
	open.Store(0)
	host := strings.TrimPrefix(srv.URL, "http://")
	for range 2 {
		c, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: "+host+"\r\n")
	}
	for l.Stats().Open < 2 { // accepted: bounded by the test's timeout
		time.Sleep(time.Millisecond)
	}
	open.Store(850)
	resp, err := client.Get(srv.URL + "/api/v1/cluster")
	if err != nil {
		t.Fatalf("a request with an idle connection to replace: %v", err)
	}
	resp.Body.Close()
	if st := l.Stats(); st.Evicted == 0 || st.Open > 2 {
		t.Fatalf("stats %+v: want an eviction and no more than 2 open", st)
	}
}

// TestOriginSchemeAndPort: an http lab's Origin must be http://<its Host>:
// https:// at the same host and port, or another port, is another origin
// (403); the same scheme, host and port passes the check.
func TestOriginSchemeAndPort(t *testing.T) {
	srv, _ := serveLimited(t, newTestLab(events.BusOptions{}), ConnLimits{})
	host := strings.TrimPrefix(srv.URL, "http://")
	name, _, _ := net.SplitHostPort(host)
	for origin, want := range map[string]bool{
		"http://" + host:           true,
		"https://" + host:          false,
		"http://" + name + ":1":    false,
		"HTTP://" + host:           true, // url.Parse lower-cases the scheme
		"http://evil.example":      false,
		"ws://" + host:             false,
		"http://" + host + "/x":    true, // a path is not part of an origin; browsers send none
		"https://" + name + ":443": false,
	} {
		r := httptest.NewRequest(http.MethodGet, srv.URL+"/ws", nil)
		r.Host = host
		r.Header.Set("Origin", origin)
		if got := checkOrigin(r); got != want {
			t.Errorf("Origin %s on an http lab at %s: %v, want %v", origin, host, got, want)
		}
	}
}

// TestConnCapsUnderChurn: connections that close while newer ones evict
// them (clients giving up as the cap is reached) leave the limiter
// consistent and serving: 8 goroutines open, half-write and close 300
// connections each against a per-peer cap of 4, then a normal request is
// served and the count is back to what is open. Before, an eviction and
// the evicted connection's own Close could each wait for the other's lock
// and stop the accept loop for good.
func TestConnCapsUnderChurn(t *testing.T) {
	srv, l := serveLimited(t, newTestLab(events.BusOptions{}), ConnLimits{PerPeer: 4, Total: 6})
	host := strings.TrimPrefix(srv.URL, "http://")
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 300 {
				c, err := net.Dial("tcp", host)
				if err != nil {
					continue
				}
				io.WriteString(c, "GET / HTTP/1.1\r\nHost: "+host+"\r\n")
				c.Close()
			}
		}()
	}
	wg.Wait()
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get(srv.URL + "/api/v1/cluster")
	if err != nil {
		t.Fatalf("after the churn: %v (stats %+v)", err, l.Stats())
	}
	resp.Body.Close()
	if st := l.Stats(); st.Open > 6 {
		t.Fatalf("stats %+v: more open than the cap", st)
	}
}

// TestHTTPErrorLogLimited: net/http's own lines (here a flood of them)
// reach the log once per interval, the count of those left out with the
// next.
func TestHTTPErrorLogLimited(t *testing.T) {
	var buf strings.Builder
	var mu sync.Mutex
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	}), nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	srv := NewHTTPServer(http.NotFoundHandler(), context.Background())
	for range 1000 {
		srv.ErrorLog.Printf("http: Accept error: accept tcp: too many open files; retrying in 5ms")
	}
	mu.Lock()
	defer mu.Unlock()
	if n := strings.Count(buf.String(), "too many open files"); n != 1 {
		t.Fatalf("%d lines for 1,000 errors in a moment, want 1:\n%s", n, buf.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
