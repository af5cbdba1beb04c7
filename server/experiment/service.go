package experiment

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"tidemark/i18n"
	"tidemark/internal/runstore"
	"tidemark/lessons"
	"tidemark/server/chaos"
)

// ErrQueueFull is returned by Start when MaxQueued experiments are waiting
// or running already.
var ErrQueueFull = errors.New("experiment: too many experiments waiting")

// ErrUnknown is returned for an experiment id, run or file the Service does
// not have (never started, or forgotten to keep the newest MaxKept).
var ErrUnknown = errors.New("experiment: not found")

// The phases of an experiment the API shows.
const (
	PhaseQueued  = "queued" // waiting for the one before it to finish
	PhaseRunning = "running"
	PhaseDone    = "done"
	PhaseFailed  = "failed"
)

// State is an experiment as the API shows it: progress while it runs,
// every finished run as it comes, and once done its summary, checks,
// findings and the files to download.
type State struct {
	ID       string        `json:"id"`
	Name     string        `json:"name"` // the file's experiment name
	File     string        `json:"file"`
	Title    string        `json:"title"`
	Phase    string        `json:"phase"`
	Progress Progress      `json:"progress"`
	Runs     []RunResult   `json:"runs"`
	Summary  []SummaryRow  `json:"summary,omitempty"`
	Checks   []CheckResult `json:"checks,omitempty"`
	Findings []string      `json:"findings,omitempty"`
	Files    []string      `json:"files,omitempty"`
	Error    string        `json:"error,omitempty"`
	Started  time.Time     `json:"started"`
	// ElapsedMs is the wall time it took once done.
	ElapsedMs int64 `json:"elapsed_ms,omitempty"`
}

// Done reports whether the experiment finished, well or not.
func (st *State) Done() bool { return st.Phase == PhaseDone || st.Phase == PhaseFailed }

// ServiceOptions configure a Service; the zero value is usable.
type ServiceOptions struct {
	// MaxKept is how many experiments are remembered (default 16), the
	// oldest finished forgotten first.
	MaxKept int
	// MaxQueued bounds the experiments running or waiting (default 8).
	MaxQueued int
	// MaxRecordings is how many runs' recordings are kept for the stage
	// (default 24), the oldest forgotten first.
	MaxRecordings int
	// Chaos are the engine's options for every run (Open: where clusters
	// live; default a temporary directory per run).
	Chaos  chaos.Options
	Logger *slog.Logger
}

// Service runs experiments in the background, one at a time (a run is a
// whole cluster; the machine is shared), and keeps their states, files
// and the newest runs' recordings. Its methods are safe for concurrent use.
type Service struct {
	opts  ServiceOptions
	turn  chan struct{} // held by the experiment running
	group *runstore.Group

	mu         sync.Mutex
	kept       runstore.Kept[entry]
	recordings []runRecording
}

type entry struct {
	st    State
	res   *Results // once done: the files and findings in another language
	files map[string][]byte
	// changed is closed at the state's next change (and replaced), for
	// Watch; guarded by Service.mu.
	changed chan struct{}
}

// touch tells the watchers e changed; callers hold s.mu.
func (e *entry) touch() {
	close(e.changed)
	e.changed = make(chan struct{})
}

type runRecording struct {
	id  string
	run int
	rec *chaos.Recording
}

// NewService returns a Service.
func NewService(o ServiceOptions) *Service {
	if o.MaxKept <= 0 {
		o.MaxKept = 16
	}
	if o.MaxQueued <= 0 {
		o.MaxQueued = 8
	}
	if o.MaxRecordings <= 0 {
		o.MaxRecordings = 24
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Service{opts: o, turn: make(chan struct{}, 1), group: runstore.NewGroup()}
}

// Start parses src (file names it in errors) and runs it in the
// background; seeds > 0 keeps only its first seeds. A bad file is a
// *lessons.ParseError.
func (s *Service) Start(file string, src []byte, seeds int) (State, error) {
	x, err := lessons.ParseExperiment(file, src)
	if err != nil {
		return State{}, err
	}
	if seeds < 0 {
		return State{}, fmt.Errorf("seeds %d: want 0 (all) or more", seeds)
	}
	total := x.Runs()
	if seeds > 0 && seeds < len(x.Seeds) {
		total = total / len(x.Seeds) * seeds
	}
	e := &entry{st: State{ID: runstore.NewID(), Name: x.ID, File: file, Title: x.Title.En, Phase: PhaseQueued,
		Progress: Progress{Total: total}, Runs: []RunResult{}, Started: time.Now()}, changed: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	waiting := 0
	for _, e := range s.kept.Newest() {
		if !e.st.Done() {
			waiting++
		}
	}
	if waiting >= s.opts.MaxQueued {
		return State{}, fmt.Errorf("%w: %d running or queued, at most %d", ErrQueueFull, waiting, s.opts.MaxQueued)
	}
	err = s.group.Go(func() { s.kept.Add(e.st.ID, e, s.opts.MaxKept, (*entry).done) }, func(ctx context.Context) { s.run(ctx, e, x, seeds) })
	if err != nil {
		return State{}, fmt.Errorf("experiment: %w", err)
	}
	return e.st, nil
}

func (e *entry) done() bool { return e.st.Done() }

func (s *Service) run(ctx context.Context, e *entry, x *lessons.Experiment, seeds int) {
	select {
	case s.turn <- struct{}{}:
	case <-ctx.Done():
		s.fail(e, ctx.Err())
		return
	}
	defer func() { <-s.turn }()
	s.update(e, func(st *State) { st.Phase = PhaseRunning })
	o := Options{Seeds: seeds, Chaos: s.opts.Chaos}
	if o.Chaos.Logger == nil {
		o.Chaos.Logger = s.opts.Logger
	}
	o.Progress = func(p Progress) { s.update(e, func(st *State) { st.Progress = p }) }
	o.Finished = func(rr RunResult) {
		rec := rr.Recording
		rr.Recording = nil
		s.update(e, func(st *State) { st.Runs = append(slices.Clip(st.Runs), rr) })
		s.keepRecording(e.st.ID, rr.Index, rec)
	}
	began := time.Now()
	res, err := Execute(ctx, x, o)
	if err != nil {
		s.fail(e, err)
		return
	}
	files, err := res.Files()
	if err != nil {
		s.fail(e, err)
		return
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	s.mu.Lock()
	defer s.mu.Unlock()
	e.files, e.res = files, res
	st := &e.st
	st.Summary, st.Checks, st.Findings, st.Files = res.Summary, res.Checks, res.Findings, names
	st.Phase, st.ElapsedMs = PhaseDone, time.Since(began).Milliseconds()
	e.touch()
}

func (s *Service) update(e *entry, f func(*State)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(&e.st)
	e.touch()
}

func (s *Service) fail(e *entry, err error) {
	s.update(e, func(st *State) { st.Phase, st.Error = PhaseFailed, err.Error() })
}

func (s *Service) keepRecording(id string, run int, rec *chaos.Recording) {
	if rec == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recordings = append(s.recordings, runRecording{id, run, rec})
	if n := len(s.recordings) - s.opts.MaxRecordings; n > 0 {
		s.recordings = slices.Delete(s.recordings, 0, n)
	}
}

// Recording returns run's events of experiment id for the stage; false
// when it has none (unknown, not finished, or among the older ones).
func (s *Service) Recording(id string, run int) (*chaos.Recording, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.recordings {
		if r.id == id && r.run == run {
			return r.rec, true
		}
	}
	return nil, false
}

// Get returns an experiment's state (a copy; its slices are never changed
// once handed out).
func (s *Service) Get(id string) (State, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.kept.Get(id)
	if !ok {
		return State{}, fmt.Errorf("%w: experiment %s", ErrUnknown, strconv.Quote(id))
	}
	return e.st, nil
}

// Watch returns an experiment's state as Get does and a channel closed at
// its next change, for a client that follows its progress.
func (s *Service) Watch(id string) (State, <-chan struct{}, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.kept.Get(id)
	if !ok {
		return State{}, nil, fmt.Errorf("%w: experiment %s", ErrUnknown, strconv.Quote(id))
	}
	return e.st, e.changed, nil
}

// List returns every remembered experiment, newest first.
func (s *Service) List() []State {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []State{}
	for _, e := range s.kept.Newest() {
		out = append(out, e.st)
	}
	return out
}

// File returns one of a finished experiment's files, report.md in lang.
func (s *Service) File(id, name string, lang i18n.Lang) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.kept.Get(id)
	if !ok {
		return nil, fmt.Errorf("%w: experiment %s", ErrUnknown, strconv.Quote(id))
	}
	b, ok := e.files[name]
	if !ok {
		return nil, fmt.Errorf("%w: experiment %s has no file %s", ErrUnknown, id, strconv.Quote(name))
	}
	if name == "report.md" && lang != i18n.English {
		return e.res.Report(lang), nil
	}
	return b, nil
}

// In is st with its findings in lang (a State is kept in English).
func (s *Service) In(st State, lang i18n.Lang) State {
	if lang == i18n.English || len(st.Findings) == 0 {
		return st
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.kept.Get(st.ID); ok && e.res != nil {
		st.Findings = e.res.FindingsIn(lang)
	}
	return st
}

// Close stops every experiment and waits for them.
func (s *Service) Close() { s.group.Close() }
