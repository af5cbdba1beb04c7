package web

import (
	"encoding/csv"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"tidemark/events"
	"tidemark/server/chaos"
	"tidemark/server/experiment"
	"tidemark/server/labs"
)

func chaosServer(t *testing.T, max int) *Server {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	ls, err := labs.New(labs.Options{Root: filepath.Join(t.TempDir(), "labs"), MaxClusters: max, SweepInterval: -1, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := chaos.NewService(chaos.ServiceOptions{Labs: ls, Logger: logger, Run: experiment.RunChaos, Compare: experiment.RunCompare})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close(); ls.Close() })
	return newTestServer(t, newTestLab(events.BusOptions{}), Options{Chaos: svc})
}

// waitRun polls a run of a kind (chaos, compare), bounded, until it is
// done.
func waitRun[T any, P interface {
	*T
	Done() bool
}](t *testing.T, s *Server, kind, id string) T {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		rec := send(t, s.Handler(), "GET", "/api/v1/"+kind+"/"+id, "")
		var st T
		if err := json.Unmarshal(rec.Body.Bytes(), &st); rec.Code != 200 || err != nil {
			t.Fatalf("get: %d %v %s", rec.Code, err, rec.Body)
		}
		if P(&st).Done() {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s run %s not done: %s", kind, id, rec.Body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func waitChaos(t *testing.T, s *Server, id string) chaos.RunState {
	t.Helper()
	return waitRun[chaos.RunState](t, s, "chaos", id)
}

// TestChaosAPI starts a short run through the API on its own cluster,
// follows it to the end, exports it and plays the export again as a
// schedule; then the errors: a bad configuration, seed or schedule (400),
// a full lab (429), an unknown run (404).
func TestChaosAPI(t *testing.T) {
	s := chaosServer(t, 1)
	h := s.Handler()
	rec := send(t, h, "POST", "/api/v1/chaos", `{"seed":7,"config":"acks1","actions":40}`)
	var st chaos.RunState
	if err := json.Unmarshal(rec.Body.Bytes(), &st); rec.Code != 201 || err != nil || st.ID == "" || st.Actions != 40 {
		t.Fatalf("start: %d %v %s", rec.Code, err, rec.Body)
	}
	wantError(t, send(t, h, "POST", "/api/v1/chaos", `{"seed":8}`), 429, "THROTTLING_QUOTA_EXCEEDED")
	done := waitChaos(t, s, st.ID)
	if done.Progress.Phase != chaos.PhaseDone || done.Error != "" || done.Progress.Counts.Writes == 0 {
		t.Fatalf("run: %+v", done)
	}
	rec = send(t, h, "GET", "/api/v1/chaos/"+st.ID+"/export", "")
	res, err := chaos.Import(rec.Body.Bytes())
	if rec.Code != 200 || err != nil || res.Seed != 7 || res.Config != chaos.Acks1 || len(res.Actions) != 40 {
		t.Fatalf("export: %d %v", rec.Code, err)
	}
	// Acknowledged against read back, one CSV row per write.
	rec = send(t, h, "GET", "/api/v1/export/chaos/"+st.ID+"/acked.csv", "")
	if rows, err := csv.NewReader(rec.Body).ReadAll(); rec.Code != 200 || err != nil || len(rows) != 1+len(res.Writes) || rows[0][0] != "value" {
		t.Fatalf("acked.csv: %d %v %d rows for %d writes", rec.Code, err, len(rows), len(res.Writes))
	}
	// The exported schedule, played again, gives the same counts.
	actions, _ := json.Marshal(res.Actions)
	rec = send(t, h, "POST", "/api/v1/chaos", `{"seed":7,"config":"acks1","actions":`+string(actions)+`}`)
	if err := json.Unmarshal(rec.Body.Bytes(), &st); rec.Code != 201 || err != nil {
		t.Fatalf("replay: %d %s", rec.Code, rec.Body)
	}
	if again := waitChaos(t, s, st.ID); again.Progress.Counts != res.Counts {
		t.Fatalf("replay counts %+v, export %+v", again.Progress.Counts, res.Counts)
	}

	wantError(t, send(t, h, "POST", "/api/v1/chaos", `{"seed":1,"config":"lax"}`), 400, "INVALID_CONFIG")
	wantError(t, send(t, h, "POST", "/api/v1/chaos", `{"seed":9007199254740992}`), 400, "INVALID_REQUEST")
	wantError(t, send(t, h, "POST", "/api/v1/chaos", `{"seed":1,"actions":0}`), 400, "INVALID_REQUEST")
	wantError(t, send(t, h, "POST", "/api/v1/chaos", `{"seed":1,"actions":5000}`), 400, "INVALID_REQUEST")
	wantError(t, send(t, h, "POST", "/api/v1/chaos", `{"seed":1,"actions":[{"kind":"crash","broker":9}]}`), 400, "INVALID_REQUEST")
	wantError(t, send(t, h, "POST", "/api/v1/chaos", `{"seed":1,"actions":"many"}`), 400, "INVALID_REQUEST")
	wantError(t, send(t, h, "GET", "/api/v1/chaos/nope", ""), 404, CodeNotFound)
	wantError(t, send(t, h, "GET", "/api/v1/chaos/nope/export", ""), 404, CodeNotFound)

	// The pages: the list links the runs, a run shows its counts and losses.
	rec = send(t, h, "GET", "/chaos", "")
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), "/chaos/runs/"+st.ID) || !strings.Contains(rec.Body.String(), `name="seed"`) {
		t.Fatalf("chaos page: %d %s", rec.Code, rec.Body)
	}
	rec = send(t, h, "GET", "/chaos/runs/"+st.ID, "")
	if body := rec.Body.String(); rec.Code != 200 || !strings.Contains(body, "at another offset than acknowledged") || strings.Contains(body, "http-equiv") {
		t.Fatalf("run page: %d %s", rec.Code, body)
	}
}

func TestChaosWithoutService(t *testing.T) {
	s := newTestServer(t, newTestLab(events.BusOptions{}), Options{})
	wantError(t, send(t, s.Handler(), "POST", "/api/v1/chaos", `{"seed":1}`), 501, CodeNotImplemented)
	wantError(t, send(t, s.Handler(), "GET", "/api/v1/chaos/x", ""), 501, CodeNotImplemented)
}

func TestChaosForm(t *testing.T) {
	s := chaosServer(t, 1)
	req := loopbackRequest("POST", "/chaos/start", strings.NewReader("seed=3&config=strict&actions=20"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	loc := rec.Header().Get("Location")
	if rec.Code != 303 || !strings.HasPrefix(loc, "/chaos/runs/") {
		t.Fatalf("form: %d %q", rec.Code, loc)
	}
	waitChaos(t, s, strings.TrimPrefix(loc, "/chaos/runs/"))
	// A bad seed comes back to the form with the error.
	req = loopbackRequest("POST", "/chaos/start", strings.NewReader("seed=x&config=strict"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec = httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	if rec.Code != 303 || rec.Header().Get("Location") != "/chaos" {
		t.Fatalf("bad form: %d %q", rec.Code, rec.Header().Get("Location"))
	}
}

// TestChaosBadActionSaysWhy: POST /api/v1/chaos with an unknown action kind
// is INVALID_REQUEST naming that kind and the known ones (it used to say
// "bad chaos action explode b0"), without Kafka's description.
func TestChaosBadActionSaysWhy(t *testing.T) {
	h := chaosServer(t, 1).Handler()
	for body, want := range map[string][]string{
		`{"actions":[{"kind":"explode"}]}`:          {`unknown chaos action kind "explode"`, "produce", "heal"},
		`{"actions":[{"kind":"crash","broker":9}]}`: {"broker 9 is outside [1, 3]"},
	} {
		rec := send(t, h, "POST", "/api/v1/chaos", body)
		wantError(t, rec, 400, "INVALID_REQUEST")
		var got struct{ Error struct{ Message string } }
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		for _, w := range want {
			if !strings.Contains(got.Error.Message, w) || strings.Contains(got.Error.Message, "INVALID_REQUEST") {
				t.Errorf("%s: message %q, want it to say %q and not the code", body, got.Error.Message, w)
			}
		}
	}
}

// TestChaosRunOnTheStage: a finished run's page opens the stage on its
// recording (the cluster as the schedule started, played to its last
// event) under a one-sentence conclusion, and /ws?chaos=<id> streams the
// recording: the starting snapshot, then every recorded event in order
// (the first after the snapshot, the last the page plays to). An unknown
// run has no recording (404).
func TestChaosRunOnTheStage(t *testing.T) {
	s := chaosServer(t, 1)
	h := s.Handler()
	rec := send(t, h, "POST", "/api/v1/chaos", `{"seed":3,"config":"strict","actions":20}`)
	var st chaos.RunState
	if err := json.Unmarshal(rec.Body.Bytes(), &st); rec.Code != 201 || err != nil {
		t.Fatalf("start: %d %v %s", rec.Code, err, rec.Body)
	}
	done := waitChaos(t, s, st.ID)
	recording, ok := s.opts.Chaos.Recording(st.ID)
	if !ok || len(recording.Events) == 0 || recording.Events[0].Seq != recording.Start.Seq+1 {
		t.Fatalf("recording: %v, %+v", ok, recording)
	}
	last := recording.Events[len(recording.Events)-1].Seq
	page := send(t, h, "GET", "/chaos/runs/"+st.ID, "").Body.String()
	for _, want := range []string{`data-ws="/ws?chaos=` + st.ID + `"`, `data-play-to="` + strconv.FormatUint(last, 10) + `"`, `data-menus="false"`,
		`data-testid="conclusion"`, chaosConclusion("en", "strict", done.Progress.Counts)} {
		if !strings.Contains(page, want) {
			t.Errorf("the run's page lacks %s", want)
		}
	}

	srv := httptest.NewServer(h)
	defer srv.Close()
	conn, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http")+"/ws?chaos="+st.ID, http.Header{"Origin": {srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := &wsClient{t: t, conn: conn}
	m := c.next()
	if m.Type != events.MessageSnapshot || m.Snapshot.Seq != recording.Start.Seq {
		t.Fatalf("first message %s at %d, want the snapshot at %d", m.Type, m.Snapshot.Seq, recording.Start.Seq)
	}
	want := recording.Start.Seq + 1
	for want <= last {
		for _, e := range c.next().Events {
			if e.Seq != want {
				t.Fatalf("event %d after %d", e.Seq, want-1)
			}
			want++
		}
	}
	wantError(t, send(t, h, "GET", "/ws?chaos=nope", ""), 404, "NOT_FOUND")
}
