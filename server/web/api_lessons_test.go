package web

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"tidemark/events"
	"tidemark/lessons"
	"tidemark/server/labs"
)

func lessonServer(t *testing.T, max int) *Server {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	ls, err := labs.New(labs.Options{Root: filepath.Join(t.TempDir(), "lessons"), MaxClusters: max, SweepInterval: -1, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := lessons.NewService(lessons.Options{Labs: ls, Speed: lessons.SpeedInstant, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close(); ls.Close() })
	return newTestServer(t, newTestLab(events.BusOptions{}), Options{Lessons: svc})
}

func send(t *testing.T, h http.Handler, method, target, body string) *httptest.ResponseRecorder {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := loopbackRequest(method, target, r)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestLessonAPI drives a run of lesson 08-hw through the API on a real
// cluster: list and detail, start, Next, predict (the verdict comes from
// the real outcome), Back and Next through recorded states, the errors for
// a control out of place, a full lab (429 THROTTLING_QUOTA_EXCEEDED) and
// unknown lessons and runs (404), and stop.
func TestLessonAPI(t *testing.T) {
	s := lessonServer(t, 1)
	h := s.Handler()

	rec := send(t, h, "GET", "/api/v1/lessons", "")
	var list []LessonSummary
	if err := json.Unmarshal(rec.Body.Bytes(), &list); rec.Code != 200 || err != nil || len(list) < 14 {
		t.Fatalf("list: %d %v %d lessons", rec.Code, err, len(list))
	}
	if !strings.Contains(rec.Body.String(), `"zh-Hant"`) {
		t.Fatal("titles lack a language")
	}
	for i := 1; i < len(list); i++ {
		if list[i].Number <= list[i-1].Number {
			t.Fatalf("lessons out of path order: %s after %s", list[i].ID, list[i-1].ID)
		}
	}
	if list[0].ID != "01-partitions" || list[0].Part != "storage" || len(list[6].BuildsOn) == 0 {
		t.Fatalf("path: first %s (%s), %s builds on %v", list[0].ID, list[0].Part, list[6].ID, list[6].BuildsOn)
	}
	if rec := send(t, h, "GET", "/api/v1/lessons/08-hw", ""); rec.Code != 200 || !strings.Contains(rec.Body.String(), `"prediction"`) {
		t.Fatalf("detail: %d %s", rec.Code, rec.Body)
	}
	wantError(t, send(t, h, "GET", "/api/v1/lessons/nope", ""), 404, CodeNotFound)
	wantError(t, send(t, h, "POST", "/api/v1/lessons/nope/runs", ""), 404, CodeNotFound)

	rec = send(t, h, "POST", "/api/v1/lessons/08-hw/runs", `{"speed":"instant"}`)
	var st lessons.RunState
	if err := json.Unmarshal(rec.Body.Bytes(), &st); rec.Code != 201 || err != nil || st.ID == "" || st.Cursor != 0 {
		t.Fatalf("start: %d %v %s", rec.Code, err, rec.Body)
	}
	wantError(t, send(t, h, "POST", "/api/v1/lessons/08-hw/runs", ""), 429, "THROTTLING_QUOTA_EXCEEDED")
	run := "/api/v1/lessons/runs/" + st.ID
	state := func(rec *httptest.ResponseRecorder) lessons.RunState {
		t.Helper()
		var st lessons.RunState
		if err := json.Unmarshal(rec.Body.Bytes(), &st); rec.Code != 200 || err != nil {
			t.Fatalf("%d %v %s", rec.Code, err, rec.Body)
		}
		return st
	}
	wantError(t, send(t, h, "POST", run+"/back", ""), 409, "INVALID_REQUEST")
	st = state(send(t, h, "POST", run+"/next", ""))
	if st.Cursor != 1 || !st.Steps[0].Passed || st.Lanes.Topics[0].Partitions[0].ReplicaLogs[0].LEO != 1 {
		t.Fatalf("after next: %+v", st.Steps[0])
	}
	wantError(t, send(t, h, "POST", run+"/next", ""), 409, "INVALID_REQUEST") // predict first
	wantError(t, send(t, h, "POST", run+"/predict", `{"choice":"maybe"}`), 400, "INVALID_REQUEST")
	st = state(send(t, h, "POST", run+"/predict", `{"choice":"m1"}`))
	p := st.Steps[1].Prediction
	if st.Cursor != 2 || p.Chosen != "m1" || p.Right == nil || *p.Right || len(p.Correct) != 1 || p.Correct[0] != "nothing" {
		t.Fatalf("prediction: %+v", p)
	}
	st = state(send(t, h, "POST", run+"/back", ""))
	if st.Cursor != 1 || st.Live {
		t.Fatalf("back: cursor %d live %v", st.Cursor, st.Live)
	}
	st = state(send(t, h, "POST", run+"/next", ""))
	if st.Cursor != 2 || st.Executed != 2 {
		t.Fatalf("next after back: cursor %d executed %d", st.Cursor, st.Executed)
	}
	st = state(send(t, h, "POST", run+"/speed", `{"speed":"slow"}`))
	if st.Speed != lessons.SpeedSlow {
		t.Fatalf("speed %s", st.Speed)
	}
	wantError(t, send(t, h, "POST", run+"/speed", `{"speed":"warp"}`), 400, "INVALID_REQUEST")
	if st = state(send(t, h, "GET", run, "")); st.Cursor != 2 {
		t.Fatalf("get: %d", st.Cursor)
	}
	// The page renders the run.
	if rec := send(t, h, "GET", "/lessons/runs/"+st.ID, ""); rec.Code != 200 || !strings.Contains(rec.Body.String(), `id="run-lanes"`) {
		t.Fatalf("run page: %d", rec.Code)
	}
	if rec := send(t, h, "DELETE", run, ""); rec.Code != 204 {
		t.Fatalf("stop: %d %s", rec.Code, rec.Body)
	}
	wantError(t, send(t, h, "GET", run, ""), 404, CodeNotFound)
	wantError(t, send(t, h, "GET", "/ws?run=nope", ""), 404, CodeNotFound)
	// The slot is free again.
	if rec := send(t, h, "POST", "/api/v1/lessons/01-partitions/runs", ""); rec.Code != 201 {
		t.Fatalf("start after stop: %d %s", rec.Code, rec.Body)
	}
}

// TestLessonRoutesWithoutService: no lesson service, 501 on the run routes.
func TestLessonRoutesWithoutService(t *testing.T) {
	s := newTestServer(t, newTestLab(events.BusOptions{}), Options{})
	wantError(t, send(t, s.Handler(), "POST", "/api/v1/lessons/08-hw/runs", ""), 501, CodeNotImplemented)
	if rec := send(t, s.Handler(), "GET", "/api/v1/lessons", ""); rec.Code != 200 {
		t.Fatalf("list without a service: %d", rec.Code)
	}
}
