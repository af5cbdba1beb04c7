package web

import (
	"context"
	"net"
	"net/http"
	"time"

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
func NewHTTPServer(h http.Handler, base context.Context) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: timeouts.readHeader, IdleTimeout: timeouts.idle,
		BaseContext: func(net.Listener) context.Context { return base }}
}

// deadlines sets each request's read and write deadlines on its connection
// (http.Server's own ReadTimeout and WriteTimeout would also cut the
// websocket, whose connection keeps them after the upgrade), and clears
// them for /ws.
func (s *Server) deadlines(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		rc := http.NewResponseController(c.Response().Writer)
		read, write := time.Now().Add(s.timeouts.read), time.Now().Add(s.timeouts.write)
		if p := c.Request().URL.Path; p == "/ws" || p == "/class/live" { // websockets
			read, write = time.Time{}, time.Time{}
		}
		// Errors mean a writer that cannot set deadlines (a test recorder).
		_ = rc.SetReadDeadline(read)
		_ = rc.SetWriteDeadline(write)
		return next(c)
	}
}
