package web

import (
	"context"
	"errors"
	"fmt"
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

// TestDefaultConnLimits: a sixteenth of the descriptors, within bounds;
// 100 new connections a second per address after a burst of its cap.
func TestDefaultConnLimits(t *testing.T) {
	for _, tc := range []struct {
		files uint64
		want  ConnLimits
	}{
		{20000, ConnLimits{PerPeer: 256, Total: 1250, PerPeerRate: 100, PerPeerBurst: 256}},
		{1024, ConnLimits{PerPeer: 64, Total: 64, PerPeerRate: 100, PerPeerBurst: 64}},
		{0, ConnLimits{PerPeer: 256, Total: 512, PerPeerRate: 100, PerPeerBurst: 256}},
		{1 << 20, ConnLimits{PerPeer: 256, Total: 4096, PerPeerRate: 100, PerPeerBurst: 256}},
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

// fakeConn is a connection from addr that only records its Close.
type fakeConn struct {
	net.Conn
	addr   net.Addr
	closed bool
}

func (c *fakeConn) RemoteAddr() net.Addr { return c.addr }
func (c *fakeConn) Close() error         { c.closed = true; return nil }

func connFrom(ip string, port int) *fakeConn {
	return &fakeConn{addr: &net.TCPAddr{IP: net.ParseIP(ip), Port: port}}
}

// TestPerPeerRate: each address has its own token bucket of new
// connections (10 a second, bursts of 5), stepped by an injected clock: a
// sixth connection at once is closed at once and counted, another address
// is not affected, and the bucket refills with time, never past its burst.
// Before, one address reconnecting as fast as it could churned the
// connections of others sharing its cap out.
func TestPerPeerRate(t *testing.T) {
	defer fds.SetAccount(1000, func() int { return 0 })()
	now := time.Unix(1000, 0)
	l := newConnLimiter(nil, ConnLimits{PerPeerRate: 10, PerPeerBurst: 5}, slog.New(slog.DiscardHandler), func() time.Time { return now })
	admit := func(ip string) bool {
		lc := l.admit(connFrom(ip, 40000))
		if lc != nil {
			lc.Close() // closing gives no token back: the rate counts opens
		}
		return lc != nil
	}
	for i := range 5 {
		if !admit("127.0.0.1") {
			t.Fatalf("connection %d of a burst of 5 refused", i+1)
		}
	}
	if admit("127.0.0.1") {
		t.Fatal("a sixth connection at once admitted")
	}
	if !admit("127.0.0.3") {
		t.Fatal("another address refused")
	}
	now = now.Add(100 * time.Millisecond) // one token back
	if !admit("127.0.0.1") || admit("127.0.0.1") {
		t.Fatal("after 100 ms: want exactly one more connection")
	}
	now = now.Add(time.Hour) // full again, and no more than full
	for i := range 5 {
		if !admit("127.0.0.1") {
			t.Fatalf("after an hour, connection %d of 5 refused", i+1)
		}
	}
	if admit("127.0.0.1") {
		t.Fatal("the bucket filled past its burst")
	}
	if st := l.Stats(); st.RateLimited != 3 || st.Open != 0 || st.Refused != 0 || st.Evicted != 0 {
		t.Fatalf("stats %+v: want 3 rate-limited, none open, refused or evicted", st)
	}
}

// TestTotalCapEvictsHeaviest: at the total cap the connection closed for
// a new one is the oldest idle one of the address holding the most, not
// the oldest of anyone: a flood from one address makes room out of its
// own connections.
func TestTotalCapEvictsHeaviest(t *testing.T) {
	defer fds.SetAccount(1000, func() int { return 0 })()
	l := newConnLimiter(nil, ConnLimits{Total: 4}, slog.New(slog.DiscardHandler), time.Now)
	light := connFrom("127.0.0.3", 1)
	if l.admit(light) == nil {
		t.Fatal("first connection refused")
	}
	var heavy []*fakeConn
	for i := range 5 {
		c := connFrom("127.0.0.1", 100+i)
		if l.admit(c) == nil {
			t.Fatalf("flood connection %d refused with idle ones to close", i)
		}
		heavy = append(heavy, c)
	}
	if light.closed {
		t.Fatal("the other address's older connection was closed for the flood")
	}
	if !heavy[0].closed || !heavy[1].closed || heavy[2].closed {
		t.Fatal("want the flood's two oldest connections closed")
	}
	if c := connFrom("127.0.0.4", 1); l.admit(c) == nil || light.closed || !heavy[2].closed {
		t.Fatal("a third address: want it admitted in place of the flood's oldest")
	}
	if st := l.Stats(); st.Open != 4 || st.Evicted != 3 {
		t.Fatalf("stats %+v: want 4 open, 3 evicted", st)
	}
}

// TestPeerStatesPruned: the states of addresses gone quiet (nothing held,
// bucket full again) are dropped once there are many: a scan of the
// address space does not grow the limiter without bound.
func TestPeerStatesPruned(t *testing.T) {
	defer fds.SetAccount(1000, func() int { return 0 })()
	now := time.Unix(1000, 0)
	l := newConnLimiter(nil, ConnLimits{PerPeerRate: 10, PerPeerBurst: 5}, slog.New(slog.DiscardHandler), func() time.Time { return now })
	for i := range 10 * minPruneAt {
		lc := l.admit(connFrom(fmt.Sprintf("127.%d.%d.1", i>>8&255, i&255), 1))
		lc.Close()
		now = now.Add(10 * time.Millisecond)
	}
	if n := len(l.byPeer); n > minPruneAt {
		t.Fatalf("%d addresses tracked after %d came and went, want at most %d", n, 10*minPruneAt, minPruneAt)
	}
}

// TestRateLimitedConnReset: over its address's rate, a new connection is
// reset at once by the accept loop (no answer, nothing read), while
// another address is served.
func TestRateLimitedConnReset(t *testing.T) {
	srv, l := serveLimited(t, newTestLab(events.BusOptions{}), ConnLimits{PerPeerRate: 0.001, PerPeerBurst: 1})
	host := strings.TrimPrefix(srv.URL, "http://")
	first, err := net.Dial("tcp", host) // the burst of one
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	// The reset may come before the dial returns (on loopback the accept
	// loop can answer the handshake's last packet at once) or after.
	if second, err := net.Dial("tcp", host); err == nil {
		defer second.Close()
		io.WriteString(second, "GET /api/v1/cluster HTTP/1.1\r\nHost: "+host+"\r\n\r\n")
		second.SetReadDeadline(time.Now().Add(10 * time.Second))
		if n, err := second.Read(make([]byte, 1)); n > 0 || err == nil || isTimeout(err) {
			t.Fatalf("over the rate: read %d bytes, %v; want the connection reset", n, err)
		}
	}
	waitRateLimited := time.Now().Add(10 * time.Second)
	for l.Stats().RateLimited == 0 && time.Now().Before(waitRateLimited) {
		time.Sleep(time.Millisecond) // a dial that failed returns before the count
	}
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 3)}}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true, DialContext: d.DialContext}}
	resp, err := client.Get(srv.URL + "/api/v1/cluster")
	if err != nil {
		t.Fatalf("another address: %v", err)
	}
	resp.Body.Close()
	if st := l.Stats(); st.RateLimited != 1 {
		t.Fatalf("stats %+v: want 1 rate-limited", st)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
