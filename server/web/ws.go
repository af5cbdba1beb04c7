package web

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/labstack/echo/v4"
	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/events"
	"tidemark/lessons"
)

// maxClientFrame bounds what a client may send: the stream is one-way, so
// clients only send control frames, and anything bigger ends the connection.
const maxClientFrame = 4 << 10

// checkOrigin accepts requests without an Origin (non-browser clients) and
// browser requests whose Origin is the scheme they came by and the Host
// they asked for (host and port), so another
// site's page cannot open the stream in a visitor's browser. The Host has
// passed checkHost before any route runs, so an Origin equal to it is one
// of the lab's own names: "our host" means the same thing in both checks.
func checkOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil {
		return false
	}
	// The scheme too: an http lab is not https://127.0.0.1:PORT, another
	// origin to a browser (and the port the same only by chance).
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return u.Scheme == scheme && strings.EqualFold(u.Host, r.Host)
}

// wsHandshakeTimeout bounds writing the websocket handshake's answer; the
// request itself is read under the server's header and read deadlines.
const wsHandshakeTimeout = 10 * time.Second

var upgrader = websocket.Upgrader{
	ReadBufferSize:   1 << 10,
	WriteBufferSize:  16 << 10,
	HandshakeTimeout: wsHandshakeTimeout,
	CheckOrigin:      checkOrigin,
	Error: func(w http.ResponseWriter, r *http.Request, status int, reason error) {
		code := CodeForbiddenOrigin
		if status != http.StatusForbidden {
			code = "INVALID_REQUEST"
		}
		if mayHaveBody(r) {
			defer dropBody(w)()
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(errorBody{&Error{Status: status, Code: code, Message: reason.Error()}})
	},
}

// serveWS streams the lab: a snapshot, then every event in Seq order, batched
// per frame: an event after a quiet spell goes at once, and those that arrive
// within Options.Linger of a message go together in the next. This goroutine
// is the connection's only writer; a second goroutine only reads (control
// frames, deadlines). The send queue is the bounded events.Subscription: when
// the client falls behind, its queue is dropped and it gets a fresh snapshot
// instead, so a slow client costs neither the brokers nor the other clients
// anything.
// refuseHandshakeBody refuses a websocket handshake that announces a body,
// without reading it (handleError closes the connection after the answer).
func refuseHandshakeBody(r *http.Request) error {
	if mayHaveBody(r) {
		return KafkaError(http.StatusBadRequest, kerr.InvalidRequest, "a websocket handshake has no body")
	}
	return nil
}

// upgradeWS counts a websocket connection in the server's (refused while
// it shuts down) and upgrades the request; release closes the connection
// and uncounts it. A nil conn with a nil error: the upgrader has answered.
func (s *Server) upgradeWS(c echo.Context) (conn *websocket.Conn, release func(), err error) {
	if !s.addConn() {
		return nil, nil, &Error{Status: http.StatusServiceUnavailable, Code: "BROKER_NOT_AVAILABLE", Message: "the server is shutting down"}
	}
	conn, err = upgrader.Upgrade(c.Response(), c.Request(), nil)
	if err != nil {
		s.conns.Done()
		return nil, nil, nil
	}
	return conn, func() { conn.Close(); s.conns.Done() }, nil
}

func (s *Server) serveWS(c echo.Context) error {
	if err := refuseHandshakeBody(c.Request()); err != nil {
		return err
	}
	lab, err := s.wsLab(c) // ?run=<id>: a lesson run's cluster
	if err != nil {
		return err
	}
	return s.streamWS(c, lab)
}

// streamWS upgrades the request and streams lab on it until either side
// ends (serveWS above; the classroom's projected seat too).
func (s *Server) streamWS(c echo.Context, lab Lab) error { return s.streamWSUntil(c, lab, nil) }

// streamWSUntil is streamWS that also ends when gone is closed (the lab
// stopped: a projected seat reset), so the page reconnects to the next.
func (s *Server) streamWSUntil(c echo.Context, lab Lab, gone <-chan struct{}) error {
	conn, release, err := s.upgradeWS(c)
	if conn == nil {
		return err
	}
	defer release()
	if run, ok := lab.(*lessons.Run); ok {
		// A page shows the run: in use, so no one's start ends it (labs.Open).
		defer run.Hold()()
	}

	// Subscribe before taking the snapshot: an event published in between is
	// then both in the snapshot and queued, and the Seq filter drops the copy.
	sub := lab.Bus().Subscribe()
	defer sub.Close()

	readerDone := make(chan struct{})
	go s.readWS(conn, readerDone)

	w := wsWriter{conn: conn, wait: s.opts.WriteWait}
	last, err := w.snapshot(lab)
	if err != nil {
		return nil
	}
	ping := time.NewTicker(s.opts.PingInterval)
	defer ping.Stop()
	// linger is armed while events wait for Linger to pass since the last
	// message; a publish that finds it passed writes at once instead, so
	// under a stream the writer is woken by the publishers already running
	// rather than by a timer, which a loaded machine may fire late.
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	defer linger.Stop()
	armed := false
	var wrote time.Time // when the last message of events went out
	for {
		select {
		case <-sub.Ready():
		case <-linger.C:
			armed = false
		case <-ping.C:
			if err := conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(s.opts.WriteWait)); err != nil {
				return nil
			}
			continue
		case <-readerDone:
			return nil
		case <-gone: // nil (never) unless streamWSUntil was given one
			msg := websocket.FormatCloseMessage(websocket.CloseGoingAway, "the lab stopped")
			conn.WriteControl(websocket.CloseMessage, msg, time.Now().Add(s.opts.WriteWait))
			return nil
		case <-s.ctx.Done():
			msg := websocket.FormatCloseMessage(websocket.CloseGoingAway, "server shutting down")
			conn.WriteControl(websocket.CloseMessage, msg, time.Now().Add(s.opts.WriteWait))
			return nil
		}
		if wait := s.opts.Linger - time.Since(wrote); wait > 0 {
			// A message went out less than Linger ago: the events that
			// follow join these rather than each costing the page a task.
			if !armed {
				linger.Reset(wait)
				armed = true
			}
			continue
		}
		if armed {
			linger.Stop()
			armed = false
		}
		evs, lagged := sub.Drain()
		if len(evs) == 0 && !lagged {
			continue // a wake-up for events a previous drain took
		}
		if lagged {
			if last, err = w.snapshot(lab); err != nil {
				return nil
			}
		}
		if last, err = w.events(evs, last, s.opts.MaxBatch); err != nil {
			return nil
		}
		wrote = time.Now()
	}
}

// readWS reads until the connection fails or goes quiet for PongWait; each
// pong (or any frame) extends the deadline. It closes done when it stops.
func (s *Server) readWS(conn *websocket.Conn, done chan<- struct{}) {
	defer close(done)
	conn.SetReadLimit(maxClientFrame)
	conn.SetReadDeadline(time.Now().Add(s.opts.PongWait))
	conn.SetPongHandler(func(string) error {
		return conn.SetReadDeadline(time.Now().Add(s.opts.PongWait))
	})
	for {
		if _, _, err := conn.NextReader(); err != nil {
			return
		}
		conn.SetReadDeadline(time.Now().Add(s.opts.PongWait))
	}
}

// wsWriter writes Messages with a deadline on every frame.
type wsWriter struct {
	conn *websocket.Conn
	wait time.Duration
}

// encodeBufs holds the buffers messages of events are encoded into, shared
// by every connection: an idle one keeps none. A buffer larger than
// maxKeptBuf (a burst's large message) is not put back.
var encodeBufs = sync.Pool{New: func() any { return new([]byte) }}

const maxKeptBuf = 64 << 10

func (w wsWriter) write(m events.Message) error {
	w.conn.SetWriteDeadline(time.Now().Add(w.wait))
	wr, err := w.conn.NextWriter(websocket.TextMessage)
	if err != nil {
		return err
	}
	if err := json.NewEncoder(wr).Encode(m); err != nil {
		wr.Close()
		return err
	}
	return wr.Close()
}

// writeEvents writes one message of events, encoded by appendEventsMessage.
func (w wsWriter) writeEvents(evs []events.Event) error {
	buf := encodeBufs.Get().(*[]byte)
	b, err := appendEventsMessage((*buf)[:0], evs)
	if err == nil {
		w.conn.SetWriteDeadline(time.Now().Add(w.wait))
		err = w.conn.WriteMessage(websocket.TextMessage, b)
	}
	if cap(b) <= maxKeptBuf {
		*buf = b
		encodeBufs.Put(buf)
	}
	return err
}

// stepReplayer is a lab whose stream opens on a step to play back: a
// lesson run opens on the lanes before the step its page shows, then that
// step's events, so the page's timeline holds the step and plays it.
type stepReplayer interface {
	StepReplay() (events.Snapshot, []events.Event)
}

// snapshot sends a fresh snapshot (and, for a stepReplayer, the step's
// events after it) and returns the Seq the client is at.
func (w wsWriter) snapshot(lab Lab) (uint64, error) {
	var snap events.Snapshot
	var step []events.Event
	if sr, ok := lab.(stepReplayer); ok {
		snap, step = sr.StepReplay()
	} else {
		snap = lab.Snapshot()
	}
	if err := w.write(events.Message{Type: events.MessageSnapshot, Snapshot: &snap}); err != nil {
		return snap.Seq, err
	}
	return w.events(step, snap.Seq, maxReplayFrame)
}

// maxReplayFrame is the most events of a step's playback in one message.
const maxReplayFrame = 256

// events sends the events newer than last in frames of at most max and
// returns the new last Seq.
func (w wsWriter) events(evs []events.Event, last uint64, max int) (uint64, error) {
	i := 0
	for i < len(evs) && evs[i].Seq <= last {
		i++ // already in the snapshot the client holds
	}
	evs = evs[i:]
	for len(evs) > 0 {
		n := min(len(evs), max)
		if err := w.writeEvents(evs[:n]); err != nil {
			return last, err
		}
		last = evs[n-1].Seq
		evs = evs[n:]
	}
	return last, nil
}
