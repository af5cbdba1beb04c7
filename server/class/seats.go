package class

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/lessons"
	"tidemark/server/chaos"
	"tidemark/server/cluster"
	"tidemark/server/controller"
	"tidemark/server/experiment"
	"tidemark/server/labs"
)

// Env is what a seat's handler serves: the seat's own free-play cluster and
// its own lesson and chaos runs.
type Env struct {
	Seat    int
	Cluster *cluster.Cluster
	Lessons *lessons.Service
	Chaos   *chaos.Service
	// Learner is where the handler reports each produce and fault the
	// learner sends (Learner.Begin, Learner.Did): the exercises grade
	// these, not everything the cluster did.
	Learner *Learner
}

// Options configures a Class. Dir, Name (for a new class), Cluster and
// NewHandler are required; every other zero field gives its default.
type Options struct {
	// Dir holds the roster (Dir/roster) and the seats' clusters
	// (Dir/seats/seat-<n>).
	Dir string
	// Name is the class's name; "" keeps the stored one.
	Name string
	// Seats is how many seats the class has at least.
	Seats int
	// Cluster is every seat cluster's template (brokers, broker tuning,
	// message events, fencing rule); DataDir, KafkaPort and Bus are the
	// seat's own.
	Cluster cluster.Options
	// Setup runs on a seat's cluster each time it starts (creating topic
	// demo when it is missing); nil: nothing.
	Setup func(*cluster.Cluster) error
	// NewHandler builds the handler that serves a woken seat; Close on what
	// it returns ends it (its websockets) before the seat hibernates.
	NewHandler func(Env) (http.Handler, io.Closer, error)
	// Runs hosts the seats' lesson and chaos runs (required).
	Runs *labs.Labs
	// MaxAwake bounds the seat clusters running at once (default
	// DefaultMaxAwake()); a seat past it first hibernates the seat idle
	// longest.
	MaxAwake int
	// IdleAfter hibernates a seat nobody has used (no request, no open
	// websocket) for this long (default 10 minutes).
	IdleAfter time.Duration
	// SweepInterval is how often idle seats are looked for (default 30 s);
	// negative: never (tests call Sweep).
	SweepInterval time.Duration
	// OnlineFor is how long after its last request a seat counts as online
	// without an open websocket (default one minute).
	OnlineFor time.Duration
	Now       func() time.Time
	Logger    *slog.Logger
}

// seatBudget is the partition replicas DefaultMaxAwake reserves per awake
// seat: topic demo's 9 and a lesson run's, with room to spare.
const seatBudget = 24

// DefaultMaxAwake is the awake-seat limit computed from the machine: the
// process's partition-replica budget (controller.DefaultMaxPartitionReplicas:
// descriptors, and a quarter of memory at 1 MiB per replica) over
// seatBudget replicas per seat; between 4 and MaxSeats.
func DefaultMaxAwake() int {
	return min(max(controller.DefaultMaxPartitionReplicas()/seatBudget, 4), MaxSeats)
}

// ErrClassFull is returned when a seat must wake but MaxAwake seats are in
// use right now (none of them idle). It wraps THROTTLING_QUOTA_EXCEEDED.
var ErrClassFull = fmt.Errorf("%w: every awake seat is in use", kerr.ThrottlingQuotaExceeded)

// FullError is ErrClassFull with the limit; the web shows its translated
// text (class.full) instead of Kafka's.
type FullError struct{ MaxAwake int }

func (e *FullError) Error() string {
	return fmt.Sprintf("%v: %d seats are active at once, the most this lab runs (--max-awake-seats); try again in a minute", ErrClassFull, e.MaxAwake)
}

// Unwrap makes errors.Is(err, ErrClassFull) and kerr matching work.
func (e *FullError) Unwrap() error { return ErrClassFull }

// MessageKey is the i18n key and arguments of the learner's text.
func (e *FullError) MessageKey() (string, []string) {
	return "class.full", []string{strconv.Itoa(e.MaxAwake)}
}

// Class is a running classroom: the roster and the seats' clusters.
type Class struct {
	*Roster
	opts    Options
	labs    *labs.Labs // the seats' kept clusters, MaxAwake at most
	teacher string     // this start's teacher token
	stop    chan struct{}
	janitor sync.WaitGroup
	mu      sync.Mutex // guards runs and closed
	// lessonsMu serializes the teacher's lesson uploads (lessons.go).
	lessonsMu sync.Mutex
	runs      map[int]*seatRun
	closed    bool
	closeErr  error
}

// seatRun is a seat's running side. mu serializes waking, hibernating and
// resetting and guards the fields after it; inflight and lastUsed are
// atomics so that a request ending never waits on a wake or a hibernation.
type seatRun struct {
	id int

	inflight atomic.Int32 // requests being served, open websockets included
	// watching counts the teacher's projections of the seat (Watch): they
	// keep its cluster awake but are not its learner's presence.
	watching atomic.Int32
	lastUsed atomic.Int64 // unix nanoseconds of the last request's start or end

	mu      sync.Mutex
	lab     *labs.Lab // nil: hibernating
	handler http.Handler
	closer  io.Closer
	lessons *lessons.Service // kept while hibernating: runs have their own clusters
	chaos   *chaos.Service
	grader  *grader // the live exercises on the awake cluster's events
	// gone is closed when the awake cluster stops (hibernation, reset), so
	// a projection streaming it ends and its page reconnects to the next.
	gone chan struct{}
}

// Open opens the class in opts.Dir: the roster (creating it when new) and
// the seats, all hibernating. It returns this start's teacher token.
func Open(opts Options) (*Class, string, error) {
	if opts.Dir == "" || opts.NewHandler == nil || opts.Runs == nil {
		return nil, "", errors.New("class: Options.Dir, NewHandler and Runs are required")
	}
	if opts.MaxAwake == 0 {
		opts.MaxAwake = DefaultMaxAwake()
	}
	if opts.MaxAwake < 0 {
		return nil, "", fmt.Errorf("class: MaxAwake %d must not be negative", opts.MaxAwake)
	}
	if opts.IdleAfter <= 0 {
		opts.IdleAfter = 10 * time.Minute
	}
	if opts.SweepInterval == 0 {
		opts.SweepInterval = 30 * time.Second
	}
	if opts.OnlineFor <= 0 {
		opts.OnlineFor = time.Minute
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	roster, teacher, err := OpenRoster(filepath.Join(opts.Dir, "roster"), opts.Name, opts.Seats, opts.Now, opts.Logger)
	if err != nil {
		return nil, "", err
	}
	seatLabs, err := labs.New(labs.Options{Root: filepath.Join(opts.Dir, "scratch"), MaxClusters: opts.MaxAwake,
		SweepInterval: -1, Now: opts.Now, Logger: opts.Logger})
	if err != nil {
		roster.Close()
		return nil, "", err
	}
	c := &Class{Roster: roster, opts: opts, labs: seatLabs, teacher: teacher, stop: make(chan struct{}), runs: map[int]*seatRun{}}
	c.loadLessons()
	if opts.SweepInterval > 0 {
		c.janitor.Add(1)
		go c.sweepEvery(opts.SweepInterval)
	}
	return c, teacher, nil
}

// MaxAwake returns the awake-seat limit in force.
func (c *Class) MaxAwake() int { return c.opts.MaxAwake }

func (c *Class) sweepEvery(d time.Duration) {
	defer c.janitor.Done()
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			c.Sweep()
		}
	}
}

// run returns seat id's running side, creating it on first use.
func (c *Class) run(id int) (*seatRun, error) {
	if id < 1 || id > c.Len() {
		return nil, ErrNoSeat
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, labs.ErrClosed
	}
	st := c.runs[id]
	if st == nil {
		st = &seatRun{id: id}
		c.runs[id] = st
	}
	return st, nil
}

// Serve serves r for seat id on the seat's own cluster and runs, waking
// the cluster first if it hibernates. Afterwards it records the seat's
// lesson progress when r was about a lesson run. It returns an error only
// when it could not serve (a full class: a *FullError).
func (c *Class) Serve(id int, w http.ResponseWriter, r *http.Request) error {
	st, err := c.run(id)
	if err != nil {
		return err
	}
	wasOnline := c.Online(id)
	h, _, err := c.acquire(st)
	if err != nil {
		return err
	}
	defer c.release(st)
	if !wasOnline {
		c.Touch() // the teacher's live dashboard shows the seat online
	}
	h.ServeHTTP(w, r)
	if run := lessonRunID(r.URL.Path); run != "" {
		c.recordRun(st, run)
	}
	st.mu.Lock()
	c.gradeLocked(st)
	st.mu.Unlock()
	return nil
}

// acquire wakes st if needed, counts a request in flight and returns the
// seat's handler and cluster. Both stay usable until release, even if a
// reset stops them meanwhile (its requests then fail as on a stopped lab).
func (c *Class) acquire(st *seatRun) (http.Handler, *cluster.Cluster, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.lab == nil {
		if err := c.wakeLocked(st); err != nil {
			return nil, nil, err
		}
	}
	st.inflight.Add(1)
	st.lastUsed.Store(c.opts.Now().UnixNano())
	return st.handler, st.lab.Cluster(), nil
}

func (c *Class) release(st *seatRun) {
	st.lastUsed.Store(c.opts.Now().UnixNano())
	st.inflight.Add(-1)
}

// wakeLocked starts st's cluster from its directory (hibernating the seat
// idle longest when the class is at MaxAwake) and its handler.
func (c *Class) wakeLocked(st *seatRun) error {
	start := time.Now()
	dir := filepath.Join(c.opts.Dir, "seats", "seat-"+strconv.Itoa(st.id))
	labID := "seat-" + strconv.Itoa(st.id)
	lab, err := c.labs.OpenDir(labID, dir, c.opts.Cluster, nil)
	if errors.Is(err, labs.ErrFull) && c.evictIdlest(st) {
		lab, err = c.labs.OpenDir(labID, dir, c.opts.Cluster, nil)
	}
	if errors.Is(err, labs.ErrFull) {
		return &FullError{MaxAwake: c.opts.MaxAwake}
	}
	if err != nil {
		return fmt.Errorf("class: waking seat %d: %w", st.id, err)
	}
	fail := func(err error) error {
		c.labs.Remove(labID)
		return fmt.Errorf("class: waking seat %d: %w", st.id, err)
	}
	if c.opts.Setup != nil {
		if err := c.opts.Setup(lab.Cluster()); err != nil {
			return fail(err)
		}
	}
	if st.lessons == nil {
		if st.lessons, err = lessons.NewService(lessons.Options{Labs: c.opts.Runs, Logger: c.opts.Logger}); err != nil {
			return fail(err)
		}
		if st.chaos, err = chaos.NewService(chaos.ServiceOptions{Labs: c.opts.Runs, Logger: c.opts.Logger, Run: experiment.RunChaos, Compare: experiment.RunCompare}); err != nil {
			return fail(err)
		}
	}
	learner := new(Learner)
	h, closer, err := c.opts.NewHandler(Env{Seat: st.id, Cluster: lab.Cluster(), Lessons: st.lessons, Chaos: st.chaos, Learner: learner})
	if err != nil {
		return fail(err)
	}
	st.lab, st.handler, st.closer = lab, h, closer
	st.gone = make(chan struct{})
	st.grader = newGrader(lab.Cluster().Bus(), lab.Cluster().Snapshot(), learner) // before any request of the seat's
	c.opts.Logger.Debug("class: seat woke", "seat", st.id, "took", time.Since(start))
	return nil
}

// evictIdlest hibernates the awake seat (not except) with nothing in
// flight that was used longest ago; false when there is none. A seat busy
// waking or hibernating is skipped (TryLock), so two seats evicting each
// other cannot deadlock.
func (c *Class) evictIdlest(except *seatRun) bool {
	c.mu.Lock()
	all := make([]*seatRun, 0, len(c.runs))
	for _, st := range c.runs {
		if st != except {
			all = append(all, st)
		}
	}
	c.mu.Unlock()
	slices.SortFunc(all, func(a, b *seatRun) int { return cmp.Compare(a.lastUsed.Load(), b.lastUsed.Load()) })
	for _, st := range all {
		if st.busy() || !st.mu.TryLock() {
			continue
		}
		ok := st.lab != nil && !st.busy()
		if ok {
			c.hibernateLocked(st)
		}
		st.mu.Unlock()
		if ok {
			return true
		}
	}
	return false
}

// hibernateLocked ends st's handler and stops its cluster, keeping its
// directory.
func (c *Class) hibernateLocked(st *seatRun) {
	if st.lab == nil {
		return
	}
	if err := st.closer.Close(); err != nil {
		c.opts.Logger.Warn("class: closing a seat's handler", "seat", st.id, "err", err)
	}
	if err := c.labs.Remove(st.lab.ID); err != nil {
		c.opts.Logger.Warn("class: hibernating a seat", "seat", st.id, "err", err)
	}
	st.lab, st.handler, st.closer, st.grader = nil, nil, nil, nil
	close(st.gone)
	st.gone = nil
	c.opts.Logger.Debug("class: seat hibernates", "seat", st.id)
}

// Sweep hibernates every awake seat with nothing in flight that has been
// idle for IdleAfter, and returns their numbers.
func (c *Class) Sweep() []int {
	c.mu.Lock()
	all := make([]*seatRun, 0, len(c.runs))
	for _, st := range c.runs {
		all = append(all, st)
	}
	c.mu.Unlock()
	cutoff := c.opts.Now().Add(-c.opts.IdleAfter).UnixNano()
	var out []int
	for _, st := range all {
		if st.busy() || st.lastUsed.Load() > cutoff {
			continue
		}
		st.mu.Lock()
		if st.lab != nil && !st.busy() && st.lastUsed.Load() <= cutoff {
			c.hibernateLocked(st)
			out = append(out, st.id)
		}
		st.mu.Unlock()
	}
	return out
}

// Awake reports whether seat id's cluster is running.
func (c *Class) Awake(id int) bool {
	c.mu.Lock()
	st := c.runs[id]
	c.mu.Unlock()
	if st == nil {
		return false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.lab != nil
}

// Cluster returns seat id's cluster, waking it, for read-only views (the
// teacher's projection); done must be called when the caller is finished.
func (c *Class) Cluster(id int) (cl *cluster.Cluster, done func(), err error) {
	st, err := c.run(id)
	if err != nil {
		return nil, nil, err
	}
	if _, cl, err = c.acquire(st); err != nil {
		return nil, nil, err
	}
	return cl, func() { c.release(st) }, nil
}

// busy reports whether st is in use: a request of its learner's, or a
// projection of the teacher's.
func (st *seatRun) busy() bool { return st.inflight.Load() != 0 || st.watching.Load() != 0 }

// Watch returns seat id's cluster, waking it, for the teacher's projection
// of the seat (/class/seats/{seat}): it stays awake until done is called,
// but the seat does not count as online for it, nor as used. gone is
// closed when that cluster stops (the seat reset or hibernated).
func (c *Class) Watch(id int) (cl *cluster.Cluster, gone <-chan struct{}, done func(), err error) {
	st, err := c.run(id)
	if err != nil {
		return nil, nil, nil, err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.lab == nil {
		if err := c.wakeLocked(st); err != nil {
			return nil, nil, nil, err
		}
	}
	st.watching.Add(1)
	var once sync.Once
	return st.lab.Cluster(), st.gone, func() { once.Do(func() { st.watching.Add(-1) }) }, nil
}

// Online reports whether seat id is in use: a request or websocket open
// now, or a request within OnlineFor.
func (c *Class) Online(id int) bool {
	c.mu.Lock()
	st := c.runs[id]
	c.mu.Unlock()
	if st == nil {
		return false
	}
	return st.inflight.Load() > 0 || c.opts.Now().UnixNano()-st.lastUsed.Load() < int64(c.opts.OnlineFor)
}

// ResetSeat gives a seat to a new learner: its lesson and chaos runs stop,
// its cluster stops and its directory is removed (the next wake starts a
// fresh one), and the roster gives it a new code and forgets its tokens,
// name and progress.
func (c *Class) ResetSeat(id int) (Seat, error) {
	st, err := c.run(id)
	if err != nil {
		return Seat{}, err
	}
	st.mu.Lock()
	c.hibernateLocked(st)
	st.lastUsed.Store(0) // the seat is free: its last learner's requests do not make it online
	if st.lessons != nil {
		st.lessons.Close()
		st.chaos.Close()
		st.lessons, st.chaos = nil, nil
	}
	err = os.RemoveAll(filepath.Join(c.opts.Dir, "seats", "seat-"+strconv.Itoa(id)))
	st.mu.Unlock()
	if err != nil {
		return Seat{}, fmt.Errorf("class: removing seat %d's cluster: %w", id, err)
	}
	return c.Roster.Reset(id)
}

// recordRun stores the state of the seat's lesson run id in the roster.
func (c *Class) recordRun(st *seatRun, id string) {
	st.mu.Lock()
	svc := st.lessons
	st.mu.Unlock()
	if svc == nil {
		return
	}
	run, err := svc.Get(id)
	if err != nil {
		return
	}
	rs := run.State()
	p := LessonProgress{Lesson: rs.Lesson, Run: rs.ID, Executed: rs.Executed, Total: rs.Total, Done: rs.Done}
	for _, s := range rs.Steps {
		if s.Prediction != nil && s.Prediction.Chosen != "" {
			p.Predictions = append(p.Predictions, Prediction{Step: s.Index, Chosen: s.Prediction.Chosen,
				Right: s.Prediction.Right != nil && *s.Prediction.Right, Correct: slices.Clone(s.Prediction.Correct)})
		}
	}
	if err := c.RecordLesson(st.id, p); err != nil {
		c.opts.Logger.Warn("class: recording lesson progress", "seat", st.id, "err", err)
	}
}

// lessonRunID returns the run id of a lesson run's API or page path
// (/api/v1/lessons/runs/{run}…, /lessons/runs/{run}…); "" for any other.
func lessonRunID(path string) string {
	for _, prefix := range []string{"/api/v1/lessons/runs/", "/lessons/runs/"} {
		if rest, ok := strings.CutPrefix(path, prefix); ok {
			id, _, _ := strings.Cut(rest, "/")
			return id
		}
	}
	return ""
}

// Close hibernates every seat, stops their runs and closes the roster.
func (c *Class) Close() error {
	c.mu.Lock()
	if c.closed {
		err := c.closeErr
		c.mu.Unlock()
		return err
	}
	c.closed = true
	all := make([]*seatRun, 0, len(c.runs))
	for _, st := range c.runs {
		all = append(all, st)
	}
	c.mu.Unlock()
	close(c.stop)
	c.janitor.Wait()
	for _, st := range all {
		st.mu.Lock()
		c.hibernateLocked(st)
		if st.lessons != nil {
			st.lessons.Close()
			st.chaos.Close()
		}
		st.mu.Unlock()
	}
	lessons.RemoveDir(c.lessonsDir())
	err := errors.Join(c.labs.Close(), c.Roster.Close())
	c.mu.Lock()
	c.closeErr = err
	c.mu.Unlock()
	return err
}
