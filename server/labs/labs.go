// Package labs hosts several independent lab clusters in one process: the
// main page's cluster and one fresh cluster per lesson run. Each lesson
// cluster lives in its own data directory under Root, listens on free
// loopback ports, starts with its clock paused, and is removed (directory
// and all) when it is closed, when it has been idle for IdleTimeout, or
// when the whole Labs closes. The number of lesson clusters is bounded so a
// burst of learners cannot exhaust the machine; when the bound is reached,
// Open decides (and only Open) which private cluster makes room: see Open.
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
	"strconv"
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
	// IdleAfter is how long a private cluster with no page open on it
	// (not held, see Lab.Hold) and no request must wait to count as idle
	// for another owner (default 2 minutes): when every slot is taken, one
	// that idle may be ended to make room for someone else's (see Open).
	IdleAfter time.Duration
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

// FullError is ErrFull with what the refused owner can do about it. Max
// is MaxClusters; Own is how many of the slots are the owner's own labs
// that are in use (open in a page, or a chaos run playing); IdleIn is how
// long until the first other owner's lab counts as idle (0: each of them
// is in use, so waiting alone says nothing).
type FullError struct {
	Max    int
	Own    int
	IdleIn time.Duration
}

// Error says the refusal in English with what is left to do: end one of
// the owner's own, or wait until another owner's counts as idle.
func (e *FullError) Error() string {
	msg := fmt.Sprintf("%v: all %d run lessons, chaos runs, comparisons or class seats", ErrFull, e.Max)
	if e.Own > 0 {
		msg += fmt.Sprintf("; %d of them are yours and in use: end one at /lessons or close its page", e.Own)
	}
	if e.IdleIn > 0 {
		msg += fmt.Sprintf("; another learner's counts as idle in %v: try again then", e.IdleIn.Round(time.Second))
	} else if e.Own == 0 {
		msg += "; each is in use: try again in a minute"
	}
	return msg
}

// Unwrap makes errors.Is(err, ErrFull) and kerr matching work.
func (e *FullError) Unwrap() error { return ErrFull }

// MessageKey is the i18n key and arguments of the refused learner's text.
func (e *FullError) MessageKey() (string, []string) {
	max := strconv.Itoa(e.Max)
	switch {
	case e.Own > 0:
		return "limits.clusters-full.own", []string{max, strconv.Itoa(e.Own)}
	case e.IdleIn > 0:
		secs := (e.IdleIn + time.Second - 1) / time.Second
		return "limits.clusters-full.wait", []string{max, strconv.Itoa(int(secs))}
	}
	return "limits.clusters-full.busy", []string{max}
}

// ErrClosed is returned by Open once Labs is closed.
var ErrClosed = errors.New("labs: closed")

// Labs is the set of running clusters. Its methods are safe for concurrent use.
type Labs struct {
	opts Options

	mu     sync.Mutex // guards labs and closed; taken before a Lab's mu, never after
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
	// Owner is whose lab this is: a learner's identity or a class seat's
	// ("seat-<n>"); "" is nobody's, never ended to make room for its owner.
	Owner string

	cluster *cluster.Cluster
	onClose func()
	unwatch func() // from Options.Watch; nil without one
	now     func() time.Time

	mu       sync.Mutex // guards the fields below
	lastUsed time.Time
	holds    int  // pages open on it, a chaos run playing, its start
	finished bool // its owner is done with it: ended first to make room
	closed   bool
}

// Cluster returns the lab's cluster.
func (l *Lab) Cluster() *cluster.Cluster { return l.cluster }

// Hold marks the lab in use until a matching Release: a lesson run's page
// with its websocket open, a chaos run while it plays. A held lab is never
// idle, so neither the sweep nor another owner's Open ends it.
func (l *Lab) Hold() {
	l.mu.Lock()
	l.holds++
	l.mu.Unlock()
}

// Release ends one Hold; the lab's idle time counts from now.
func (l *Lab) Release() {
	l.mu.Lock()
	if l.holds > 0 {
		l.holds--
	}
	if now := l.now(); now.After(l.lastUsed) {
		l.lastUsed = now
	}
	l.mu.Unlock()
}

// Finish marks the lab as one its owner is done with (a lesson run whose
// every step ran): the owner's next Open ends it, even when a slot is free.
func (l *Lab) Finish() {
	l.mu.Lock()
	l.finished = true
	l.mu.Unlock()
}

// Finished reports whether Finish was called.
func (l *Lab) Finished() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.finished
}

// LastUsed is when the lab was last touched or released; now while it is
// held.
func (l *Lab) LastUsed() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.holds > 0 {
		return l.now()
	}
	return l.lastUsed
}

// Idle returns how long the lab has gone unused: 0 while it is held.
func (l *Lab) Idle() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.holds > 0 {
		return 0
	}
	return max(l.now().Sub(l.lastUsed), 0)
}

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
	if opts.IdleAfter <= 0 {
		opts.IdleAfter = 2 * time.Minute
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
	l := &Lab{ID: id, Pinned: true, cluster: c, now: ls.opts.Now, lastUsed: ls.opts.Now()}
	ls.labs[id] = l
	return l, nil
}

// Open starts a fresh cluster for owner in its own directory under Root:
// free loopback ports, paused clock, a bus that keeps History events. opts
// supplies the rest (Brokers, Broker tuning, Logger); DataDir, KafkaPort,
// Paused and Bus are set here. onClose, if not nil, runs once when the lab
// closes (by Remove, the sweep, Close or another Open making room), just
// before its cluster stops. The lab comes back held (Hold) so that nothing
// ends it while its caller sets it up: Release it then.
//
// Open first ends owner's finished labs (Finish): the learner has moved on.
// When MaxClusters private clusters still run, it ends one to make room:
// the one of owner's own not held (no page open on it) that was used
// longest ago; else another owner's idle one (not held, not used for
// IdleAfter), finished first, then idle longest. Pinned and kept labs are
// never ended. With none of those, Open fails with a *FullError (ErrFull).
func (ls *Labs) Open(owner string, opts cluster.Options, onClose func()) (*Lab, error) {
	id := newID()
	opts.Paused, opts.Bus = true, nil
	return ls.open(&Lab{ID: id, Dir: filepath.Join(ls.opts.Root, id), Owner: owner, onClose: onClose, holds: 1}, opts)
}

// OpenDir starts the cluster kept in dir under id, recovering what an
// earlier OpenDir left there: a class seat's free-play cluster. Unlike
// Open it keeps opts.Paused, and closing the lab (Remove, the sweep, Close)
// stops the cluster but keeps dir, so that the next OpenDir wakes it where
// it was. It counts against MaxClusters like Open's but ends no other lab
// to make room: it fails with a *FullError (ErrFull) instead; an id already
// open is an error.
func (ls *Labs) OpenDir(id, dir string, opts cluster.Options, onClose func()) (*Lab, error) {
	opts.Bus = nil
	return ls.open(&Lab{ID: id, Dir: dir, Kept: true, onClose: onClose}, opts)
}

// open reserves l's slot, first ending what makeRoomLocked picks, and
// starts its cluster on free ports in l.Dir with a bus keeping History
// events.
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
	now := ls.opts.Now()
	var ended []*Lab
	if !l.Kept {
		ended = ls.makeRoomLocked(l.Owner, now)
	}
	if ls.countLocked() >= ls.opts.MaxClusters {
		full := ls.fullLocked(l.Owner, now)
		ls.mu.Unlock()
		ls.closeAll(ended, "finished")
		return nil, full
	}
	id := l.ID
	l.now, l.lastUsed = ls.opts.Now, now
	ls.labs[id] = l // reserve the slot while the cluster starts
	ls.mu.Unlock()
	// The ended labs stop before the new one starts, so that the machine
	// never runs more than MaxClusters at once.
	ls.closeAll(ended, "to make room")

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

// closeAll closes labs makeRoomLocked took out, logging why.
func (ls *Labs) closeAll(labs []*Lab, why string) {
	for _, l := range labs {
		ls.opts.Logger.Info("labs: ending a lab "+why, "lab", l.ID, "owner", l.Owner, "finished", l.Finished())
		if err := l.close(); err != nil {
			ls.opts.Logger.Warn("labs: ending a lab", "lab", l.ID, "err", err)
		}
	}
}

// use is a lab as the eviction rule sees it.
type use struct {
	lab      *Lab
	held     bool
	finished bool
	lastUsed time.Time
}

// usesLocked returns every running private lab that is not kept, with its
// state.
func (ls *Labs) usesLocked() []use {
	var out []use
	for _, l := range ls.labs {
		if l.Pinned || l.Kept || l.cluster == nil {
			continue // a lab still starting is its starter's
		}
		l.mu.Lock()
		out = append(out, use{lab: l, held: l.holds > 0, finished: l.finished, lastUsed: l.lastUsed})
		l.mu.Unlock()
	}
	return out
}

// makeRoomLocked takes out of the set owner's finished labs and, if the
// set is still full, the one lab Open's rule picks (see Open), and returns
// them for the caller to close outside ls.mu.
func (ls *Labs) makeRoomLocked(owner string, now time.Time) []*Lab {
	uses := ls.usesLocked()
	var out []*Lab
	take := func(l *Lab) {
		delete(ls.labs, l.ID)
		out = append(out, l)
	}
	var rest []use
	for _, u := range uses {
		if owner != "" && u.lab.Owner == owner && u.finished {
			take(u.lab)
		} else {
			rest = append(rest, u)
		}
	}
	if ls.countLocked() < ls.opts.MaxClusters {
		return out
	}
	var pick *use
	better := func(u *use) bool { // finished first, then used longest ago
		switch {
		case pick == nil:
			return true
		case u.finished != pick.finished:
			return u.finished
		case !u.lastUsed.Equal(pick.lastUsed):
			return u.lastUsed.Before(pick.lastUsed)
		}
		return u.lab.ID < pick.lab.ID // the same pick every time
	}
	for i := range rest {
		if u := &rest[i]; owner != "" && u.lab.Owner == owner && !u.held && better(u) {
			pick = u
		}
	}
	if pick == nil {
		for i := range rest {
			u := &rest[i]
			other := owner == "" || u.lab.Owner != owner // "" is nobody's, not its own
			if other && !u.held && now.Sub(u.lastUsed) >= ls.opts.IdleAfter && better(u) {
				pick = u
			}
		}
	}
	if pick != nil {
		take(pick.lab)
	}
	return out
}

// fullLocked is the refusal for owner when makeRoomLocked found nothing
// to end.
func (ls *Labs) fullLocked(owner string, now time.Time) *FullError {
	e := &FullError{Max: ls.opts.MaxClusters}
	for _, u := range ls.usesLocked() {
		switch {
		case owner != "" && u.lab.Owner == owner:
			e.Own++
		case !u.held:
			if in := u.lastUsed.Add(ls.opts.IdleAfter).Sub(now); e.IdleIn == 0 || in < e.IdleIn {
				e.IdleIn = max(in, time.Second)
			}
		}
	}
	return e
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

// Sweep closes every lesson lab not held and idle for IdleTimeout or
// longer and returns their ids, sorted.
func (ls *Labs) Sweep() []string {
	now := ls.opts.Now()
	ls.mu.Lock()
	var idle []*Lab
	for id, l := range ls.labs {
		if l.Pinned || l.cluster == nil {
			continue
		}
		l.mu.Lock()
		last, held := l.lastUsed, l.holds > 0
		l.mu.Unlock()
		if !held && now.Sub(last) >= ls.opts.IdleTimeout {
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
