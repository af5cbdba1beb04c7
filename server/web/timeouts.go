package web

import (
	"context"
	"log"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/labstack/echo/v4"
)

// HTTP timeouts. A slow client (a body trickled a byte a second, a response
// never read) holds a connection and a goroutine only this long. The
// websocket /ws lives for as long as the page is open, so it gets none.
const (
	// ReadHeaderTimeout bounds reading a request's headers.
	ReadHeaderTimeout = 10 * time.Second
	// ReadTimeout bounds reading a whole request, body included.
	ReadTimeout = 30 * time.Second
	// WriteTimeout bounds a request from its start to the end of its
	// response: above the 30 s a produce may wait for acks, and a chaos
	// run's answer.
	WriteTimeout = 2 * time.Minute
	// IdleTimeout closes a keep-alive connection with no request.
	IdleTimeout = 2 * time.Minute
)

// httpTimeouts are the timeouts a server applies.
type httpTimeouts struct{ readHeader, read, write, idle time.Duration }

// timeouts are the timeouts New and NewHTTPServer apply: the constants
// above, shortened by tests so that a timeout can be watched without
// waiting seconds.
var timeouts = httpTimeouts{ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout}

// NewHTTPServer returns the lab's HTTP server for h with the timeouts above;
// requests run under base.
//
// The read deadlines are the server's, set from the first byte of each
// request whatever route answers it (a request refused before any
// middleware, for its Host, still cannot hold its connection): headers
// within ReadHeaderTimeout, the whole request within ReadTimeout. /ws keeps
// them through its handshake; readWS sets its own after the upgrade. The
// write deadline is set per request by the deadlines middleware instead
// (http.Server's WriteTimeout would stay on the websocket's connection
// after the upgrade).
//
// net/http's own log lines (an Accept failing for want of descriptors,
// which it retries, a client's TLS or header garbage) go to slog at Warn,
// at most one every 10 s with the count of those left out.
func NewHTTPServer(h http.Handler, base context.Context) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: timeouts.readHeader, ReadTimeout: timeouts.read,
		IdleTimeout: timeouts.idle, BaseContext: func(net.Listener) context.Context { return base },
		ErrorLog: log.New(&limitedLog{every: rate.Sometimes{Interval: 10 * time.Second}}, "", 0)}
}

// limitedLog is net/http's ErrorLog: a line through to slog per interval.
type limitedLog struct {
	every   rate.Sometimes
	skipped atomic.Int64
}

func (l *limitedLog) Write(p []byte) (int, error) {
	logged := false
	l.every.Do(func() {
		logged = true
		slog.Warn("web: "+strings.TrimSpace(string(p)), "left_out", l.skipped.Swap(0))
	})
	if !logged {
		l.skipped.Add(1)
	}
	return len(p), nil
}

// deadlines sets each request's read and write deadlines on its connection;
// for the websockets (wsPath) it leaves the read deadline to the
// handshake (the server's), which the reader then sets anew, and
// clears the write deadline, which each websocket write sets anew.
func (s *Server) deadlines(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		rc := http.NewResponseController(c.Response().Writer)
		read, write := time.Now().Add(s.timeouts.read), time.Now().Add(s.timeouts.write)
		if wsPath(c.Request().URL.Path) {
			_ = rc.SetWriteDeadline(time.Time{})
			return next(c)
		}
		// Errors mean a writer that cannot set deadlines (a test recorder).
		_ = rc.SetReadDeadline(read)
		_ = rc.SetWriteDeadline(write)
		return next(c)
	}
}

// wsPath reports whether path is one of the websockets: the lab's (/ws),
// the live class (/class/live) and a projected seat's
// (/class/seats/{seat}/ws).
func wsPath(path string) bool {
	if path == "/ws" || path == "/class/live" {
		return true
	}
	rest, ok := strings.CutPrefix(path, "/class/seats/")
	return ok && strings.HasSuffix(rest, "/ws") && strings.Count(rest, "/") == 1
}
