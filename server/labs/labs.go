// Package labs hosts several independent lab clusters in one process: the
// main page's cluster and one fresh cluster per lesson run. Each lesson
// cluster lives in its own data directory under Root, listens on free
// loopback ports, starts with its clock paused, and is removed (directory
// and all) when it is closed, when it has been idle for IdleTimeout, or
// when the whole Labs closes. The number of lesson clusters is bounded so a
// burst of learners cannot exhaust the machine.
package labs

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/events"
	"tidemark/server/cluster"
)

// Options configures Labs. Root is required; the zero value of every other
// field gives its default.
type Options struct {
	// Root holds one data directory per lesson cluster (<data-dir>/lessons).
	// Whatever is left there from an earlier process is removed by New.
	Root string
	// MaxClusters bounds the lesson clusters running at once (default 4);
	// pinned clusters such as the main one do not count.
	MaxClusters int
	// IdleTimeout closes a lesson cluster nobody has touched for this long
	// (default 15 minutes).
	IdleTimeout time.Duration
	// SweepInterval is how often the janitor looks for idle clusters (default
	// one minute). Negative: no janitor; call Sweep yourself (tests).
	SweepInterval time.Duration
	// Now is the clock idleness is measured with (default time.Now).
	Now func() time.Time
	// History is how many events each lesson cluster's bus keeps (default
	// 1<<16): a lesson replays its events from the start to step back.
	History int
	// Watch, if not nil, is called with each opened lab's cluster once it
	// runs (not pinned ones: their owner reports them) and returns what to
	// call when the lab closes: /metrics reports lesson and chaos labs so.
	Watch  func(id string, c *cluster.Cluster) (unwatch func())
	Logger *slog.Logger
}

// ErrFull is returned by Open and OpenDir when MaxClusters private clusters
// run: lesson runs, chaos runs, comparisons and class seats share the
// slots. It wraps THROTTLING_QUOTA_EXCEEDED, the Kafka error for "too many
// of these now, retry later".
var ErrFull = fmt.Errorf("%w: every private cluster is in use", kerr.ThrottlingQuotaExceeded)

// ErrClosed is returned by Open once Labs is closed.
var ErrClosed = errors.New("labs: closed")

// Labs is the set of running clusters. Its methods are safe for concurrent use.
type Labs struct {
	opts Options

	mu     sync.Mutex // guards labs and closed
	labs   map[string]*Lab
	closed bool

	stop chan struct{}
	done chan struct{}
}

// Lab is one hosted cluster.
type Lab struct {
	// ID names the lab; lesson clusters get a random hex id.
	ID string
	// Dir is the cluster's data directory ("" for a pinned cluster Labs
	// does not own).
	Dir string
	// Pinned labs (the main cluster) are never swept and not counted.
	Pinned bool
	// Kept labs (a class seat's free-play cluster, opened by OpenDir) keep
	// Dir when they close: closing one hibernates it.
	Kept bool

	cluster *cluster.Cluster
	onClose func()
	unwatch func() // from Options.Watch; nil without one

	mu       sync.Mutex // guards lastUsed and closed
	lastUsed time.Time
	closed   bool
}

// Cluster returns the lab's cluster.
func (l *Lab) Cluster() *cluster.Cluster { return l.cluster }

// Closed reports whether the lab has been closed (by Remove, the idle sweep or Labs.Close).
func (l *Lab) Closed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

// New returns an empty Labs, removing what an earlier process left in Root,
// and starts the idle janitor unless SweepInterval is negative.
func New(opts Options) (*Labs, error) {
	if opts.Root == "" {
		return nil, errors.New("labs: Options.Root is required")
	}
	if opts.MaxClusters == 0 {
		opts.MaxClusters = 4
	}
	if opts.MaxClusters < 0 {
		return nil, fmt.Errorf("labs: MaxClusters %d must not be negative", opts.MaxClusters)
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = 15 * time.Minute
	}
	if opts.SweepInterval == 0 {
		opts.SweepInterval = time.Minute
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.History <= 0 {
		opts.History = 1 << 16
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	// Lesson clusters never outlive their process: anything here is debris
	// from one that was killed.
	if err := os.RemoveAll(opts.Root); err != nil {
		return nil, fmt.Errorf("labs: clearing %s: %w", opts.Root, err)
	}
	if err := os.MkdirAll(opts.Root, 0o755); err != nil {
		return nil, err
	}
	ls := &Labs{opts: opts, labs: map[string]*Lab{}, stop: make(chan struct{}), done: make(chan struct{})}
	if opts.SweepInterval > 0 {
		go ls.janitor()
	} else {
		close(ls.done)
	}
	return ls, nil
}

func (ls *Labs) janitor() {
	defer close(ls.done)
	t := time.NewTicker(ls.opts.SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-ls.stop:
			return
		case <-t.C:
			ls.Sweep()
		}
	}
}

// Pin adds a cluster Labs does not own (the main page's) under id. It is
// never swept, does not count against MaxClusters, and Labs.Close leaves it
// running.
func (ls *Labs) Pin(id string, c *cluster.Cluster) (*Lab, error) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.closed {
		return nil, ErrClosed
	}
	if ls.labs[id] != nil {
		return nil, fmt.Errorf("labs: %q already exists", id)
	}
	l := &Lab{ID: id, Pinned: true, cluster: c, lastUsed: ls.opts.Now()}
	ls.labs[id] = l
	return l, nil
}

// Open starts a fresh cluster in its own directory under Root: free
// loopback ports, paused clock, a bus that keeps History events. opts
// supplies the rest (Brokers, Broker tuning, Logger); DataDir, KafkaPort,
// Paused and Bus are set here. onClose, if not nil, runs once when the lab
// closes (by Remove, the sweep or Close), just before its cluster stops. Open fails with ErrFull
// when MaxClusters private clusters are running.
func (ls *Labs) Open(opts cluster.Options, onClose func()) (*Lab, error) {
	id := newID()
	opts.Paused, opts.Bus = true, nil
	return ls.open(&Lab{ID: id, Dir: filepath.Join(ls.opts.Root, id), onClose: onClose}, opts)
}

// OpenDir starts the cluster kept in dir under id, recovering what an
// earlier OpenDir left there: a class seat's free-play cluster. Unlike
// Open it keeps opts.Paused, and closing the lab (Remove, the sweep, Close)
// stops the cluster but keeps dir, so that the next OpenDir wakes it where
// it was. It counts against MaxClusters like Open's and fails with ErrFull
// the same way; an id already open is an error.
func (ls *Labs) OpenDir(id, dir string, opts cluster.Options, onClose func()) (*Lab, error) {
	opts.Bus = nil
	return ls.open(&Lab{ID: id, Dir: dir, Kept: true, onClose: onClose}, opts)
}

// open reserves l's slot and starts its cluster on free ports in l.Dir
// with a bus keeping History events.
func (ls *Labs) open(l *Lab, opts cluster.Options) (*Lab, error) {
	ls.mu.Lock()
	if ls.closed {
		ls.mu.Unlock()
		return nil, ErrClosed
	}
	if ls.labs[l.ID] != nil {
		ls.mu.Unlock()
		return nil, fmt.Errorf("labs: %q already exists", l.ID)
	}
	if ls.countLocked() >= ls.opts.MaxClusters {
		ls.mu.Unlock()
		return nil, fmt.Errorf("%w: all %d run lessons, chaos runs, comparisons or class seats; end one or wait until an idle one is cleaned up (after %v)",
			ErrFull, ls.opts.MaxClusters, ls.opts.IdleTimeout)
	}
	id := l.ID
	l.lastUsed = ls.opts.Now()
	ls.labs[id] = l // reserve the slot while the cluster starts
	ls.mu.Unlock()

	opts.DataDir, opts.KafkaPort = l.Dir, 0
	opts.Bus = events.NewBus(events.BusOptions{History: ls.opts.History})
	if opts.Logger == nil {
		opts.Logger = ls.opts.Logger
	}
	c, err := cluster.Open(opts)
	if err != nil {
		ls.mu.Lock()
		delete(ls.labs, id)
		ls.mu.Unlock()
		if !l.Kept {
			os.RemoveAll(l.Dir)
		}
		return nil, err
	}
	if ls.opts.Watch != nil {
		l.unwatch = ls.opts.Watch(id, c)
	}
	ls.mu.Lock()
	l.cluster = c
	closed := ls.closed
	ls.mu.Unlock()
	if closed { // Labs closed while the cluster started
		l.close()
		return nil, ErrClosed
	}
	return l, nil
}

func (ls *Labs) countLocked() int {
	n := 0
	for _, l := range ls.labs {
		if !l.Pinned {
			n++
		}
	}
	return n
}

// Get returns the lab with id and marks it used now; false if there is no
// such lab (never was, closed, or swept).
func (ls *Labs) Get(id string) (*Lab, bool) {
	ls.mu.Lock()
	l := ls.labs[id]
	ls.mu.Unlock()
	if l == nil || l.cluster == nil {
		return nil, false
	}
	l.Touch(ls.opts.Now())
	return l, true
}

// Touch marks the lab used at now, postponing its idle cleanup.
func (l *Lab) Touch(now time.Time) {
	l.mu.Lock()
	if now.After(l.lastUsed) {
		l.lastUsed = now
	}
	l.mu.Unlock()
}

// Touch marks the lab with id used now; unknown ids are ignored.
func (ls *Labs) Touch(id string) {
	ls.mu.Lock()
	l := ls.labs[id]
	ls.mu.Unlock()
	if l != nil {
		l.Touch(ls.opts.Now())
	}
}

// List returns the ids of every lab, sorted.
func (ls *Labs) List() []string {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	out := make([]string, 0, len(ls.labs))
	for id := range ls.labs {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// Remove closes the lesson lab with id: its cluster shuts down and its
// directory is removed (a Kept lab's stays). Pinned labs are only forgotten. Unknown ids are
// not an error.
func (ls *Labs) Remove(id string) error {
	ls.mu.Lock()
	l := ls.labs[id]
	if l == nil || l.cluster == nil {
		ls.mu.Unlock()
		return nil
	}
	delete(ls.labs, id)
	ls.mu.Unlock()
	return l.close()
}

func (l *Lab) close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.mu.Unlock()
	if l.unwatch != nil {
		l.unwatch()
	}
	if l.Pinned {
		return nil
	}
	if l.onClose != nil {
		l.onClose() // first, so its user stops waiting on the cluster
	}
	err := l.cluster.Close()
	if l.Kept {
		return err
	}
	if rerr := os.RemoveAll(l.Dir); rerr != nil && err == nil {
		err = rerr
	}
	return err
}

// Sweep closes every lesson lab idle for IdleTimeout or longer and returns
// their ids, sorted.
func (ls *Labs) Sweep() []string {
	now := ls.opts.Now()
	ls.mu.Lock()
	var idle []*Lab
	for id, l := range ls.labs {
		if l.Pinned || l.cluster == nil {
			continue
		}
		l.mu.Lock()
		last := l.lastUsed
		l.mu.Unlock()
		if now.Sub(last) >= ls.opts.IdleTimeout {
			idle = append(idle, l)
			delete(ls.labs, id)
		}
	}
	ls.mu.Unlock()
	ids := make([]string, 0, len(idle))
	for _, l := range idle {
		if err := l.close(); err != nil {
			ls.opts.Logger.Warn("labs: closing an idle lab", "lab", l.ID, "err", err)
		}
		ids = append(ids, l.ID)
	}
	sort.Strings(ids)
	return ids
}

// Close stops the janitor and closes every lesson lab; pinned ones keep
// running (their owner closes them). Open fails afterwards.
func (ls *Labs) Close() error {
	ls.mu.Lock()
	if ls.closed {
		ls.mu.Unlock()
		return nil
	}
	ls.closed = true
	all := make([]*Lab, 0, len(ls.labs))
	for _, l := range ls.labs {
		if l.cluster != nil {
			all = append(all, l)
		}
	}
	ls.labs = map[string]*Lab{}
	ls.mu.Unlock()
	close(ls.stop)
	<-ls.done
	var errs []error
	for _, l := range all {
		errs = append(errs, l.close())
	}
	errs = append(errs, os.RemoveAll(ls.opts.Root))
	return errors.Join(errs...)
}

func newID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
