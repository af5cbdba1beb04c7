package chaos

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/internal/runstore"
	"tidemark/server/cluster"
	"tidemark/server/controller"
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
	// Compare plays a comparison (default Compare): the lab's go through
	// the experiment engine too (experiment.RunCompare).
	Compare func(ctx context.Context, seed uint64, actions []Action, protocols []controller.ReplicationProtocol, o Options) (*Comparison, error)
}

// Service runs chaos runs in the background, each on its own lab cluster,
// and keeps their progress and results. Its methods are safe for
// concurrent use.
type Service struct {
	opts ServiceOptions

	group *runstore.Group

	mu       sync.Mutex // guards runs and compares, and every RunState and CompareState
	runs     runstore.Kept[RunState]
	compares runstore.Kept[CompareState]
	// recordings are the newest runs' and comparisons' events for the
	// stage, by id, oldest first: at most keptRecordings of them.
	recordings []idRecording
}

// known returns a copy of run id of k; ErrUnknownRun if there is none.
func known[T any](s *Service, k *runstore.Kept[T], id string) (T, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := k.Get(id)
	if !ok {
		var none T
		return none, fmt.Errorf("%w: %q", ErrUnknownRun, id)
	}
	return *st, nil
}

// copies returns a copy of every run of k, newest first.
func copies[T any](s *Service, k *runstore.Kept[T]) []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	return k.Copies()
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

// Finished reports whether the run has a result; Phase is where it is.
func (st RunState) Finished() bool { return st.Result != nil }
func (st RunState) Phase() Phase   { return st.Progress.Phase }

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
	if opts.Compare == nil {
		opts.Compare = Compare
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Service{opts: opts, group: runstore.NewGroup()}, nil
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
	st := &RunState{ID: runstore.NewID(), Seed: seed, Config: cfg, Actions: len(actions),
		Progress: Progress{Phase: PhaseStarting, Total: len(actions)}}
	err = s.launch(owner, func() { s.runs.Add(st.ID, st, s.opts.MaxKept, (*RunState).Done) }, func(ctx context.Context, o Options) {
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
	ctx, cancel := context.WithCancel(s.group.Context())
	lab, err := s.opts.Labs.Open(owner, cluster.Options{Brokers: Brokers, Logger: s.opts.Logger}, cancel)
	if err != nil {
		cancel()
		return err
	}
	err = s.group.Go(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		register()
	}, func(context.Context) {
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
	})
	if err != nil {
		cancel()
		s.opts.Labs.Remove(lab.ID)
		return fmt.Errorf("chaos: %w", err)
	}
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
func (s *Service) Get(id string) (RunState, error) { return known(s, &s.runs, id) }

// List returns every remembered run, newest first.
func (s *Service) List() []RunState { return copies(s, &s.runs) }

// Close stops every run and waits for them.
func (s *Service) Close() { s.group.Close() }
