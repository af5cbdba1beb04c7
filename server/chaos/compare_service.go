package chaos

import (
	"context"
	"slices"

	"tidemark/internal/runstore"
	"tidemark/server/controller"
)

// CompareState is a comparison run as the API shows it: its progress, each
// protocol's live counts after every action (for the charts) and, once it
// finished, Result.
type CompareState struct {
	ID        string                           `json:"id"`
	Seed      uint64                           `json:"seed"`
	Actions   int                              `json:"actions"`
	Protocols []controller.ReplicationProtocol `json:"protocols"`
	Progress  Progress                         `json:"progress"`
	Series    []ProtocolSeries                 `json:"series"`
	Error     string                           `json:"error,omitempty"`
	Result    *Comparison                      `json:"result,omitempty"`
}

// ProtocolSeries is one protocol's samples so far.
type ProtocolSeries struct {
	Protocol controller.ReplicationProtocol `json:"protocol"`
	Samples  []Sample                       `json:"samples"`
}

// Done reports whether the comparison finished, well or not.
func (st *CompareState) Done() bool {
	return st.Progress.Phase == PhaseDone || st.Progress.Phase == PhaseFailed
}

// Finished reports whether the comparison has a result; Phase is where it
// is.
func (st CompareState) Finished() bool { return st.Result != nil }
func (st CompareState) Phase() Phase   { return st.Progress.Phase }

// StartCompare begins a comparison of protocols (nil: Protocols) on seed's
// schedule of n actions (0: DefaultActions) in the background, on its own
// lab cluster, owner's as Start's is. INVALID_REQUEST for a seed or count
// out of bounds or a bad protocol name; a full lab is
// THROTTLING_QUOTA_EXCEEDED (a *labs.FullError).
func (s *Service) StartCompare(owner string, seed uint64, n int, protocols []string) (CompareState, error) {
	actions, err := schedule(seed, n, nil)
	if err != nil {
		return CompareState{}, err
	}
	ps, err := ParseProtocols(protocols)
	if err != nil {
		return CompareState{}, err
	}
	st := &CompareState{ID: runstore.NewID(), Seed: seed, Actions: len(actions), Protocols: ps,
		Progress: Progress{Phase: PhaseStarting, Total: len(actions)}, Series: []ProtocolSeries{}}
	err = s.launch(owner, func() { s.compares.Add(st.ID, st, s.opts.MaxKept, (*CompareState).Done) }, func(ctx context.Context, o Options) {
		series := map[string][]Sample{}
		var final Progress
		o.Progress = func(p Progress) {
			s.mu.Lock()
			defer s.mu.Unlock()
			addSamples(series, p)
			next := make([]ProtocolSeries, 0, len(ps)) // a new slice: copies handed out share the old one
			for _, proto := range ps {
				if ss, ok := series[CompareTopicPrefix+string(proto)]; ok {
					next = append(next, ProtocolSeries{Protocol: proto, Samples: slices.Clone(ss)})
				}
			}
			st.Series = next
			if p.Phase != PhaseDone {
				st.Progress = p
			} else {
				final = p // the checker's counts: set with the result
			}
		}
		res, err := s.opts.Compare(ctx, seed, actions, ps, o)
		s.mu.Lock()
		defer s.mu.Unlock()
		if err != nil {
			st.Progress.Phase, st.Error = PhaseFailed, err.Error()
			return
		}
		s.keepRecording(st.ID, res.Recording)
		res.Recording = nil // the Service keeps it, for a while
		st.Result, st.Progress = res, final
	})
	if err != nil {
		return CompareState{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return *st, nil
}

// GetCompare returns a comparison's state (a copy; its Series and Result
// are shared and never changed once set); ErrUnknownRun if there is none.
func (s *Service) GetCompare(id string) (CompareState, error) { return known(s, &s.compares, id) }

// ListCompares returns every remembered comparison, newest first.
func (s *Service) ListCompares() []CompareState { return copies(s, &s.compares) }
