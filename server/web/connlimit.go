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
	// PerPeerRate is how many new connections a second one address may
	// open (0: no limit), in bursts of up to PerPeerBurst: a token bucket
	// per address. A connection over it is closed at once, before it
	// counts against any cap, so an address reconnecting as fast as it can
	// cannot churn other addresses' connections out.
	PerPeerRate  float64
	PerPeerBurst int
}

// Connection caps' bounds: DefaultConnLimits keeps a sixteenth of the
// descriptors for HTTP, between minHTTPConns and maxHTTPConns, and at most
// maxConnsPerPeer of them for one address, which may open peerRate a
// second after a burst of as many as it may hold (a browser opens about
// six for a page; a classroom behind one address, a few hundred at once).
const (
	minHTTPConns    = 64
	maxHTTPConns    = 4096
	maxConnsPerPeer = 256
	peerRate        = 100
)

// DefaultConnLimits derives the caps from the process's descriptor limit
// files (0: unknown, 8,192 assumed): Total is a sixteenth of it, between 64
// and 4,096 (1,250 with 20,000 descriptors), PerPeer is 256 or Total if
// smaller, and one address opens 100 connections a second after a burst
// of PerPeer.
func DefaultConnLimits(files uint64) ConnLimits {
	if files == 0 {
		files = 8192
	}
	total := int(min(max(files/16, minHTTPConns), maxHTTPConns))
	perPeer := min(maxConnsPerPeer, total)
	return ConnLimits{PerPeer: perPeer, Total: total, PerPeerRate: peerRate, PerPeerBurst: perPeer}
}

// ConnStats counts what a connection limiter did.
type ConnStats struct {
	Open    int   // connections open now
	Evicted int64 // idle connections closed to make room for a new one
	Refused int64 // new connections closed at once: every one held was busy
	// RateLimited counts new connections closed at once because their
	// address opened connections faster than PerPeerRate.
	RateLimited int64
}

// ConnLimiter is a net.Listener that enforces ConnLimits. At a cap, a new
// connection does not wait (the kernel's accept queue would fill, and a
// normal request with it) and is not simply refused either: the oldest
// connection of that peer (per-peer cap) or of anyone (total cap) that is
// not in a request — one still sending its headers, or idle between
// requests — is closed to make room, since a client that cannot finish its
// headers is the cheap attack. Only when every held connection is in a
// request (a handler running; an open websocket is one) is the new one
// closed. At the total cap the one closed is the oldest idle connection of
// the address holding the most, so that one address's flood makes room out
// of its own connections rather than other clients'. While the process is
// short of descriptors (fds.RefuseConns) the total cap is the connections
// held: a new one needs an idle one's place. An address opening
// connections faster than PerPeerRate has the new ones closed at once,
// before any of that. Install it with LimitConns, which also marks the
// requests.
type ConnLimiter struct {
	net.Listener
	lim ConnLimits
	log *slog.Logger

	now func() time.Time // the clock of the per-address rate

	mu     sync.Mutex
	all    list.List // *limitedConn, oldest first
	byPeer map[string]*peerState
	// pruneAt is the size of byPeer at which the states of addresses
	// holding nothing and with a full bucket are dropped.
	pruneAt int

	evicted, refused, rateLimited atomic.Int64
	logEvery, rateLogEvery        rate.Sometimes
	unlogged, rateUnlogged        atomic.Int64
}

// peerState is one address's: its connections held and its token bucket
// of new connections.
type peerState struct {
	open   int
	tokens float64
	at     time.Time // when tokens was brought up to date
}

// minPruneAt is the smallest byPeer size that triggers pruning.
const minPruneAt = 1024

// limitedConn is one accepted connection and its place in the limiter.
type limitedConn struct {
	net.Conn
	l     *ConnLimiter
	peer  string
	state *peerState    // its address's, in l.byPeer
	elem  *list.Element // its place in l.all
	busy  atomic.Int32  // requests whose handler runs
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
	l := newConnLimiter(ln, lim, log, time.Now)
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

func newConnLimiter(ln net.Listener, lim ConnLimits, log *slog.Logger, now func() time.Time) *ConnLimiter {
	return &ConnLimiter{Listener: ln, lim: lim, log: log, now: now, byPeer: map[string]*peerState{}, pruneAt: minPruneAt,
		logEvery: rate.Sometimes{Interval: 10 * time.Second}, rateLogEvery: rate.Sometimes{Interval: 10 * time.Second}}
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
		// A reset rather than a close: no TIME_WAIT kept for a refusal.
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0)
		}
		c.Close()
	}
}

// peerOf is the address a connection counts against: its IP.
func peerOf(c net.Conn) string {
	peer := c.RemoteAddr().String()
	if host, _, err := net.SplitHostPort(peer); err == nil {
		peer = host
	}
	return peer
}

// take takes a token from peer's bucket, creating its state; false when
// the bucket is empty. l.mu is held.
func (l *ConnLimiter) take(peer string) (*peerState, bool) {
	ps := l.byPeer[peer]
	now := l.now()
	if ps == nil {
		if len(l.byPeer) >= l.pruneAt {
			l.prune(now)
		}
		ps = &peerState{tokens: float64(l.lim.PerPeerBurst), at: now}
		l.byPeer[peer] = ps
	}
	if l.lim.PerPeerRate <= 0 {
		return ps, true
	}
	if dt := now.Sub(ps.at); dt > 0 {
		ps.tokens = min(float64(l.lim.PerPeerBurst), ps.tokens+dt.Seconds()*l.lim.PerPeerRate)
		ps.at = now
	}
	if ps.tokens < 1 {
		return ps, false
	}
	ps.tokens--
	return ps, true
}

// prune drops the states of addresses that hold no connection and whose
// bucket is full again (as if never seen), and sets the next size to
// prune at; l.mu is held.
func (l *ConnLimiter) prune(now time.Time) {
	for peer, ps := range l.byPeer {
		full := l.lim.PerPeerRate <= 0 ||
			ps.tokens+now.Sub(ps.at).Seconds()*l.lim.PerPeerRate >= float64(l.lim.PerPeerBurst)
		if ps.open == 0 && full {
			delete(l.byPeer, peer)
		}
	}
	l.pruneAt = max(minPruneAt, 2*len(l.byPeer))
}

// admit finds c a place, evicting an idle connection if a cap is reached;
// nil means c's address is over its rate or every connection in the way
// is busy.
func (l *ConnLimiter) admit(c net.Conn) *limitedConn {
	peer := peerOf(c)
	var victims []*limitedConn
	l.mu.Lock()
	ps, ok := l.take(peer)
	if !ok {
		l.mu.Unlock()
		l.rateLimited.Add(1)
		l.rateUnlogged.Add(1)
		l.rateLogEvery.Do(func() {
			l.log.Warn("web: an address opens connections too fast; closing its new ones", "remote", peer,
				"per_second", l.lim.PerPeerRate, "burst", l.lim.PerPeerBurst, "since_last", l.rateUnlogged.Swap(0))
		})
		return nil
	}
	if l.lim.PerPeer > 0 && ps.open >= l.lim.PerPeer {
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
		v := l.idlest(l.heaviest())
		if v == nil {
			v = l.idlest("")
		}
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
		lc = &limitedConn{Conn: c, l: l, peer: peer, state: ps}
		lc.elem = l.all.PushBack(lc)
		ps.open++
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

// heaviest returns the address holding the most connections ("" none);
// l.mu is held.
func (l *ConnLimiter) heaviest() string {
	peer, most := "", 0
	for p, ps := range l.byPeer {
		if ps.open > most {
			peer, most = p, ps.open
		}
	}
	return peer
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
	v.state.open-- // the state stays (its bucket) until pruned
}

// Stats returns the limiter's counters.
func (l *ConnLimiter) Stats() ConnStats {
	l.mu.Lock()
	open := l.all.Len()
	l.mu.Unlock()
	return ConnStats{Open: open, Evicted: l.evicted.Load(), Refused: l.refused.Load(), RateLimited: l.rateLimited.Load()}
}
