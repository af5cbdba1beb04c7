package wire

import (
	"log/slog"
	"sync"
	"sync/atomic"

	"golang.org/x/time/rate"
)

// closeLog rate-limits the "closing connection" warnings per remote
// address and cause (reason and error): a client that reconnects in a tight loop and is
// closed the same way each time (kafka-python 2.0.2 probing versions
// reconnected ten times a second, 590 warnings a minute) gets its first
// lines, then one per Options.LogInterval with the count of those it
// stands for; other addresses and causes keep their own lines.
type closeLog struct {
	mu    sync.Mutex
	byIP  map[string]*closeLogIP
	every Options
}

type closeLogIP struct {
	sometimes  rate.Sometimes
	unreported atomic.Int64
}

// maxCloseLogIPs bounds the addresses remembered; past it the map starts
// over (the lab's listeners bind loopback, so it is never reached in use).
const maxCloseLogIPs = 1024

// warn logs a closed connection's reason, or counts it toward the next
// line for its address.
func (c *closeLog) warn(log *slog.Logger, ip, reason string, err error) {
	c.mu.Lock()
	if c.byIP == nil || len(c.byIP) >= maxCloseLogIPs {
		c.byIP = map[string]*closeLogIP{}
	}
	key := ip + "\x00" + reason
	if err != nil {
		key += "\x00" + err.Error()
	}
	e := c.byIP[key]
	if e == nil {
		e = &closeLogIP{sometimes: rate.Sometimes{First: 3, Interval: c.every.LogInterval}}
		c.byIP[key] = e
	}
	c.mu.Unlock()
	e.unreported.Add(1)
	e.sometimes.Do(func() {
		log.Warn("closing connection", "reason", reason, "err", err, "closed", e.unreported.Swap(0))
	})
}
