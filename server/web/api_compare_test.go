package web

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"tidemark/server/chaos"
)

func waitCompare(t *testing.T, s *Server, id string) chaos.CompareState {
	t.Helper()
	return waitRun[chaos.CompareState](t, s, "compare", id)
}

// TestCompareAPI starts a short comparison through the API, follows it to
// the end, reads its result and its JSON export and its page; then the
// errors: a bad seed, too many actions, a bad protocol name (400 with
// Kafka's code), a full lab (429), an unknown or unfinished comparison.
func TestCompareAPI(t *testing.T) {
	s := chaosServer(t, 1)
	h := s.Handler()
	rec := send(t, h, "POST", "/api/v1/compare", `{"seed":5,"actions":40,"protocols":["isr","quorum","gossip"]}`)
	var st chaos.CompareState
	if err := json.Unmarshal(rec.Body.Bytes(), &st); rec.Code != 201 || err != nil || st.ID == "" || st.Actions != 40 || len(st.Protocols) != 3 {
		t.Fatalf("start: %d %v %s", rec.Code, err, rec.Body)
	}
	wantError(t, send(t, h, "POST", "/api/v1/compare", `{"seed":8}`), 429, "THROTTLING_QUOTA_EXCEEDED")
	if rec := send(t, h, "GET", "/api/v1/compare/"+st.ID+"/export", ""); rec.Code != 409 && rec.Code != 200 {
		t.Fatalf("export before the end: %d", rec.Code)
	}
	done := waitCompare(t, s, st.ID)
	if done.Progress.Phase != chaos.PhaseDone || done.Error != "" || done.Result == nil || len(done.Result.Protocols) != 3 {
		t.Fatalf("comparison: %+v", done)
	}
	for _, pr := range done.Result.Protocols[:2] {
		if pr.Skipped != "" || pr.Attempted == 0 || pr.Accepted > pr.Attempted || pr.Lost != 0 || pr.MessagesTotal == 0 {
			t.Errorf("%s: %+v", pr.Protocol, pr)
		}
	}
	if g := done.Result.Protocols[2]; g.SkippedCode != "INVALID_CONFIG" {
		t.Errorf("gossip not skipped with INVALID_CONFIG: %+v", g)
	}
	if len(done.Series) != 2 || len(done.Series[0].Samples) < 40 {
		t.Errorf("series: %+v", done.Series)
	}

	// The answers are what /api/v1/openapi.json says they are.
	doc := loadAPIDoc(t)
	for path, schema := range map[string]string{"/api/v1/compare/" + st.ID: "CompareRun", "/api/v1/compare/" + st.ID + "/export": "Comparison"} {
		if diffs := doc.conforms(schema, send(t, h, "GET", path, "").Body.Bytes()); len(diffs) > 0 {
			t.Errorf("GET %s differs from the OpenAPI schema %s:\n  %s", path, schema, strings.Join(diffs, "\n  "))
		}
	}

	rec = send(t, h, "GET", "/api/v1/compare/"+st.ID+"/export", "")
	var exported chaos.Comparison
	if err := json.Unmarshal(rec.Body.Bytes(), &exported); rec.Code != 200 || err != nil || exported.Seed != 5 || len(exported.Actions) != 40 || len(exported.Protocols) != 3 {
		t.Fatalf("export: %d %v", rec.Code, err)
	}
	if cd := rec.Header().Get("Content-Disposition"); !strings.Contains(cd, "attachment") || !strings.Contains(cd, ".json") {
		t.Errorf("export disposition %q", cd)
	}

	wantError(t, send(t, h, "POST", "/api/v1/compare", `{"seed":9007199254740992}`), 400, "INVALID_REQUEST")
	wantError(t, send(t, h, "POST", "/api/v1/compare", `{"seed":-1}`), 400, "INVALID_REQUEST")
	wantError(t, send(t, h, "POST", "/api/v1/compare", `{"seed":"one"}`), 400, "INVALID_REQUEST")
	wantError(t, send(t, h, "POST", "/api/v1/compare", `{"seed":1,"actions":5000}`), 400, "INVALID_REQUEST")
	wantError(t, send(t, h, "POST", "/api/v1/compare", `{"seed":1,"actions":-3}`), 400, "INVALID_REQUEST")
	wantError(t, send(t, h, "POST", "/api/v1/compare", `{"seed":1,"protocols":["isr","isr"]}`), 400, "INVALID_REQUEST")
	wantError(t, send(t, h, "POST", "/api/v1/compare", `{"seed":1,"protocols":["../x"]}`), 400, "INVALID_REQUEST")
	wantError(t, send(t, h, "GET", "/api/v1/compare/nope", ""), 404, CodeNotFound)
	wantError(t, send(t, h, "GET", "/api/v1/compare/nope/export", ""), 404, CodeNotFound)

	// The pages: the list links the comparison, its page has the table,
	// the charts and the export, and no refresh once done.
	rec = send(t, h, "GET", "/compare", "")
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), "/compare/runs/"+st.ID) || !strings.Contains(rec.Body.String(), `name="protocol"`) {
		t.Fatalf("compare page: %d %s", rec.Code, rec.Body)
	}
	rec = send(t, h, "GET", "/compare/runs/"+st.ID, "")
	body := rec.Body.String()
	for _, want := range []string{`data-testid="compare-table"`, `data-testid="compare-chart-isr"`, `data-testid="compare-chart-quorum"`, "2f+1", "INVALID_CONFIG", "/api/v1/compare/" + st.ID + "/export"} {
		if !strings.Contains(body, want) {
			t.Errorf("run page lacks %q", want)
		}
	}
	if rec.Code != 200 || strings.Contains(body, "http-equiv") {
		t.Fatalf("run page: %d", rec.Code)
	}
}

// TestCompareForm starts a comparison from the page's form (no
// JavaScript) and sends a bad seed back to the form with the error.
func TestCompareForm(t *testing.T) {
	s := chaosServer(t, 1)
	post := func(form string) *httptest.ResponseRecorder {
		req := loopbackRequest("POST", "/compare/start", strings.NewReader(form))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		return rec
	}
	rec := post("seed=2&actions=15&protocol=isr&protocol=quorum")
	loc := rec.Header().Get("Location")
	if rec.Code != 303 || !strings.HasPrefix(loc, "/compare/runs/") {
		t.Fatalf("form: %d %q", rec.Code, loc)
	}
	if st := waitCompare(t, s, strings.TrimPrefix(loc, "/compare/runs/")); len(st.Protocols) != 2 || st.Error != "" {
		t.Fatalf("form's comparison: %+v", st)
	}
	for _, bad := range []string{"seed=x", "seed=1&actions=9999"} {
		if rec := post(bad); rec.Code != 303 || rec.Header().Get("Location") != "/compare" {
			t.Fatalf("bad form %q: %d %q", bad, rec.Code, rec.Header().Get("Location"))
		}
	}
}
