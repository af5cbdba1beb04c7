package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"
	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/events"
	"tidemark/i18n"
	"tidemark/internal/clip"
	"tidemark/server/chaos"
	"tidemark/server/labs"
	"tidemark/views"
)

// The chaos routes: POST /api/v1/chaos starts a durability-checker run on
// its own lab cluster, GET /api/v1/chaos/{id} shows its progress and live
// counts, GET /api/v1/chaos/{id}/export the whole run as JSON (it replays
// exactly). The page /chaos starts runs and shows them. Without
// Options.Chaos every chaos route answers 501 NOT_IMPLEMENTED.

func (s *Server) chaosRoutes(e *echo.Echo) { chaosKind.routes(s, e) }

// chaosKind is the chaos runs.
var chaosKind = runKind[chaos.RunState]{name: "chaos", get: (*chaos.Service).Get, start: (*Server).startChaos,
	startForm: func(c echo.Context, svc *chaos.Service, owner string, seed uint64, n int) (string, error) {
		st, err := svc.Start(owner, seed, chaos.Config(c.FormValue("config")), n, nil)
		return st.ID, err
	},
	export: func(st chaos.RunState) ([]byte, error) { return st.Result.Export() },
	list:   chaosPage, page: chaosRunPage}

// ChaosRequest is the body of POST /api/v1/chaos. Actions is either how
// many actions to generate from the seed (default 100) or a whole schedule
// (an exported run's "actions"), played as it is.
type ChaosRequest struct {
	Seed    uint64          `json:"seed"`
	Config  string          `json:"config"`
	Actions json.RawMessage `json:"actions,omitempty"`
}

func (s *Server) chaosService() (*chaos.Service, error) {
	if s.opts.Chaos == nil {
		return nil, notImplemented("run chaos schedules")
	}
	return s.opts.Chaos, nil
}

// chaosError maps a chaos or labs error to the API's: unknown runs 404, a
// full lab 429 THROTTLING_QUOTA_EXCEEDED, bad input 400 with its Kafka code.
func chaosError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, chaos.ErrUnknownRun):
		return &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: err.Error(), Key: "chaos.run-gone"}
	case errors.Is(err, labs.ErrFull):
		return labFull(err)
	}
	return LabError(err)
}

func (s *Server) startChaos(c echo.Context) error {
	if _, err := s.chaosService(); err != nil {
		return err
	}
	var req ChaosRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	cfg := chaos.Strict
	if req.Config != "" {
		var err error
		if cfg, err = chaos.ParseConfig(req.Config); err != nil {
			return chaosError(err)
		}
	}
	var n int
	var actions []chaos.Action
	if raw := strings.TrimSpace(string(req.Actions)); raw != "" && raw != "null" {
		var err error
		if raw[0] == '[' {
			err = json.Unmarshal(req.Actions, &actions)
		} else {
			err = json.Unmarshal(req.Actions, &n)
		}
		if err != nil || (actions == nil && n == 0) {
			return KafkaError(http.StatusBadRequest, kerr.InvalidRequest,
				fmt.Sprintf("actions must be a count (1..%d) or a list of actions", chaos.MaxActions)).
				withKey("chaos.refused.actions-type", strconv.Itoa(chaos.MaxActions))
		}
	}
	return startRun(s, c, func(svc *chaos.Service, owner string) (chaos.RunState, error) {
		return svc.Start(owner, req.Seed, cfg, n, actions)
	})
}

// --- pages ---

func chaosPage(p views.Page, svc *chaos.Service) templ.Component {
	v := views.ChaosListView{Actions: chaos.DefaultActions, MaxActions: chaos.MaxActions}
	for _, cfg := range chaos.Configs() {
		v.Configs = append(v.Configs, string(cfg))
	}
	for _, st := range svc.List() {
		v.Runs = append(v.Runs, chaosRunView(st))
	}
	return views.ChaosList(p, v)
}

// seedFormError refuses a form's seed that is not a whole number.
func seedFormError(seed string) *Error {
	q := strconv.Quote(clip.Bytes(seed, 30))
	return KafkaError(http.StatusBadRequest, kerr.InvalidRequest, "seed "+q+" is not a whole number from 0 to "+strconv.FormatUint(chaos.MaxSeed, 10)).
		withKey("chaos.refused.seed-form", q, strconv.FormatUint(chaos.MaxSeed, 10))
}

func chaosRunPage(p views.Page, lang i18n.Lang, st chaos.RunState, pb views.RunPlayback) templ.Component {
	v := chaosRunView(st)
	v.RunPlayback = pb
	if st.Result != nil {
		v.Conclusion = chaosConclusion(lang, string(st.Config), st.Result.Counts)
	}
	return views.ChaosRun(p, v)
}

// playback is run or comparison id's recording as its page plays it
// (none: not finished, or older than the recordings kept).
func (s *Server) playback(id string) views.RunPlayback {
	rec, ok := s.opts.Chaos.Recording(id)
	if !ok || len(rec.Events) == 0 {
		return views.RunPlayback{}
	}
	return views.RunPlayback{Recorded: true, Stage: rec.Start, PlayTo: rec.Events[len(rec.Events)-1].Seq,
		Truncated: rec.Truncated, Events: len(rec.Events)}
}

// chaosConclusion says a finished run's outcome in one sentence: whether
// any acknowledged write was lost, and how many writes were acknowledged.
func chaosConclusion(lang i18n.Lang, config string, n chaos.Counts) string {
	pct := 0
	if n.Writes > 0 {
		pct = n.Acked * 100 / n.Writes
	}
	var out string
	if n.Lost == 0 {
		out = i18n.T(lang, "chaos.conclusion.safe", config, n.Acked, n.Writes, pct)
	} else {
		out = i18n.T(lang, "chaos.conclusion.lost", config, n.Lost, n.Acked, n.Writes, pct)
	}
	if n.UnsyncedLost > 0 {
		out += i18n.T(lang, "chaos.conclusion.unsynced", n.UnsyncedLost)
	}
	return out
}

// recordedLab is a finished run's recording as a lab the stage streams: it
// opens on the cluster as the schedule started and plays every recorded
// event (stepReplayer); nothing is published after them.
type recordedLab struct {
	rec *chaos.Recording
	bus *events.Bus
}

func (l recordedLab) Snapshot() events.Snapshot { return l.rec.Start.Clone() }
func (l recordedLab) Bus() *events.Bus          { return l.bus }
func (l recordedLab) StepReplay() (events.Snapshot, []events.Event) {
	return l.rec.Start.Clone(), l.rec.Events
}

// recordedRun is the lab /ws?chaos=<id> (or ?compare=<id>) streams: the
// run's recording; 404 NOT_FOUND when it has none (unknown, unfinished, or
// older than the recordings kept).
func (s *Server) recordedRun(id string) (Lab, error) {
	svc, err := s.chaosService()
	if err != nil {
		return nil, err
	}
	rec, ok := svc.Recording(id)
	if !ok {
		return nil, &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: "no recording of run " + strconv.Quote(clip.Bytes(id, 40)), Key: "chaos.no-recording"}
	}
	return recordedLab{rec: rec, bus: events.NewBus(events.BusOptions{History: 1, QueueLen: 1})}, nil
}

// chaosRunView is a run as its page shows it.
func chaosRunView(st chaos.RunState) views.ChaosRunView {
	n := st.Progress.Counts
	v := views.ChaosRunView{ID: st.ID, Seed: st.Seed, Config: string(st.Config), Phase: string(st.Progress.Phase),
		Action: st.Progress.Action, Total: st.Progress.Total, Done: st.Done(), Error: st.Error,
		Counts: []views.ChaosCount{
			{Key: "writes", N: n.Writes}, {Key: "acked", N: n.Acked},
			{Key: "lost", N: n.Lost, Bad: true}, {Key: "unsynced_lost", N: n.UnsyncedLost},
			{Key: "unreadable", N: n.Unreadable, Bad: true}, {Key: "duplicated", N: n.Duplicated, Bad: true},
			{Key: "wrong_offset", N: n.WrongOffset, Bad: true}, {Key: "replicas_differ", N: n.ReplicasDiffer, Bad: true},
			{Key: "hw_backwards", N: n.HWBackwards, Bad: true}, {Key: "unsynced_hw_backwards", N: n.UnsyncedHWBackwards},
			{Key: "leader_outside_isr", N: n.LeaderOutsideISR, Bad: true}, {Key: "events_out_of_order", N: n.EventsOutOfOrder, Bad: true},
			{Key: "unsettled", N: n.Unsettled, Bad: true},
		}}
	for _, l := range append(append([]chaos.Loss(nil), st.Lost...), st.UnsyncedLost...) {
		lv := views.ChaosLossView{Value: l.Write.Value, Partition: l.Write.Partition, Offset: l.Write.Offset, Unsynced: l.Unsynced, Elected: -1}
		if e := l.Election; e != nil {
			lv.Elected, lv.Epoch, lv.Unclean = e.Leader, e.LeaderEpoch, e.Unclean
		}
		for _, cp := range l.Copies {
			lv.Copies = append(lv.Copies, views.ChaosCopyView{Broker: cp.Broker, Removal: string(cp.Removal)})
		}
		v.Losses = append(v.Losses, lv)
	}
	return v
}
