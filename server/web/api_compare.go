package web

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"
	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/i18n"
	"tidemark/server/chaos"
	"tidemark/views"
)

// The comparison routes: POST /api/v1/compare plays one seeded chaos
// schedule on a cluster of its own with one topic per replication protocol,
// GET /api/v1/compare/{id} shows its progress, live samples and (once done)
// every protocol's figures, GET /api/v1/compare/{id}/export the finished
// comparison as a JSON download. The page /compare starts comparisons and
// shows them. They run on the chaos service (Options.Chaos), so class mode
// keeps them to the seat as it does chaos runs; without it they answer 501.

func (s *Server) compareRoutes(e *echo.Echo) { compareKind.routes(s, e) }

// compareKind is the comparisons.
var compareKind = runKind[chaos.CompareState]{name: "compare", get: (*chaos.Service).GetCompare, start: (*Server).startCompare,
	startForm: func(c echo.Context, svc *chaos.Service, owner string, seed uint64, n int) (string, error) {
		form, err := c.FormParams()
		if err != nil {
			return "", KafkaError(http.StatusBadRequest, kerr.InvalidRequest, "unreadable form")
		}
		st, err := svc.StartCompare(owner, seed, n, form["protocol"])
		return st.ID, err
	},
	export: func(st chaos.CompareState) ([]byte, error) { return json.MarshalIndent(st.Result, "", "  ") },
	list:   comparePage, page: compareRunPage}

// CompareRequest is the body of POST /api/v1/compare: the seed, how many
// actions to generate from it (default 100) and the protocols to compare
// (default every one the lab has, chaos.Protocols: isr, quorum and
// pipeline).
type CompareRequest struct {
	Seed      uint64   `json:"seed"`
	Actions   int      `json:"actions"`
	Protocols []string `json:"protocols,omitempty"`
}

func (s *Server) startCompare(c echo.Context) error {
	if _, err := s.chaosService(); err != nil {
		return err
	}
	var req CompareRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if req.Actions == 0 {
		req.Actions = chaos.DefaultActions
	}
	return startRun(s, c, func(svc *chaos.Service, owner string) (chaos.CompareState, error) {
		return svc.StartCompare(owner, req.Seed, req.Actions, req.Protocols)
	})
}

// --- pages ---

func comparePage(p views.Page, svc *chaos.Service) templ.Component {
	v := views.CompareListView{Actions: chaos.DefaultActions, MaxActions: chaos.MaxActions}
	for _, pr := range chaos.Protocols {
		v.Protocols = append(v.Protocols, string(pr))
	}
	for _, st := range svc.ListCompares() {
		v.Runs = append(v.Runs, compareRunView(st))
	}
	return views.CompareList(p, v)
}

func compareRunPage(p views.Page, lang i18n.Lang, st chaos.CompareState, pb views.RunPlayback) templ.Component {
	v := compareRunView(st)
	v.RunPlayback = pb
	if st.Result != nil {
		v.Conclusion = compareConclusion(lang, v.Columns)
	}
	return views.CompareRun(p, v)
}

// compareConclusion says a finished comparison's outcome in one sentence:
// for each protocol that ran, the acknowledged writes it lost and the
// share of writes it accepted.
func compareConclusion(lang i18n.Lang, cols []views.CompareColumn) string {
	var parts []string
	for _, c := range cols {
		if c.SkippedCode != "" || !c.Finished {
			continue
		}
		pct := 0
		if c.Attempted > 0 {
			pct = c.Accepted * 100 / c.Attempted
		}
		parts = append(parts, i18n.T(lang, "compare.conclusion.part", c.Protocol, c.Lost, pct, c.Accepted, c.Attempted))
	}
	if len(parts) == 0 {
		return ""
	}
	return i18n.T(lang, "compare.conclusion", strings.Join(parts, i18n.T(lang, "compare.conclusion.sep")))
}

// compareRunView is a comparison as its page shows it: the live counts
// while it runs, every figure once it is done.
func compareRunView(st chaos.CompareState) views.CompareRunView {
	v := views.CompareRunView{ID: st.ID, Seed: st.Seed, Actions: st.Actions, Phase: string(st.Progress.Phase),
		Action: st.Progress.Action, Total: st.Progress.Total, Done: st.Done(), Error: st.Error}
	live := map[string]chaos.Counts{}
	for _, pc := range st.Progress.Protocols {
		live[string(pc.Protocol)] = pc.Counts
	}
	results := map[string]chaos.ProtocolResult{}
	if st.Result != nil {
		for _, pr := range st.Result.Protocols {
			results[string(pr.Protocol)] = pr
		}
	}
	for _, proto := range st.Protocols {
		name := string(proto)
		col := views.CompareColumn{Protocol: name}
		_, col.Formula = chaos.ReplicasNeeded(proto, 1)
		col.ReplicasF1, _ = chaos.ReplicasNeeded(proto, 1)
		col.ReplicasF2, _ = chaos.ReplicasNeeded(proto, 2)
		n := live[name]
		col.Attempted, col.Accepted, col.Lost = n.Writes, n.Acked, n.Lost
		if pr, ok := results[name]; ok {
			col.Finished, col.SkippedCode = true, pr.SkippedCode
			col.Attempted, col.Accepted, col.Lost, col.UnsyncedLost = pr.Attempted, pr.Accepted, pr.Lost, pr.Counts.UnsyncedLost
			col.LatencyP50, col.LatencyP99 = pr.LatencyMs.P50, pr.LatencyMs.P99
			col.Messages, col.Committed, col.PerRecord = pr.MessagesTotal, pr.Committed, pr.MessagesPerRecord
		}
		col.Availability = -1
		if col.Attempted > 0 {
			col.Availability = 100 * float64(col.Accepted) / float64(col.Attempted)
		}
		v.Columns = append(v.Columns, col)
	}
	for _, ps := range st.Series {
		ch := views.CompareChart{Protocol: string(ps.Protocol)}
		for _, smp := range ps.Samples {
			ch.Points = append(ch.Points, views.ComparePoint{Writes: smp.Writes, Acked: smp.Acked, Lost: smp.Lost})
		}
		v.Charts = append(v.Charts, ch)
	}
	return v
}
