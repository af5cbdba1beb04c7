package server

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"tidemark/apiclient"
	"tidemark/server/chaos"
	"tidemark/server/cluster"
	"tidemark/server/experiment"
	"tidemark/server/web"
)

// tinyExperiment is a two-run experiment that finishes in seconds.
const tinyExperiment = `experiment tiny
title A leader crash under acks=1 and acks=all
duration 2s
seeds 1
topic isr min.insync.replicas=2
workload acks-1 rate=20 acks=1 producers=1
workload acks-all rate=20 acks=all producers=1
faults crash
  at 500ms do crash leader
  at 1500ms do restart all
plot throughput by workload
check lost workload=acks-all == 0
`

// TestExperimentsThroughTheAPI: an experiment file posted to
// /api/v1/experiments runs in the background; the typed client follows
// its progress by polling (and, for a second one, over its websocket),
// gets each run's measurements, the checks and
// the files (results.csv one row per run, summary.csv, the plot, report.md),
// and a run opens on the stage. A file the parser refuses is 400
// INVALID_REQUEST naming the line.
func TestExperimentsThroughTheAPI(t *testing.T) {
	cl, err := cluster.Open(cluster.Options{DataDir: t.TempDir(), Brokers: 3, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	svc := experiment.NewService(experiment.ServiceOptions{Logger: quietLogger()})
	t.Cleanup(svc.Close)
	srv := httptest.NewServer(testWeb(t, cl, web.Options{Experiments: svc}).Handler())
	t.Cleanup(srv.Close)
	api := apiclient.New(srv.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	_, err = api.StartExperiment(ctx, apiclient.ExperimentRequest{Name: "bad.experiment", Source: "experiment bad\nduration 1s\nworkload w acks=2\n"})
	var ae *apiclient.Error
	if !errors.As(err, &ae) || ae.Status != 400 || ae.Code != "INVALID_REQUEST" || !strings.Contains(ae.Message, "bad.experiment:3") {
		t.Fatalf("a bad file: %v", err)
	}
	studies, err := api.Studies(ctx)
	if err != nil || len(studies) != 4 {
		t.Fatalf("studies: %v %+v", err, studies)
	}

	st, err := api.StartExperiment(ctx, apiclient.ExperimentRequest{Name: "tiny.experiment", Source: tinyExperiment})
	if err != nil {
		t.Fatal(err)
	}
	if st.Progress.Total != 2 || st.Name != "tiny" {
		t.Fatalf("started: %+v", st)
	}
	seen := 0
	st, err = api.WaitExperiment(ctx, st.ID, 50*time.Millisecond, func(apiclient.ExperimentState) { seen++ })
	if err != nil || st.Phase != "done" {
		t.Fatalf("%v: %+v", err, st)
	}
	if len(st.Runs) != 2 || len(st.Checks) != 1 || !st.Checks[0].Holds {
		t.Fatalf("runs %+v checks %+v", st.Runs, st.Checks)
	}
	for _, r := range st.Runs {
		if r.Error != "" || r.Values["attempted"] == 0 || r.Values["elections"] == 0 {
			t.Fatalf("run %+v", r)
		}
	}
	want := []string{"plot-1-throughput-by-workload.svg", "report.md", "results.csv", "summary.csv"}
	if strings.Join(st.Files, " ") != strings.Join(want, " ") {
		t.Fatalf("files %v, want %v", st.Files, want)
	}
	b, err := api.ExperimentFile(ctx, st.ID, "results.csv")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(strings.NewReader(string(b))).ReadAll()
	if err != nil || len(rows) != 3 || rows[0][0] != "run" || rows[2][3] != "acks-all" {
		t.Fatalf("results.csv: %v\n%s", err, b)
	}
	rep, err := api.ExperimentFile(ctx, st.ID, "report.md")
	if err != nil || !strings.Contains(string(rep), "| isr | crash | acks-all |") || !strings.Contains(string(rep), "holds") {
		t.Fatalf("report.md: %v\n%s", err, rep)
	}
	// The findings and report.md in the request's language.
	zh := apiclient.New(srv.URL).WithLanguage("zh-Hans")
	zst, err := zh.Experiment(ctx, st.ID)
	if err != nil || len(zst.Findings) != 2 || !strings.HasPrefix(zst.Findings[0], "结论") || !strings.HasPrefix(st.Findings[0], "The claim") {
		t.Fatalf("findings in zh-Hans: %v %q (en %q)", err, zst.Findings, st.Findings)
	}
	if rep, err := zh.ExperimentFile(ctx, st.ID, "report.md"); err != nil || !strings.Contains(string(rep), "## 发现") {
		t.Fatalf("report.md in zh-Hans: %v\n%s", err, rep)
	}
	svg, err := api.ExperimentFile(ctx, st.ID, "plot-1-throughput-by-workload.svg")
	if err != nil || !strings.HasPrefix(string(svg), "<svg") {
		t.Fatalf("plot: %v %.80s", err, svg)
	}
	if _, err := api.ExperimentFile(ctx, st.ID, "../etc/passwd"); !errors.As(err, &ae) || ae.Status != 404 {
		t.Fatalf("a file it does not have: %v", err)
	}
	for _, path := range []string{"/experiments", "/experiments/" + st.ID, "/experiments/" + st.ID + "/runs/1"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, body)
		}
		if strings.HasSuffix(path, "/runs/1") && !strings.Contains(string(body), "/ws?experiment="+st.ID+"&amp;exp_run=1") {
			t.Fatalf("%s has no stage playing the run:\n%s", path, body)
		}
	}
	t.Logf("%d polls; %d ms", seen, st.ElapsedMs)

	// The same progress over the experiment's websocket: its state at once,
	// then at each change (never going back), until done and a normal close.
	followed, err := api.StartExperiment(ctx, apiclient.ExperimentRequest{Name: "tiny.experiment", Source: tinyExperiment})
	if err != nil {
		t.Fatal(err)
	}
	var states []apiclient.ExperimentState
	last, err := api.FollowExperiment(ctx, followed.ID, func(st apiclient.ExperimentState) { states = append(states, st) })
	if err != nil || last.Phase != "done" || len(last.Runs) != 2 {
		t.Fatalf("followed: %v: %+v", err, last)
	}
	if len(states) < 3 {
		t.Fatalf("%d states over the websocket, want the start, progress and the end", len(states))
	}
	for i := 1; i < len(states); i++ {
		if states[i].Progress.Done < states[i-1].Progress.Done || len(states[i].Runs) < len(states[i-1].Runs) {
			t.Fatalf("state %d went back: %+v after %+v", i, states[i].Progress, states[i-1].Progress)
		}
	}
	if _, err := api.FollowExperiment(ctx, "nope", nil); !errors.As(err, &ae) || ae.Status != 404 {
		t.Fatalf("following an unknown experiment: %v", err)
	}
	t.Logf("%d states over the websocket", len(states))
}

// TestLabChaosRunsThroughTheExperimentEngine: the lab's chaos runs (POST
// /api/v1/chaos) play through the experiment engine (experiment.RunChaos)
// and still export a run that chaos.Replay plays to the same counts.
func TestLabChaosRunsThroughTheExperimentEngine(t *testing.T) {
	u, _, _, _ := startRun(t, t.TempDir())
	post := func(path, body string) *http.Response {
		req, _ := http.NewRequest("POST", u+strings.TrimPrefix(path, "/"), strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := post("/api/v1/chaos", `{"seed":4,"config":"acks1","actions":40}`)
	var st chaos.RunState
	if err := json.NewDecoder(resp.Body).Decode(&st); resp.StatusCode != 201 || err != nil {
		t.Fatalf("%d %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	for deadline := time.Now().Add(time.Minute); !st.Done(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not done: %+v", st.Progress)
		}
		r, err := http.Get(u + "api/v1/chaos/" + st.ID)
		if err != nil {
			t.Fatal(err)
		}
		json.NewDecoder(r.Body).Decode(&st)
		r.Body.Close()
	}
	r, err := http.Get(u + "api/v1/chaos/" + st.ID + "/export")
	if err != nil || r.StatusCode != 200 {
		t.Fatal(err, r.StatusCode)
	}
	exported, _ := io.ReadAll(r.Body)
	r.Body.Close()
	again, err := chaos.Replay(context.Background(), exported, chaos.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(again.Counts) != fmt.Sprint(st.Progress.Counts) {
		t.Fatalf("the lab's run %+v, replayed %+v", st.Progress.Counts, again.Counts)
	}
}
