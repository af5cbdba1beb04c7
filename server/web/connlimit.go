package web

import (
	"container/list"
	"context"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"tidemark/internal/fds"
)

// ConnLimits caps the web server's open connections. Connections are
// counted from accept to close, whatever they carry (a page, the API, a
// websocket, or nothing yet).
type ConnLimits struct {
	// PerPeer is the most connections one client address holds (0: no
	// cap). A browser holds about six and one per open page's /ws.
	PerPeer int
	// Total is the most connections the server holds (0: no cap); it is
	// kept well below the descriptor limit, whose rest the brokers use.
	Total int
}

// Connection caps' bounds: DefaultConnLimits keeps a sixteenth of the
// descriptors for HTTP, between minHTTPConns and maxHTTPConns, and at most
// maxConnsPerPeer of them for one address.
const (
	minHTTPConns    = 64
	maxHTTPConns    = 4096
	maxConnsPerPeer = 256
)

// DefaultConnLimits derives the caps from the process's descriptor limit
// files (0: unknown, 8,192 assumed): Total is a sixteenth of it, between 64
// and 4,096 (1,250 with 20,000 descriptors), and PerPeer is 256 or Total if
// smaller.
func DefaultConnLimits(files uint64) ConnLimits {
	if files == 0 {
		files = 8192
	}
	total := int(min(max(files/16, minHTTPConns), maxHTTPConns))
	return ConnLimits{PerPeer: min(maxConnsPerPeer, total), Total: total}
}

// ConnStats counts what a connection limiter did.
type ConnStats struct {
	Open    int   // connections open now
	Evicted int64 // idle connections closed to make room for a new one
	Refused int64 // new connections closed at once: every one held was busy
}

// ConnLimiter is a net.Listener that enforces ConnLimits. At a cap, a new
// connection does not wait (the kernel's accept queue would fill, and a
// normal request with it) and is not simply refused either: the oldest
// connection of that peer (per-peer cap) or of anyone (total cap) that is
// not in a request — one still sending its headers, or idle between
// requests — is closed to make room, since a client that cannot finish its
// headers is the cheap attack. Only when every held connection is in a
// request (a handler running; an open websocket is one) is the new one
// closed. While the process is short of descriptors (fds.RefuseConns) the
// total cap is the connections held: a new one needs an idle one's place. Install it with LimitConns, which also marks the requests.
type ConnLimiter struct {
	net.Listener
	lim ConnLimits
	log *slog.Logger

	mu     sync.Mutex
	all    list.List // *limitedConn, oldest first
	byPeer map[string]int

	evicted, refused atomic.Int64
	logEvery         rate.Sometimes
	unlogged         atomic.Int64
}

// limitedConn is one accepted connection and its place in the limiter.
type limitedConn struct {
	net.Conn
	l    *ConnLimiter
	peer string
	elem *list.Element // its place in l.all
	busy atomic.Int32  // requests whose handler runs
	// released: its place was given back (by Close, or by an eviction);
	// guarded by l.mu.
	released bool
}

// Close closes the connection and gives back its place.
func (c *limitedConn) Close() error {
	c.release()
	return c.Conn.Close()
}

func (c *limitedConn) release() {
	c.l.mu.Lock()
	c.l.forget(c)
	c.l.mu.Unlock()
}

// connKey is the request context key of the limitedConn a request came on.
type connKey struct{}

// LimitConns makes srv serve through a ConnLimiter on ln: it wraps srv's
// Handler to mark each connection busy while a request's handler runs and
// chains srv.ConnContext. Call it before srv.Serve(returned listener).
func LimitConns(srv *http.Server, ln net.Listener, lim ConnLimits, log *slog.Logger) *ConnLimiter {
	if log == nil {
		log = slog.Default()
	}
	l := &ConnLimiter{Listener: ln, lim: lim, log: log, byPeer: map[string]int{},
		logEvery: rate.Sometimes{Interval: 10 * time.Second}}
	next := srv.ConnContext
	srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if next != nil {
			ctx = next(ctx, c)
		}
		if lc, ok := c.(*limitedConn); ok {
			ctx = context.WithValue(ctx, connKey{}, lc)
		}
		return ctx
	}
	h := srv.Handler
	srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if lc, ok := r.Context().Value(connKey{}).(*limitedConn); ok {
			lc.busy.Add(1)
			defer lc.busy.Add(-1)
		}
		h.ServeHTTP(w, r)
	})
	return l
}

// Accept returns the next connection that fits the caps, making room as
// the ConnLimiter's comment says; errors are the wrapped listener's.
func (l *ConnLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if lc := l.admit(c); lc != nil {
			return lc, nil
		}
		c.Close()
	}
}

// admit finds c a place, evicting an idle connection if a cap is reached;
// nil means every connection in the way is busy.
func (l *ConnLimiter) admit(c net.Conn) *limitedConn {
	peer := c.RemoteAddr().String()
	if host, _, err := net.SplitHostPort(peer); err == nil {
		peer = host
	}
	var victims []*limitedConn
	l.mu.Lock()
	ok := true
	if l.lim.PerPeer > 0 && l.byPeer[peer] >= l.lim.PerPeer {
		v := l.idlest(peer)
		if v == nil {
			ok = false
		} else {
			victims = append(victims, v)
		}
	}
	// Short of descriptors (the process's account, internal/fds), the
	// server holds no more connections than it does: a new one only takes
	// an idle one's place (after idle sealed segments were closed, before
	// topic creation is refused).
	full := l.lim.Total > 0 && l.all.Len()-len(victims) >= l.lim.Total
	if fds.AtLeast(fds.RefuseConns) {
		full = len(victims) == 0
	}
	if ok && full {
		v := l.idlest("")
		if v == nil {
			ok = false
		} else {
			victims = append(victims, v)
		}
	}
	var lc *limitedConn
	if ok {
		for _, v := range victims {
			l.forget(v)
		}
		lc = &limitedConn{Conn: c, l: l, peer: peer}
		lc.elem = l.all.PushBack(lc)
		l.byPeer[peer]++
	}
	l.mu.Unlock()
	if !ok {
		l.refused.Add(1)
		victims = nil
	}
	for _, v := range victims {
		l.evicted.Add(1)
		v.Conn.Close() // its server goroutine then closes it again: released already
	}
	if !ok || len(victims) > 0 {
		l.unlogged.Add(1)
		l.logEvery.Do(func() {
			l.log.Warn("web: at the connection cap; closing idle or new connections", "remote", peer,
				"per_peer", l.lim.PerPeer, "total", l.lim.Total, "since_last", l.unlogged.Swap(0))
		})
	}
	return lc
}

// idlest returns the oldest connection of peer ("" any peer) not in a
// request, or nil; l.mu is held.
func (l *ConnLimiter) idlest(peer string) *limitedConn {
	for e := l.all.Front(); e != nil; e = e.Next() {
		c := e.Value.(*limitedConn)
		if (peer == "" || c.peer == peer) && c.busy.Load() == 0 {
			return c
		}
	}
	return nil
}

// forget gives back v's place unless it was given back already (an
// evicted connection's Close comes later); l.mu is held.
func (l *ConnLimiter) forget(v *limitedConn) {
	if v.released {
		return
	}
	v.released = true
	l.all.Remove(v.elem)
	if l.byPeer[v.peer]--; l.byPeer[v.peer] <= 0 {
		delete(l.byPeer, v.peer)
	}
}

// Stats returns the limiter's counters.
func (l *ConnLimiter) Stats() ConnStats {
	l.mu.Lock()
	open := l.all.Len()
	l.mu.Unlock()
	return ConnStats{Open: open, Evicted: l.evicted.Load(), Refused: l.refused.Load()}
}
