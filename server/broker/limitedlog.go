package broker

import (
	"log/slog"
	"sync"
	"time"
)

// errorLogInterval is the most often one kind of broker error is logged.
const errorLogInterval = 10 * time.Second

// limitedLog logs a repeated error at most once per interval for each
// message, with how many were left out since the last line: a failing disk
// under a thousand partitions, ticked twenty times a second, must not write
// twenty thousand lines a second. Messages are constants, so the map stays
// small.
type limitedLog struct {
	logger   *slog.Logger
	interval time.Duration

	mu   sync.Mutex
	seen map[string]*limitedEntry
}

type limitedEntry struct {
	next    time.Time // when the message may be logged again
	dropped int       // occurrences not logged since the last line
}

func newLimitedLog(logger *slog.Logger, interval time.Duration) *limitedLog {
	return &limitedLog{logger: logger, interval: interval, seen: map[string]*limitedEntry{}}
}

// log logs msg at error level with args, unless msg was logged less than
// the interval ago; then it only counts it.
func (l *limitedLog) log(msg string, args ...any) {
	now := time.Now()
	l.mu.Lock()
	e := l.seen[msg]
	if e == nil {
		e = &limitedEntry{}
		l.seen[msg] = e
	}
	if now.Before(e.next) {
		e.dropped++
		l.mu.Unlock()
		return
	}
	dropped := e.dropped
	e.next, e.dropped = now.Add(l.interval), 0
	l.mu.Unlock()
	if dropped > 0 {
		args = append(args, "repeats_not_logged", dropped)
	}
	l.logger.Error(msg, args...)
}
