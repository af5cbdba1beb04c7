package fds

import (
	"sync"
	"sync/atomic"
	"time"
)

// Level is how short the process is of descriptors, by the share of
// RLIMIT_NOFILE open now. Each level does what the ones below it do.
type Level int

// The levels, in the order their measures take effect.
const (
	// Plenty: nothing is held back.
	Plenty Level = iota
	// CloseIdle (60 % of the limit open): logs close their sealed
	// segments' files once idle for a second instead of
	// storage.DefaultIdleFileTimeout.
	CloseIdle
	// RefuseConns (85 %): the Kafka listeners close new connections at
	// once, and the web server takes one only in the place of an idle one
	// (it holds no more than it does).
	RefuseConns
	// RefuseTopics (90 %): topic creation is refused (POLICY_VIOLATION).
	// The last tenth is kept for the brokers' own files: segment rolls,
	// checkpoints, reads of closed segments. The partition-replica budgets
	// (server/controller) leave 4,096 descriptors of the limit to
	// everything but the active segments, so a lab filled with partitions
	// sits near the RefuseConns level and not past it.
	RefuseTopics
)

// Thresholds of the levels, in percent of the limit.
const (
	closeIdlePercent    = 60
	refuseConnsPercent  = 85
	refuseTopicsPercent = 90
)

// String names the level for logs.
func (l Level) String() string {
	switch l {
	case CloseIdle:
		return "close-idle"
	case RefuseConns:
		return "refuse-connections"
	case RefuseTopics:
		return "refuse-topics"
	}
	return "plenty"
}

// account is the process's: its limit and a counter of open descriptors,
// read at most every refresh, and less often when reading it is slow.
type account struct {
	limit   uint64
	inUse   func() int
	refresh time.Duration

	mu       sync.Mutex
	at       time.Time     // when the last count began; zero: never counted
	interval time.Duration // till the next count
	counting bool
	open     atomic.Int64
}

// countCostShare bounds what counting costs: the next count waits at
// least this many times as long as the last one took. Counting reads
// /proc/self/fd, a few milliseconds with 10,000 descriptors open (longer
// on a busy machine), so the account takes at most a twentieth of a core.
const countCostShare = 20

var current atomic.Pointer[account]

func init() { Refresh() }

// Refresh reads the process's limit again (after a setrlimit) and starts
// counting afresh.
func Refresh() {
	current.Store(&account{limit: Limit(), inUse: countOpen, refresh: 200 * time.Millisecond})
}

// SetAccount replaces the process's account (tests): limit descriptors,
// inUse counting those open (read afresh on every call). It returns a func
// that restores the previous one.
func SetAccount(limit uint64, inUse func() int) (restore func()) {
	prev := current.Swap(&account{limit: limit, inUse: inUse})
	return func() { current.Store(prev) }
}

// InUse returns the descriptors open and the limit; a limit of 0 is
// unknown, and then InUse is 0 too. The figure is read at most every
// 200 ms (or twenty times as long as the last reading took, if longer), in
// the background: only the first caller waits for a reading.
func InUse() (open int, limit uint64) {
	a := current.Load()
	if a.limit == 0 {
		return 0, 0
	}
	if a.refresh == 0 {
		return a.inUse(), a.limit
	}
	a.mu.Lock()
	now := time.Now()
	first := a.at.IsZero()
	due := !a.counting && (first || now.Sub(a.at) >= a.interval)
	if due {
		a.counting, a.at = true, now
	}
	a.mu.Unlock()
	switch {
	case first && due:
		a.count(now) // no figure yet: the first caller waits for one
	case due:
		// The others read the last figure meanwhile: an accept loop asking
		// the level never waits for /proc.
		go a.count(now)
	}
	return int(a.open.Load()), a.limit
}

// count reads the descriptors open and sets when to read them next.
func (a *account) count(began time.Time) {
	a.open.Store(int64(a.inUse()))
	took := time.Since(began)
	a.mu.Lock()
	a.counting = false
	a.interval = max(a.refresh, countCostShare*took)
	a.mu.Unlock()
}

// Now returns the process's Level; Plenty when the limit is unknown.
func Now() Level {
	open, limit := InUse()
	if limit == 0 {
		return Plenty
	}
	pct := uint64(open) * 100 / limit
	switch {
	case pct >= refuseTopicsPercent:
		return RefuseTopics
	case pct >= refuseConnsPercent:
		return RefuseConns
	case pct >= closeIdlePercent:
		return CloseIdle
	}
	return Plenty
}

// AtLeast reports whether the process is at level l or shorter.
func AtLeast(l Level) bool { return Now() >= l }
