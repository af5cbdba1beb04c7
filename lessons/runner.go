package lessons

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/events"
	"tidemark/server/broker"
	"tidemark/server/cluster"
	"tidemark/server/labs"
)

// Errors a run answers with. Each wraps the Kafka error that fits, so the
// web maps it to a status and a code.
var (
	ErrUnknownLesson = fmt.Errorf("%w: no such lesson", kerr.InvalidRequest)
	ErrUnknownRun    = fmt.Errorf("%w: no such lesson run (it may have ended after being idle)", kerr.InvalidRequest)
	ErrPredictFirst  = fmt.Errorf("%w: this step asks for a prediction first", kerr.InvalidRequest)
	ErrNoPrediction  = fmt.Errorf("%w: the next step asks for no prediction", kerr.InvalidRequest)
	ErrUnknownChoice = fmt.Errorf("%w: no such choice", kerr.InvalidRequest)
	ErrAtEnd         = fmt.Errorf("%w: the lesson is finished", kerr.InvalidRequest)
	ErrAtStart       = fmt.Errorf("%w: already at the first step", kerr.InvalidRequest)
	ErrFailed        = fmt.Errorf("%w: the lesson run failed", kerr.UnknownServerError)
	ErrBadSpeed      = fmt.Errorf("%w: speed must be instant, fast, normal or slow", kerr.InvalidRequest)
)

// Options configures a Service.
type Options struct {
	// Labs hosts the runs' clusters (required).
	Labs *labs.Labs
	// Speed is a new run's speed when its starter names none (default fast).
	Speed Speed
	// MessageEvents has each run's cluster publish its messages (fetches,
	// produces, acks, heartbeats…) as events, so a lesson's stage shows
	// them in flight (cluster.Options.MessageEvents); off, the run's events
	// are only the state changes its checks read.
	MessageEvents bool
	Logger        *slog.Logger
}

// Service starts lesson runs, each on a fresh cluster, and finds them again.
type Service struct {
	opts Options
	mu   sync.Mutex // guards runs
	runs map[string]*Run
}

// NewService returns a Service with no runs.
func NewService(opts Options) (*Service, error) {
	if opts.Labs == nil {
		return nil, errors.New("lessons: Options.Labs is required")
	}
	if opts.Speed == "" {
		opts.Speed = SpeedFast
	}
	if _, ok := opts.Speed.Pause(); !ok {
		return nil, ErrBadSpeed
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Service{opts: opts, runs: map[string]*Run{}}, nil
}

// Run is one learner's pass through a lesson on its own cluster.
type Run struct {
	ID     string
	Lesson *Lesson
	// Owner is whose run it is (a learner's identity, a class seat's);
	// labs.Open decides by it which run makes room for a new one.
	Owner string

	svc    *Service
	lab    *labs.Lab
	ctx    context.Context
	cancel context.CancelFunc

	order [][]int // per step, the order its choices are shown in

	mu      sync.Mutex // guards everything below; held while a step runs
	env     *Env
	speed   Speed
	base    events.Snapshot // the lanes after Setup
	evs     []events.Event  // every event since base.Seq, in Seq order
	steps   []stepRecord
	cursor  int // steps shown: the lanes are those after steps[cursor-1]
	failed  string
	closed  bool
	cacheAt uint64
	cache   *events.Snapshot
}

// stepRecord is one executed step: the bus Seq around it, what it
// reported and the learner's prediction with the choices that held.
type stepRecord struct {
	before, after uint64
	out           Outcome
	choice        string
	correct       []string
	err           string
}

// Start opens a fresh cluster for owner's run of the lesson, runs its
// Setup and returns the run, ready for its first step. speed "" is the
// Service's default. A full lab first ends one of owner's runs, or another
// learner's idle one (labs.Open); else it is a *labs.FullError.
func (s *Service) Start(owner, lessonID string, speed Speed) (*Run, error) {
	l := ByID(lessonID)
	if l == nil {
		return nil, fmt.Errorf("%w: %q", ErrUnknownLesson, lessonID)
	}
	if speed == "" {
		speed = s.opts.Speed
	}
	if _, ok := speed.Pause(); !ok {
		return nil, ErrBadSpeed
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Run{Lesson: l, Owner: owner, svc: s, ctx: ctx, cancel: cancel, speed: speed}
	// Each run shows the choices in its own order, so that the right one
	// is not always in the same place.
	for _, st := range l.Steps {
		var order []int
		if st.Predict != nil {
			order = rand.Perm(len(st.Predict.Choices))
		}
		r.order = append(r.order, order)
	}
	// The HW checkpoint is written only when a step says so, so that the
	// KIP-101 timings are exact.
	bcfg := broker.Config{HighWatermarkCheckpointInterval: time.Hour}
	lab, err := s.opts.Labs.Open(owner, cluster.Options{Brokers: l.Brokers, Broker: bcfg, Logger: s.opts.Logger, FencingRule: l.Fencing,
		MessageEvents: s.opts.MessageEvents}, r.onClose)
	if err != nil {
		cancel()
		return nil, err
	}
	r.ID, r.lab = lab.ID, lab
	c := lab.Cluster()
	r.env = newEnv(ctx, c, r.pause)
	r.env.start = c.Bus().LastSeq()
	if l.Setup != nil {
		if err := l.Setup(r.env); err != nil {
			s.opts.Labs.Remove(lab.ID)
			return nil, fmt.Errorf("lesson %s setup: %w", l.ID, err)
		}
	}
	r.base = c.Snapshot()
	r.env.out = Outcome{}
	s.mu.Lock()
	s.runs[r.ID] = r
	s.mu.Unlock()
	lab.Release() // set up: from now on it may make room when left idle
	return r, nil
}

// onClose runs when the lab closes (Stop, idle sweep, shutdown): pending
// produces and pacing end, and the run is forgotten.
func (r *Run) onClose() {
	r.cancel()
	if r.svc != nil {
		r.svc.mu.Lock()
		delete(r.svc.runs, r.ID)
		r.svc.mu.Unlock()
	}
}

// Get returns a run and marks it used (postponing its idle cleanup).
func (s *Service) Get(id string) (*Run, error) {
	s.mu.Lock()
	r := s.runs[id]
	s.mu.Unlock()
	if r == nil {
		return nil, ErrUnknownRun
	}
	if _, ok := s.opts.Labs.Get(r.ID); !ok {
		return nil, ErrUnknownRun
	}
	return r, nil
}

// Stop ends a run and removes its cluster and directory.
func (s *Service) Stop(id string) error {
	r, err := s.Get(id)
	if err != nil {
		return err
	}
	r.cancel()
	err = s.opts.Labs.Remove(r.ID)
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.env.wg.Wait()
	return err
}

// Hold marks the run's cluster in use until release is called: a page
// showing it live. A held run is never ended to make room for another.
func (r *Run) Hold() (release func()) {
	r.lab.Hold()
	var once sync.Once
	return func() { once.Do(r.lab.Release) }
}

// Finished reports whether every step of the run ran, or one failed:
// nothing is left to run.
func (r *Run) Finished() bool { return r.lab.Finished() }

// OpenRun is one of a learner's open runs as /lessons lists it.
type OpenRun struct {
	RunHeader
	Finished bool `json:"finished"` // every step ran, or one failed
	// LastUsed is when the run was last used, IdleSeconds how long ago:
	// now and 0 while a page shows it.
	LastUsed    time.Time `json:"last_used"`
	IdleSeconds int       `json:"idle_seconds"`
}

// Open returns owner's open runs, the one used last first; an empty list
// for owner "". Listing them does not count as using them.
func (s *Service) Open(owner string) []OpenRun {
	if owner == "" {
		return []OpenRun{}
	}
	s.mu.Lock()
	var mine []*Run
	for _, r := range s.runs {
		if r.Owner == owner {
			mine = append(mine, r)
		}
	}
	s.mu.Unlock()
	out := make([]OpenRun, 0, len(mine))
	for _, r := range mine {
		if r.lab.Closed() {
			continue
		}
		r.mu.Lock()
		o := OpenRun{RunHeader: r.header(), Finished: r.Finished()}
		r.mu.Unlock()
		idle := r.lab.Idle()
		o.LastUsed, o.IdleSeconds = r.lab.LastUsed(), int(idle/time.Second)
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b OpenRun) int {
		if c := b.LastUsed.Compare(a.LastUsed); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

// Runs returns how many runs are open.
func (s *Service) Runs() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.runs)
}

func (r *Run) pause() time.Duration {
	// Read without r.mu: a step holds it while it runs, and a speed change
	// during a step should take effect at once.
	r.svc.mu.Lock()
	sp := r.speed
	r.svc.mu.Unlock()
	d, _ := sp.Pause()
	return d
}

// SetSpeed changes how fast the run's sub-actions are animated.
func (r *Run) SetSpeed(sp Speed) error {
	if _, ok := sp.Pause(); !ok {
		return ErrBadSpeed
	}
	r.svc.mu.Lock()
	r.speed = sp
	r.svc.mu.Unlock()
	return nil
}

// Speed returns the run's speed.
func (r *Run) Speed() Speed {
	r.svc.mu.Lock()
	defer r.svc.mu.Unlock()
	return r.speed
}

// Cluster returns the run's cluster.
func (r *Run) Cluster() *cluster.Cluster { return r.lab.Cluster() }

// Next moves forward one step: through the recorded states after a Back,
// else by running the next step on the cluster (ErrPredictFirst when it
// asks for a prediction: use Predict).
func (r *Run) Next() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.usable(); err != nil {
		return err
	}
	if r.cursor < len(r.steps) {
		r.cursor++
		return nil
	}
	i := len(r.steps)
	if i >= len(r.Lesson.Steps) {
		return ErrAtEnd
	}
	if r.Lesson.Steps[i].Predict != nil {
		return ErrPredictFirst
	}
	return r.runStep(i, "")
}

// Predict records the learner's choice for the next step and runs it.
func (r *Run) Predict(choice string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.usable(); err != nil {
		return err
	}
	i := len(r.steps)
	if r.cursor < i || i >= len(r.Lesson.Steps) || r.Lesson.Steps[i].Predict == nil {
		return ErrNoPrediction
	}
	ok := false
	for _, c := range r.Lesson.Steps[i].Predict.Choices {
		ok = ok || c.ID == choice
	}
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownChoice, choice)
	}
	return r.runStep(i, choice)
}

// Back returns the lanes to the state before the last shown step.
func (r *Run) Back() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrUnknownRun
	}
	if r.cursor == 0 {
		return ErrAtStart
	}
	r.cursor--
	return nil
}

// Replay goes back to the lanes before the first step; Next then moves
// through the recorded states again.
func (r *Run) Replay() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrUnknownRun
	}
	r.cursor = 0
	return nil
}

func (r *Run) usable() error {
	switch {
	case r.closed || r.ctx.Err() != nil:
		return ErrUnknownRun
	case r.failed != "":
		return fmt.Errorf("%w: %s", ErrFailed, r.failed)
	}
	return nil
}

// runStep runs step i on the cluster. Callers hold r.mu.
func (r *Run) runStep(i int, choice string) error {
	// A slow step is the run in use however long it takes.
	r.lab.Hold()
	defer r.lab.Release()
	st := r.Lesson.Steps[i]
	c := r.lab.Cluster()
	r.record()
	rec := stepRecord{before: c.Bus().LastSeq(), choice: choice}
	r.env.out = Outcome{}
	err := st.Run(r.env)
	rec.out = r.env.out
	if err == nil && st.Predict != nil {
		for _, ch := range st.Predict.Choices {
			if ch.Holds(r.env) {
				rec.correct = append(rec.correct, ch.ID)
			}
		}
	}
	rec.after = c.Bus().LastSeq()
	r.record()
	if err != nil {
		rec.err = err.Error()
		r.failed = fmt.Sprintf("step %d: %v", i+1, err)
		r.svc.opts.Logger.Error("lessons: a step failed", "lesson", r.Lesson.ID, "run", r.ID, "step", i+1, "err", err)
	}
	r.steps = append(r.steps, rec)
	r.cursor = len(r.steps)
	if err != nil || len(r.steps) == len(r.Lesson.Steps) {
		// Nothing is left to run: the learner's next start ends it.
		r.lab.Finish()
	}
	if err != nil {
		return fmt.Errorf("%w: %s", ErrFailed, r.failed)
	}
	return nil
}

// record copies the events published since the last call into the run's
// own history (the bus keeps a bounded window).
func (r *Run) record() {
	bus := r.lab.Cluster().Bus()
	last := r.base.Seq
	if n := len(r.evs); n > 0 {
		last = r.evs[n-1].Seq
	}
	for {
		evs, _ := bus.Since(last, 0)
		if len(evs) == 0 {
			return
		}
		r.evs = append(r.evs, evs...)
		last = evs[len(evs)-1].Seq
	}
}

// snapshotAt rebuilds the lanes as they were at seq by replaying the run's
// events from its start. Callers hold r.mu.
func (r *Run) snapshotAt(seq uint64) events.Snapshot {
	if r.cache != nil && r.cacheAt == seq {
		return r.cache.Clone()
	}
	s := r.base.Clone()
	for _, e := range r.evs {
		if e.Seq > seq {
			break
		}
		s.Apply(e)
	}
	r.cache, r.cacheAt = &s, seq
	return s.Clone()
}

// boundary is the Seq the lanes show at the cursor. Callers hold r.mu.
func (r *Run) boundary() uint64 {
	if r.cursor == 0 {
		return r.base.Seq
	}
	return r.steps[r.cursor-1].after
}

// Snapshot returns the lanes at the cursor: rebuilt from the recorded
// events after a Back, the cluster's live state at the newest step.
func (r *Run) Snapshot() events.Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cursor == len(r.steps) {
		return r.lab.Cluster().Snapshot()
	}
	return r.snapshotAt(r.boundary())
}

// Recent returns up to n of the newest events at the cursor, oldest first:
// what the lesson page's event list opens with (the setup's, from the bus,
// before the first step; after a Back, those up to the shown step).
func (r *Run) Recent(n int) []events.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	upto := r.boundary()
	if r.cursor == len(r.steps) && !r.closed {
		r.record() // live: anything the cluster published since the last step
		upto = r.lab.Cluster().Bus().LastSeq()
	}
	var out []events.Event
	if len(r.evs) == 0 || r.evs[0].Seq > upto-min(upto, uint64(n)) {
		// The setup's events are only in the bus's bounded window.
		setup, _ := r.lab.Cluster().Bus().Since(upto-min(upto, uint64(n)), n)
		for _, e := range setup {
			if e.Seq <= r.base.Seq {
				out = append(out, e)
			}
		}
	}
	for _, e := range r.evs {
		if e.Seq <= upto {
			out = append(out, e)
		}
	}
	return out[max(0, len(out)-n):]
}

// StepReplay returns what the lesson page's stage plays back: the lanes
// before the step at the cursor's left (the one whose answer the page
// shows) and the events from then on, oldest first, up to the cursor's
// boundary, or, live, up to now. Before the first step it is the
// snapshot at the cursor and no events.
func (r *Run) StepReplay() (events.Snapshot, []events.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cursor == 0 || r.closed {
		if r.cursor == len(r.steps) && !r.closed {
			return r.lab.Cluster().Snapshot(), nil
		}
		return r.snapshotAt(r.boundary()), nil
	}
	from, upto := r.steps[r.cursor-1].before, r.boundary()
	if r.cursor == len(r.steps) {
		r.record() // live: anything the cluster published since the step
		upto = ^uint64(0)
	}
	var evs []events.Event
	for _, e := range r.evs {
		if e.Seq > from && e.Seq <= upto {
			evs = append(evs, e)
		}
	}
	return r.snapshotAt(from), evs
}

// Bus returns the bus of the run's cluster.
func (r *Run) Bus() *events.Bus { return r.lab.Cluster().Bus() }

// RunHeader says which run it is and how far it went: what RunState and
// OpenRun share.
type RunHeader struct {
	ID     string `json:"id"`
	Lesson string `json:"lesson"`
	Title  Text   `json:"title"`
	// Cursor is how many steps are shown; the lanes are the state after
	// them. Executed is how many steps ran on the cluster (Back lowers
	// Cursor only).
	Cursor   int `json:"cursor"`
	Executed int `json:"executed"`
	Total    int `json:"total"`
}

// header is the run's RunHeader. Callers hold r.mu.
func (r *Run) header() RunHeader {
	return RunHeader{ID: r.ID, Lesson: r.Lesson.ID, Title: r.Lesson.Title, Cursor: r.cursor, Executed: len(r.steps), Total: len(r.Lesson.Steps)}
}

// RunState is a run as the API and the pages show it.
type RunState struct {
	RunHeader
	Done  bool            `json:"done"`
	Live  bool            `json:"live"` // the lanes are the cluster's current state
	Speed Speed           `json:"speed"`
	Error string          `json:"error,omitempty"`
	Seq   uint64          `json:"seq"`
	Steps []StepState     `json:"steps"`
	Lanes events.Snapshot `json:"lanes"`
}

// StepState is one step of a run.
type StepState struct {
	Index   int    `json:"index"`
	Title   Text   `json:"title"`
	Explain Text   `json:"explain"`
	Shown   bool   `json:"shown"`   // ran, and the cursor is past it
	Current bool   `json:"current"` // the next step to show
	Ran     bool   `json:"ran"`
	Error   string `json:"error,omitempty"`
	// Prediction is the step's question; Chosen, Correct and Right are set
	// once it ran (Right is whether the choice held).
	Prediction *PredictionState `json:"prediction,omitempty"`
	Outcome    *Outcome         `json:"outcome,omitempty"`
	// Passed is true when every check of the step passed.
	Passed bool `json:"passed"`
}

// PredictionState is a step's question with its verdict.
type PredictionState struct {
	Question Text          `json:"question"`
	Choices  []ChoiceState `json:"choices"`
	Chosen   string        `json:"chosen,omitempty"`
	Correct  []string      `json:"correct,omitempty"`
	Right    *bool         `json:"right,omitempty"`
}

// ChoiceState is one answer as shown; Why (why it is right or wrong) is
// set once the step ran.
type ChoiceState struct {
	ID   string `json:"id"`
	Text Text   `json:"text"`
	Why  *Text  `json:"why,omitempty"`
}

// State returns the run as the API shows it.
func (r *Run) State() RunState {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := RunState{RunHeader: r.header(), Error: r.failed, Live: r.cursor == len(r.steps)}
	s.Done = r.cursor == len(r.Lesson.Steps)
	r.svc.mu.Lock()
	s.Speed = r.speed
	r.svc.mu.Unlock()
	if s.Live && !r.closed {
		s.Lanes = r.lab.Cluster().Snapshot()
	} else {
		s.Lanes = r.snapshotAt(r.boundary())
	}
	s.Seq = s.Lanes.Seq
	for i, st := range r.Lesson.Steps {
		ss := StepState{Index: i, Title: st.Title, Explain: st.Explain, Shown: i < r.cursor, Current: i == r.cursor, Ran: i < len(r.steps)}
		if st.Predict != nil {
			p := &PredictionState{Question: st.Predict.Question}
			for _, k := range r.order[i] {
				c := st.Predict.Choices[k]
				cs := ChoiceState{ID: c.ID, Text: c.Text}
				if ss.Shown {
					cs.Why = &c.Why
				}
				p.Choices = append(p.Choices, cs)
			}
			if ss.Shown {
				rec := r.steps[i]
				p.Chosen, p.Correct = rec.choice, rec.correct
				right := slices.Contains(rec.correct, rec.choice)
				p.Right = &right
			}
			ss.Prediction = p
		}
		if ss.Shown {
			rec := r.steps[i]
			out := rec.out
			// Empty lists, not null: the API says each is an array.
			out.Says, out.Pointers, out.Checks = nonNil(out.Says), nonNil(out.Pointers), nonNil(out.Checks)
			ss.Outcome, ss.Error = &out, rec.err
			ss.Passed = rec.err == ""
			for _, c := range out.Checks {
				ss.Passed = ss.Passed && c.Pass
			}
		}
		s.Steps = append(s.Steps, ss)
	}
	return s
}

// Close ends every run (their clusters close with the Labs).
func (s *Service) Close() {
	s.mu.Lock()
	ids := make([]string, 0, len(s.runs))
	for id := range s.runs {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	for _, id := range ids {
		s.Stop(id)
	}
}

// nonNil returns v, or an empty slice for nil (JSON [] rather than null).
func nonNil[T any](v []T) []T {
	if v == nil {
		return []T{}
	}
	return v
}
