package chaos

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/server/cluster"
	"tidemark/server/kafkaerr"
	"tidemark/server/labs"
)

// ErrUnknownRun is returned for a run id the Service does not know (never
// started, or forgotten to keep the newest MaxKept).
var ErrUnknownRun = errors.New("chaos: no such run")

// MaxSeed is the largest seed the API takes: 2^53-1, the largest integer a
// JSON number keeps exactly in every client.
const MaxSeed = 1<<53 - 1

// ServiceOptions configures a Service.
type ServiceOptions struct {
	// Labs hosts each run's cluster and bounds how many run at once
	// (required).
	Labs *labs.Labs
	// MaxKept is how many runs (running or finished) are remembered,
	// oldest finished forgotten first. Default 32.
	MaxKept int
	Logger  *slog.Logger
	// Run plays a run (default Run): the lab routes its chaos runs through
	// the experiment engine (experiment.RunChaos), which plays the same
	// schedule under the same settings as a one-run experiment.
	Run func(ctx context.Context, seed uint64, cfg Config, actions []Action, o Options) (*Result, error)
}

// Service runs chaos runs in the background, each on its own lab cluster,
// and keeps their progress and results. Its methods are safe for
// concurrent use.
type Service struct {
	opts ServiceOptions

	mu       sync.Mutex // guards runs, compares and closed, and every RunState and CompareState
	runs     kept[RunState]
	compares kept[CompareState]
	// recordings are the newest runs' and comparisons' events for the
	// stage, by id, oldest first: at most keptRecordings of them.
	recordings []idRecording
	closed     bool
	wg         sync.WaitGroup
	ctx        context.Context
	cancel     context.CancelFunc
}

// kept is the runs of one kind a Service remembers, oldest first.
type kept[T any] struct {
	byID  map[string]*T
	order []string
}

// add remembers st under id and forgets the oldest finished runs beyond
// maxKept.
func (k *kept[T]) add(id string, st *T, maxKept int, done func(*T) bool) {
	if k.byID == nil {
		k.byID = map[string]*T{}
	}
	k.byID[id] = st
	k.order = append(k.order, id)
	for i := 0; len(k.order) > maxKept && i < len(k.order); {
		id := k.order[i]
		if done(k.byID[id]) {
			delete(k.byID, id)
			k.order = append(k.order[:i], k.order[i+1:]...)
			continue
		}
		i++
	}
}

// list returns copies of every run, newest first.
func (k *kept[T]) list() []T {
	out := make([]T, 0, len(k.order))
	for i := len(k.order) - 1; i >= 0; i-- {
		out = append(out, *k.byID[k.order[i]])
	}
	return out
}

// get returns a copy of run id; ErrUnknownRun if there is none.
func (k *kept[T]) get(id string) (T, error) {
	st, ok := k.byID[id]
	if !ok {
		var none T
		return none, fmt.Errorf("%w: %q", ErrUnknownRun, id)
	}
	return *st, nil
}

// RunState is a run as the API shows it. Result is set once it finished.
type RunState struct {
	ID       string   `json:"id"`
	Seed     uint64   `json:"seed"`
	Config   Config   `json:"config"`
	Actions  int      `json:"actions"`
	Progress Progress `json:"progress"`
	Error    string   `json:"error,omitempty"`
	// Lost and UnsyncedLost are the finished run's losses with their causes.
	Lost         []Loss  `json:"lost,omitempty"`
	UnsyncedLost []Loss  `json:"unsynced_lost,omitempty"`
	Result       *Result `json:"-"`
}

// Done reports whether the run finished, well or not.
func (st *RunState) Done() bool {
	return st.Progress.Phase == PhaseDone || st.Progress.Phase == PhaseFailed
}

// NewService returns a Service on opts.Labs.
func NewService(opts ServiceOptions) (*Service, error) {
	if opts.Labs == nil {
		return nil, errors.New("chaos: ServiceOptions.Labs is required")
	}
	if opts.MaxKept <= 0 {
		opts.MaxKept = 32
	}
	if opts.Run == nil {
		opts.Run = Run
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s := &Service{opts: opts}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// Start begins a run of seed under cfg in the background: actions, if
// given, are its schedule; otherwise Generate(seed, n) is (n 0: DefaultActions).
// The run's cluster is owner's (labs.Open: a full lab first ends one of
// owner's idle ones); a full lab is THROTTLING_QUOTA_EXCEEDED (a
// *labs.FullError).
func (s *Service) Start(owner string, seed uint64, cfg Config, n int, actions []Action) (RunState, error) {
	if _, err := ParseConfig(string(cfg)); err != nil {
		return RunState{}, err
	}
	actions, err := schedule(seed, n, actions)
	if err != nil {
		return RunState{}, err
	}
	st := &RunState{ID: newRunID(), Seed: seed, Config: cfg, Actions: len(actions),
		Progress: Progress{Phase: PhaseStarting, Total: len(actions)}}
	err = s.launch(owner, func() { s.runs.add(st.ID, st, s.opts.MaxKept, (*RunState).Done) }, func(ctx context.Context, o Options) {
		o.Progress = func(p Progress) {
			if p.Phase == PhaseDone {
				return // done is when the result is in, below
			}
			s.mu.Lock()
			st.Progress = p
			s.mu.Unlock()
		}
		res, err := s.opts.Run(ctx, seed, cfg, actions, o)
		s.mu.Lock()
		defer s.mu.Unlock()
		if err != nil {
			st.Progress.Phase, st.Error = PhaseFailed, err.Error()
			return
		}
		s.keepRecording(st.ID, res.Recording)
		res.Recording = nil // the Service keeps it, for a while
		st.Result, st.Lost, st.UnsyncedLost = res, res.Report.Lost, res.Report.UnsyncedLost
		st.Progress = Progress{Phase: PhaseDone, Action: len(actions), Total: len(actions), Counts: res.Counts}
	})
	if err != nil {
		return RunState{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return *st, nil
}

// errActions refuses a run of n actions (INVALID_REQUEST).
func errActions(n int) error {
	return kafkaerr.WithKey(fmt.Errorf("%w: %d actions; a run has 1 to %d", kerr.InvalidRequest, n, MaxActions),
		"chaos.refused.actions", strconv.Itoa(n), strconv.Itoa(MaxActions))
}

// schedule checks a run's seed and schedule: actions if given, else
// Generate(seed, n) (n 0: DefaultActions); INVALID_REQUEST when out of bounds.
func schedule(seed uint64, n int, actions []Action) ([]Action, error) {
	if seed > MaxSeed {
		return nil, kafkaerr.WithKey(fmt.Errorf("%w: seed %d is larger than %d", kerr.InvalidRequest, seed, uint64(MaxSeed)),
			"chaos.refused.seed", strconv.FormatUint(seed, 10), strconv.FormatUint(MaxSeed, 10))
	}
	if actions == nil {
		if n == 0 {
			n = DefaultActions
		}
		if n < 1 || n > MaxActions {
			return nil, errActions(n)
		}
		actions = Generate(seed, n)
	}
	if len(actions) == 0 || len(actions) > MaxActions {
		return nil, errActions(len(actions))
	}
	for _, a := range actions {
		if err := a.validate(); err != nil {
			return nil, err
		}
	}
	return actions, nil
}

// launch opens a lab cluster for owner's run, remembers the run (register,
// under s.mu) and plays it in the background: play gets Options whose Open
// hands out that cluster once and removes it from the lab at the end. The
// lab stays held (labs.Lab.Hold) while it plays, so that no one's start
// ends a run half played.
func (s *Service) launch(owner string, register func(), play func(ctx context.Context, o Options)) error {
	ctx, cancel := context.WithCancel(s.ctx)
	lab, err := s.opts.Labs.Open(owner, cluster.Options{Brokers: Brokers, Logger: s.opts.Logger}, cancel)
	if err != nil {
		cancel()
		return err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		cancel()
		s.opts.Labs.Remove(lab.ID)
		return errors.New("chaos: service closed")
	}
	register()
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		defer cancel()
		defer lab.Release()
		opened := false
		play(ctx, Options{
			Logger: s.opts.Logger,
			Open: func(cluster.Options) (*cluster.Cluster, func() error, error) {
				if opened {
					return nil, nil, errors.New("chaos: one cluster per run")
				}
				opened = true
				return lab.Cluster(), func() error { return s.opts.Labs.Remove(lab.ID) }, nil
			},
		})
	}()
	return nil
}

// keptRecordings is how many finished runs' recordings a Service keeps
// (a few megabytes each at most: MaxRecorded).
const keptRecordings = 4

// idRecording is a run's or comparison's Recording.
type idRecording struct {
	id  string
	rec *Recording
}

// keepRecording keeps rec as id's, forgetting the oldest beyond
// keptRecordings. Callers hold s.mu.
func (s *Service) keepRecording(id string, rec *Recording) {
	if rec == nil {
		return
	}
	s.recordings = append(s.recordings, idRecording{id, rec})
	if n := len(s.recordings) - keptRecordings; n > 0 {
		s.recordings = append(s.recordings[:0], s.recordings[n:]...)
	}
}

// Recording returns what run or comparison id recorded for the stage to
// play back; false when it has none (not finished, failed, or among the
// older ones, whose recordings are forgotten). Nobody changes it.
func (s *Service) Recording(id string) (*Recording, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.recordings {
		if r.id == id {
			return r.rec, true
		}
	}
	return nil, false
}

// Get returns a run's state (a copy); ErrUnknownRun if there is none.
func (s *Service) Get(id string) (RunState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs.get(id)
}

// List returns every remembered run, newest first.
func (s *Service) List() []RunState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs.list()
}

// Close stops every run and waits for them.
func (s *Service) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
}

func newRunID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
