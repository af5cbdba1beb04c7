package wire

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"tidemark/internal/fds"
)

// DefaultConnectionsMaxIdle is Kafka's default connections.max.idle.ms.
const DefaultConnectionsMaxIdle = 10 * time.Minute

// DefaultMaxConnectionsPerIP returns the lab's max.connections.per.ip
// (Kafka's default is unlimited) for the process's descriptor limit files
// (0: unknown, 8,192 assumed): a fortieth of it, between 32 and 1,000 (500
// at 20,000). A Kafka client holds a few connections per broker; one
// address filling every listener of a 3-broker lab takes 7.5 % of the
// descriptors, and the process's account (internal/fds) bounds them all.
// The lab's own connections (a follower's, own.go) are not counted.
func DefaultMaxConnectionsPerIP(files uint64) int {
	if files == 0 {
		files = 8192
	}
	return int(min(max(files/40, minConnectionsPerIP), maxConnectionsPerIP))
}

// DefaultMaxConnectionsPerIP's bounds.
const (
	minConnectionsPerIP = 32
	maxConnectionsPerIP = 1000
)

// Backoff after a temporary Accept error, as net/http's Server does.
const (
	minAcceptDelay = 5 * time.Millisecond
	maxAcceptDelay = time.Second
)

// Stats counts what a Server's limits did since it was created.
type Stats struct {
	// AcceptErrors is how many Accept calls failed with a temporary error
	// (out of descriptors) and were retried after a backoff.
	AcceptErrors int64
	// RefusedPerIP is how many connections were closed on accept because
	// their address already held MaxConnectionsPerIP or the process was
	// short of descriptors.
	RefusedPerIP int64
	// Own is how many of the lab's own connections (a follower's, own.go)
	// were admitted past those limits: the brokers' reserve.
	Own int64
	// IdleClosed is how many connections were closed after
	// ConnectionsMaxIdle without a request.
	IdleClosed int64
	// Open is the number of connections being served now.
	Open int
}

// Stats returns the counters of s's limits.
func (s *Server) Stats() Stats {
	l := &s.limits
	l.mu.Lock()
	open := 0
	for _, n := range l.perIP {
		open += n
	}
	l.mu.Unlock()
	return Stats{AcceptErrors: l.acceptErrors.Load(), RefusedPerIP: l.refused.Load(), IdleClosed: l.idleClosed.Load(),
		Own: l.ownAdmitted.Load(), Open: open + int(l.ownOpen.Load())}
}

// listenerLimits is a Server's connection accounting (per client address)
// and counters; its log lines are rate-limited so that a flood of failures
// writes one line per interval, with the count since the last line.
type listenerLimits struct {
	maxPerIP int

	mu    sync.Mutex
	perIP map[string]int // open connections by client IP

	acceptErrors, refused, idleClosed atomic.Int64
	ownAdmitted, ownOpen              atomic.Int64
	acceptLog, refusedLog             rate.Sometimes
	acceptUnlogged, refusedUnlogged   atomic.Int64
}

func (l *listenerLimits) init(o Options) {
	l.maxPerIP = o.MaxConnectionsPerIP
	l.perIP = map[string]int{}
	l.acceptLog = rate.Sometimes{Interval: o.LogInterval}
	l.refusedLog = rate.Sometimes{Interval: o.LogInterval}
}

// admit counts c against its address's limit. It returns false (and logs,
// rate-limited) when the address is at MaxConnectionsPerIP or the process
// is short of descriptors; otherwise the returned func releases the count
// when the connection ends. The lab's own connections (own.go) are
// admitted whatever the limits: they are few (a follower holds one per
// leader broker), and a broker refused its leader's data would fall out
// of the ISR for a client's flood.
func (l *listenerLimits) admit(log *slog.Logger, c net.Conn) (release func(), ok bool) {
	if isOwn(c.RemoteAddr()) {
		l.ownAdmitted.Add(1)
		l.ownOpen.Add(1)
		return func() { l.ownOpen.Add(-1) }, true
	}
	ip := c.RemoteAddr().String()
	if host, _, err := net.SplitHostPort(ip); err == nil {
		ip = host
	}
	if fds.AtLeast(fds.RefuseConns) {
		// The process's descriptor account is short: new connections are
		// refused (idle sealed segments were given back first).
		l.refused.Add(1)
		l.refusedUnlogged.Add(1)
		l.refusedLog.Do(func() {
			open, limit := fds.InUse()
			log.Warn("refusing Kafka connections: the process is short of file descriptors", "remote", ip,
				"open", open, "limit", limit, "refused", l.refusedUnlogged.Swap(0))
		})
		return nil, false
	}
	l.mu.Lock()
	if l.maxPerIP > 0 && l.perIP[ip] >= l.maxPerIP {
		l.mu.Unlock()
		l.refused.Add(1)
		l.refusedUnlogged.Add(1)
		l.refusedLog.Do(func() {
			log.Warn("refusing Kafka connections: too many from one address", "remote", ip,
				"limit", l.maxPerIP, "config", "max.connections.per.ip", "refused", l.refusedUnlogged.Swap(0))
		})
		return nil, false
	}
	l.perIP[ip]++
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		if l.perIP[ip]--; l.perIP[ip] <= 0 {
			delete(l.perIP, ip)
		}
		l.mu.Unlock()
	}, true
}

// acceptFailed counts and logs (rate-limited) a temporary Accept error.
func (l *listenerLimits) acceptFailed(log *slog.Logger, addr net.Addr, err error, delay time.Duration) {
	l.acceptErrors.Add(1)
	l.acceptUnlogged.Add(1)
	l.acceptLog.Do(func() {
		log.Error("Kafka listener cannot accept; retrying", "listener", addr.String(), "err", err,
			"retry_in", delay.String(), "failures", l.acceptUnlogged.Swap(0))
	})
}

// isTemporary reports whether an Accept error is worth retrying: running
// out of descriptors (EMFILE, ENFILE) and the like, which net/http retries
// too. A closed listener is not.
func isTemporary(err error) bool {
	if errors.Is(err, net.ErrClosed) {
		return false
	}
	var te interface{ Temporary() bool }
	return errors.As(err, &te) && te.Temporary()
}

// nextDelay doubles the backoff from minAcceptDelay up to maxAcceptDelay.
func nextDelay(d time.Duration) time.Duration {
	if d == 0 {
		return minAcceptDelay
	}
	return min(2*d, maxAcceptDelay)
}

// activity is what a connection's idle check reads: requests in flight
// (decoded and not yet answered) and when the last one began or ended.
type activity struct {
	inflight atomic.Int32
	last     atomic.Int64 // unix nanoseconds
	expired  atomic.Bool  // the connection was closed for being idle
}

func (a *activity) touch() { a.last.Store(time.Now().UnixNano()) }
func (a *activity) begin() { a.inflight.Add(1); a.touch() }
func (a *activity) end()   { a.inflight.Add(-1); a.touch() }

// watchIdle closes a connection (through cancel) once it has had no
// request in flight and no activity for ConnectionsMaxIdle, as Kafka's
// selector expires idle connections. It returns the activity the
// connection's loops report to; with idle timeouts off, nothing watches it.
func (s *Server) watchIdle(ctx context.Context, cancel context.CancelFunc) *activity {
	a := new(activity)
	a.touch()
	maxIdle := s.opts.ConnectionsMaxIdle
	if maxIdle <= 0 {
		return a
	}
	go func() {
		t := time.NewTimer(maxIdle)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			wait := maxIdle
			if a.inflight.Load() == 0 {
				wait -= time.Since(time.Unix(0, a.last.Load()))
				if wait <= 0 {
					a.expired.Store(true)
					cancel()
					return
				}
			}
			t.Reset(wait)
		}
	}()
	return a
}
