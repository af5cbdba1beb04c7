package web

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"tidemark/events"
)

// wsClient is a test client of /ws that decodes Messages.
type wsClient struct {
	t    *testing.T
	conn *websocket.Conn
}

func dialWS(t *testing.T, srv *httptest.Server) *wsClient {
	t.Helper()
	url := "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws"
	hdr := http.Header{"Origin": {srv.URL}}
	conn, resp, err := websocket.DefaultDialer.Dial(url, hdr)
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	t.Cleanup(func() { conn.Close() })
	return &wsClient{t: t, conn: conn}
}

// next reads one Message, failing the test after 10s: a bound against a hang,
// not a timing assumption.
func (c *wsClient) next() events.Message {
	c.t.Helper()
	c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	var m events.Message
	if err := c.conn.ReadJSON(&m); err != nil {
		c.t.Fatalf("read: %v", err)
	}
	return m
}

func TestWSSnapshotThenOrderedEvents(t *testing.T) {
	lab := newTestLab(events.BusOptions{})
	lab.publish(events.Event{Kind: events.KindHW, Broker: 1, Topic: "demo", Offsets: &events.Offsets{HW: 0}})
	s := newTestServer(t, lab, Options{MaxBatch: 3})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()

	c := dialWS(t, srv)
	m := c.next()
	if m.Type != events.MessageSnapshot || m.Snapshot == nil || m.Snapshot.Seq != 1 || len(m.Snapshot.Brokers) != 3 {
		t.Fatalf("first message = %+v", m)
	}
	local := *m.Snapshot
	for i := range 10 {
		lab.publish(events.Event{Kind: events.KindAppend, Broker: 1, Topic: "demo",
			Offsets: &events.Offsets{Base: int64(i), Last: int64(i), LEO: int64(i + 1)}, Records: []events.Record{{Offset: int64(i), Value: "v"}}})
	}
	for local.Seq < 11 {
		m := c.next()
		if m.Type != events.MessageEvents || len(m.Events) == 0 || len(m.Events) > 3 {
			t.Fatalf("message = %+v, want 1..3 events", m)
		}
		for _, e := range m.Events {
			if e.Seq != local.Seq+1 {
				t.Fatalf("event seq %d after %d", e.Seq, local.Seq)
			}
			local.Apply(e)
		}
	}
	if want := lab.Snapshot(); mustJSON(t, local) != mustJSON(t, want) {
		t.Fatalf("client state after events differs from the lab:\n%s\n%s", mustJSON(t, local), mustJSON(t, want))
	}
}

// TestWSLinger: an event after a quiet spell goes out at once, alone; the
// events published within Options.Linger of that message wait and go
// together in the next. (The four are published in microseconds; the
// linger of 1 s is the bound, and the first message's 1 s limit is a bound
// against waiting for the linger, not a timing assumption.)
func TestWSLinger(t *testing.T) {
	lab := newTestLab(events.BusOptions{})
	s := newTestServer(t, lab, Options{Linger: time.Second})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()

	c := dialWS(t, srv)
	if m := c.next(); m.Type != events.MessageSnapshot {
		t.Fatalf("first message = %+v", m)
	}
	hw := func(i int) events.Event {
		return events.Event{Kind: events.KindHW, Broker: 1, Topic: "demo", Offsets: &events.Offsets{HW: int64(i)}}
	}
	start := time.Now()
	lab.publish(hw(0))
	if m := c.next(); m.Type != events.MessageEvents || len(m.Events) != 1 {
		t.Fatalf("message = %+v, want the first event alone", m)
	}
	if d := time.Since(start); d >= time.Second {
		t.Fatalf("the first event took %v: it waited for the linger", d)
	}
	for i := 1; i < 5; i++ {
		lab.publish(hw(i))
	}
	if m := c.next(); m.Type != events.MessageEvents || len(m.Events) != 4 {
		t.Fatalf("message = %+v, want the 4 events that followed together", m)
	}
}

// TestWSSlowClient makes one client stop reading while events keep coming.
// Its writer blocks on the full socket, its bounded queue overflows, and when
// it reads again it gets a fresh snapshot and then the events after it. A
// second client that keeps reading sees every event exactly once, in order.
func TestWSSlowClient(t *testing.T) {
	lab := newTestLab(events.BusOptions{History: 8, QueueLen: 4})
	s := newTestServer(t, lab, Options{WriteWait: 30 * time.Second})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()

	slow, fast := dialWS(t, srv), dialWS(t, srv)
	if m := slow.next(); m.Type != events.MessageSnapshot {
		t.Fatalf("slow first = %s", m.Type)
	}
	if m := fast.next(); m.Type != events.MessageSnapshot {
		t.Fatalf("fast first = %s", m.Type)
	}
	fastSeq := uint64(0)
	// readFast reads the fast client up to seq, checking order.
	readFast := func(seq uint64) {
		for fastSeq < seq {
			m := fast.next()
			if m.Type != events.MessageEvents {
				t.Fatalf("fast client got %s at seq %d", m.Type, fastSeq)
			}
			for _, e := range m.Events {
				if e.Seq != fastSeq+1 {
					t.Fatalf("fast client: seq %d after %d", e.Seq, fastSeq)
				}
				fastSeq = e.Seq
			}
		}
	}
	// Big events fill the slow client's socket buffers quickly. Publish until
	// the bus reports a lag (the fast client is read after every event, so it
	// never holds more than one in its queue and cannot be the one lagging).
	big := strings.Repeat("x", 256<<10)
	var last events.Event
	for lab.bus.Lags() == 0 {
		if last.Seq > 2000 {
			t.Fatal("slow client never lagged")
		}
		last = lab.publish(events.Event{Kind: events.KindConfig, Message: big})
		readFast(last.Seq)
	}
	// A few more after the lag, then a marker.
	for range 3 {
		last = lab.publish(events.Event{Kind: events.KindConfig, Message: "after lag"})
		readFast(last.Seq)
	}

	// Now the slow client reads: events in order, then a snapshot whose Seq is
	// at least everything before, then events continuing from the snapshot.
	seq, snapshots := uint64(0), 0
	for seq < last.Seq {
		m := slow.next()
		switch m.Type {
		case events.MessageSnapshot:
			if m.Snapshot.Seq < seq {
				t.Fatalf("slow client: snapshot seq %d after event %d", m.Snapshot.Seq, seq)
			}
			seq = m.Snapshot.Seq
			snapshots++
		case events.MessageEvents:
			for _, e := range m.Events {
				if e.Seq != seq+1 {
					t.Fatalf("slow client: seq %d after %d", e.Seq, seq)
				}
				seq = e.Seq
			}
		}
	}
	if snapshots == 0 {
		t.Fatal("slow client never got a fresh snapshot")
	}
	if lab.bus.Subscribers() != 3 {
		t.Fatalf("subscribers = %d, want both clients still connected (and the charts feed)", lab.bus.Subscribers())
	}
}

func TestWSOriginChecked(t *testing.T) {
	s := newTestServer(t, newTestLab(events.BusOptions{}), Options{})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	url := "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws"
	for _, origin := range []string{"http://evil.example", "null", "http://127.0.0.1:1", "ftp://" + strings.TrimPrefix(srv.URL, "http://")} {
		_, resp, err := websocket.DefaultDialer.Dial(url, http.Header{"Origin": {origin}})
		if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Errorf("Origin %q: err %v resp %v, want 403", origin, err, resp)
			continue
		}
		var body errorBody
		if json.NewDecoder(resp.Body).Decode(&body) != nil || body.Error == nil || body.Error.Code != CodeForbiddenOrigin {
			t.Errorf("Origin %q: body %+v", origin, body.Error)
		}
		resp.Body.Close()
	}
	// No Origin (a non-browser client) is fine.
	conn, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatalf("no Origin: %v", err)
	}
	conn.Close()
}

func TestWSPingAndShutdown(t *testing.T) {
	lab := newTestLab(events.BusOptions{})
	// Pings come often, so one is seen soon; the wait for a pong is long
	// (its default, 3 pings, would be 60 ms): this client answers pings only
	// while it reads, and a loaded machine may hold it longer than that
	// before it reads, which would drop it without the going-away frame
	// this test waits for.
	s, err := New(Options{Lab: lab, Static: testStatic(), PingInterval: 20 * time.Millisecond, PongWait: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	c := dialWS(t, srv)
	pinged := make(chan struct{}, 1)
	c.conn.SetPingHandler(func(data string) error {
		select {
		case pinged <- struct{}{}:
		default:
		}
		return c.conn.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(10*time.Second))
	})
	c.next() // snapshot
	// Control frames are handled inside reads; read in the background.
	readErr := make(chan error, 1)
	go func() {
		for {
			if _, _, err := c.conn.NextReader(); err != nil {
				readErr <- err
				return
			}
		}
	}()
	select {
	case <-pinged:
	case <-time.After(10 * time.Second):
		t.Fatal("no ping")
	}
	s.Close() // must send a close frame and return once the handler ended
	select {
	case err := <-readErr:
		if !websocket.IsCloseError(err, websocket.CloseGoingAway) {
			t.Fatalf("after Close: %v, want going-away close frame", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("connection not closed by Server.Close")
	}
	if lab.bus.Subscribers() != 0 {
		t.Fatalf("subscribers after Close = %d", lab.bus.Subscribers())
	}
	// After Close new websockets are refused.
	url := "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws"
	if _, resp, err := websocket.DefaultDialer.Dial(url, nil); err == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("dial after Close: %v %v", err, resp)
	}
}
