package apiclient

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gorilla/websocket"
)

// ExperimentRequest is the body of POST /api/v1/experiments: a built-in
// study's name, or an experiment file's text (Name names it in errors);
// Seeds > 0 runs only the file's first seeds.
type ExperimentRequest struct {
	Study  string `json:"study,omitempty"`
	Name   string `json:"name,omitempty"`
	Source string `json:"source,omitempty"`
	Seeds  int    `json:"seeds,omitempty"`
}

// ExperimentProgress is where an experiment is: runs done of Total, and
// within the current run, actions played of Actions.
type ExperimentProgress struct {
	Done    int    `json:"done"`
	Total   int    `json:"total"`
	Current string `json:"current,omitempty"`
	Action  int    `json:"action"`
	Actions int    `json:"actions"`
}

// ExperimentRun is one finished run: its place in the matrix and its
// measurements by name (throughput, latency-p50, latency-p99, attempted,
// acked, availability, lost, duplicates, unavailable-ms, isr-shrinks,
// elections), or why it could not run.
type ExperimentRun struct {
	Index    int                `json:"index"`
	Topic    string             `json:"topic"`
	Faults   string             `json:"faults"`
	Workload string             `json:"workload"`
	Seed     uint64             `json:"seed"`
	Values   map[string]float64 `json:"values"`
	Error    string             `json:"error,omitempty"`
	WallMs   int64              `json:"wall_ms"`
	Actions  int                `json:"actions"`
}

// ExperimentSummary is one configuration's means over its seeds.
type ExperimentSummary struct {
	Topic    string             `json:"topic"`
	Faults   string             `json:"faults"`
	Workload string             `json:"workload"`
	Runs     int                `json:"runs"`
	Failed   int                `json:"failed"`
	Mean     map[string]float64 `json:"mean"`
}

// ExperimentCheck is one claim of the file and whether it held.
type ExperimentCheck struct {
	Line  int      `json:"line"`
	Check string   `json:"check"`
	Holds bool     `json:"holds"`
	Got   []string `json:"got"`
	Error string   `json:"error,omitempty"`
}

// ExperimentState is an experiment as the API shows it.
type ExperimentState struct {
	ID        string              `json:"id"`
	Name      string              `json:"name"`
	File      string              `json:"file"`
	Title     string              `json:"title"`
	Phase     string              `json:"phase"` // queued, running, done, failed
	Progress  ExperimentProgress  `json:"progress"`
	Runs      []ExperimentRun     `json:"runs"`
	Summary   []ExperimentSummary `json:"summary,omitempty"`
	Checks    []ExperimentCheck   `json:"checks,omitempty"`
	Findings  []string            `json:"findings,omitempty"`
	Files     []string            `json:"files,omitempty"`
	Error     string              `json:"error,omitempty"`
	Started   time.Time           `json:"started"`
	ElapsedMs int64               `json:"elapsed_ms,omitempty"`
}

// Done reports whether the experiment finished, well or not.
func (st ExperimentState) Done() bool { return st.Phase == "done" || st.Phase == "failed" }

// Study is a built-in study.
type Study struct {
	Name   string `json:"name"`
	File   string `json:"file"`
	Title  string `json:"title"`
	Runs   int    `json:"runs"`
	Source string `json:"source"`
}

// StartExperiment starts an experiment; it runs in the background.
func (c *Client) StartExperiment(ctx context.Context, req ExperimentRequest) (ExperimentState, error) {
	var out ExperimentState
	err := c.do(ctx, http.MethodPost, "/api/v1/experiments", req, &out)
	return out, err
}

// Experiment returns an experiment's state.
func (c *Client) Experiment(ctx context.Context, id string) (ExperimentState, error) {
	var out ExperimentState
	err := c.do(ctx, http.MethodGet, "/api/v1/experiments/"+url.PathEscape(id), nil, &out)
	return out, err
}

// Experiments lists the experiments the lab remembers, newest first.
func (c *Client) Experiments(ctx context.Context) ([]ExperimentState, error) {
	var out struct {
		Experiments []ExperimentState `json:"experiments"`
	}
	err := c.do(ctx, http.MethodGet, "/api/v1/experiments", nil, &out)
	return out.Experiments, err
}

// WaitExperiment polls an experiment every interval until it is done (or
// ctx ends), calling progress (if not nil) with each state seen.
func (c *Client) WaitExperiment(ctx context.Context, id string, interval time.Duration, progress func(ExperimentState)) (ExperimentState, error) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		st, err := c.Experiment(ctx, id)
		if err != nil {
			return st, err
		}
		if progress != nil {
			progress(st)
		}
		if st.Done() {
			return st, nil
		}
		select {
		case <-ctx.Done():
			return st, ctx.Err()
		case <-t.C:
		}
	}
}

// FollowExperiment follows an experiment's progress over its websocket
// (GET /api/v1/experiments/{id}/ws): progress gets its state at once and at
// each change, until it is done; the last state is returned.
func (c *Client) FollowExperiment(ctx context.Context, id string, progress func(ExperimentState)) (ExperimentState, error) {
	var last ExperimentState
	u := "ws" + strings.TrimPrefix(c.base, "http") + "/api/v1/experiments/" + url.PathEscape(id) + "/ws"
	conn, resp, err := websocket.DefaultDialer.DialContext(ctx, u, nil)
	if err != nil {
		if resp != nil {
			return last, decodeError(resp)
		}
		return last, err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	for {
		var st ExperimentState
		if err := conn.ReadJSON(&st); err != nil {
			if websocket.IsCloseError(err, websocket.CloseNormalClosure) && last.Done() {
				return last, nil
			}
			if ctx.Err() != nil {
				return last, ctx.Err()
			}
			return last, errors.Join(errors.New("apiclient: the experiment's stream ended before it was done"), err)
		}
		last = st
		if progress != nil {
			progress(st)
		}
	}
}

// ExperimentFile downloads one of a finished experiment's files
// (results.csv, summary.csv, report.md, the plots' SVGs).
func (c *Client) ExperimentFile(ctx context.Context, id, name string) ([]byte, error) {
	return c.raw(ctx, http.MethodGet, "/api/v1/experiments/"+url.PathEscape(id)+"/files/"+url.PathEscape(name), nil)
}

// Studies lists the built-in studies with their files' text.
func (c *Client) Studies(ctx context.Context) ([]Study, error) {
	var out struct {
		Studies []Study `json:"studies"`
	}
	err := c.do(ctx, http.MethodGet, "/api/v1/studies", nil, &out)
	return out.Studies, err
}
