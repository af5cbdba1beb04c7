package web

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"tidemark/events"
	"tidemark/lessons"
	"tidemark/server/class"
	"tidemark/server/labs"
)

// clockLab is a paused testLab whose clock records the steps it is asked for.
type clockLab struct {
	*testLab
	steps   []time.Duration
	toEvent []time.Duration
}

func (l *clockLab) Pause()  {}
func (l *clockLab) Resume() {}
func (l *clockLab) Step(d time.Duration) error {
	l.steps = append(l.steps, d)
	return nil
}
func (l *clockLab) StepToEvent(limit time.Duration) (time.Duration, []events.Event, error) {
	l.toEvent = append(l.toEvent, limit)
	return limit, nil, nil
}
func (l *clockLab) SetRate(float64) error                  { return nil }
func (l *clockLab) StepFetch(context.Context, int32) error { return nil }

func newClockLab() *clockLab {
	lab := &clockLab{testLab: newTestLab(events.BusOptions{})}
	lab.snap.Paused = true
	return lab
}

// postRaw sends a POST with exactly body (none when nil), its Content-Type
// and its framing: chunked sends the body without a Content-Length.
func postRaw(t *testing.T, s *Server, target string, body io.Reader, contentType string, chunked bool) *httptest.ResponseRecorder {
	t.Helper()
	req := loopbackRequest("POST", target, body)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if chunked {
		req.ContentLength = -1
		req.TransferEncoding = []string{"chunked"}
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	return rec
}

// TestClockStepWithoutBody: POST /api/v1/clock/step with no body, an empty
// one (any Content-Type, or chunked) or {} steps the default 100 ms, as
// step-event takes its default without a body; a body that is there must
// still be JSON (415 otherwise), and ms must be in range.
func TestClockStepWithoutBody(t *testing.T) {
	lab := newClockLab()
	s := newTestServer(t, lab, Options{})
	for _, c := range []struct {
		name, ct string
		body     io.Reader
		chunked  bool
	}{
		{"no body", "", nil, false},
		{"empty form body", "application/x-www-form-urlencoded", strings.NewReader(""), false},
		{"empty chunked body", "", strings.NewReader(""), true},
		{"empty JSON object", "application/json", strings.NewReader("{}"), false},
		{"only spaces", "application/json", strings.NewReader("  \n"), false},
	} {
		lab.steps = nil
		rec := postRaw(t, s, "/api/v1/clock/step", c.body, c.ct, c.chunked)
		if rec.Code != 200 || len(lab.steps) != 1 || lab.steps[0] != DefaultStep {
			t.Errorf("%s: %d %s, steps %v; want 200 and one step of %v", c.name, rec.Code, rec.Body, lab.steps, DefaultStep)
		}
	}
	lab.steps = nil
	if rec := postRaw(t, s, "/api/v1/clock/step", strings.NewReader(`{"ms":250}`), "application/json", false); rec.Code != 200 || len(lab.steps) != 1 || lab.steps[0] != 250*time.Millisecond {
		t.Errorf(`{"ms":250}: %d %s, steps %v`, rec.Code, rec.Body, lab.steps)
	}
	wantError(t, postRaw(t, s, "/api/v1/clock/step", strings.NewReader(`ms=100`), "application/x-www-form-urlencoded", false), 415, "INVALID_REQUEST")

	// step-event and the other optional bodies take an empty chunked body
	// too (they looked at Content-Length only).
	if rec := postRaw(t, s, "/api/v1/clock/step-event", strings.NewReader(""), "", true); rec.Code != 200 || len(lab.toEvent) != 1 || lab.toEvent[0] != MaxStepToEvent {
		t.Errorf("step-event, empty chunked body: %d %s, limits %v", rec.Code, rec.Body, lab.toEvent)
	}
	for _, path := range []string{"/api/v1/clock/pause", "/api/v1/clock/resume"} {
		if rec := postRaw(t, s, path, nil, "", false); rec.Code != 200 {
			t.Errorf("%s without a body: %d %s", path, rec.Code, rec.Body)
		}
	}
}

// TestClockStepRangeMessage: a step out of range names the field, its unit,
// its range and why, and the value it got — not an example that reads like
// the request.
func TestClockStepRangeMessage(t *testing.T) {
	s := newTestServer(t, newClockLab(), Options{})
	for _, c := range []struct{ path, body, want string }{
		{"/api/v1/clock/step", `{"ms":0}`, "ms, the lab time to step in milliseconds, must be between 1 and 3600000 (an hour); got 0; leave it out to step 100"},
		{"/api/v1/clock/step", `{"ms":3600001}`, "ms, the lab time to step in milliseconds, must be between 1 and 3600000 (an hour); got 3600001; leave it out to step 100"},
		{"/api/v1/clock/step-event", `{"max_ms":0}`, "max_ms, how much lab time to look ahead for the next event in milliseconds, must be between 1 and 60000 (a minute); got 0; leave it out to look a minute ahead"},
	} {
		rec := postRaw(t, s, c.path, strings.NewReader(c.body), "application/json", false)
		wantError(t, rec, 400, "INVALID_REQUEST")
		if got := errorMessage(t, rec.Body.Bytes()); got != c.want {
			t.Errorf("%s %s: %q, want %q", c.path, c.body, got, c.want)
		}
	}
}

// TestLessonRunMatchesOpenAPI: the lesson routes answer what
// /api/v1/openapi.json says, field by field, before and after a
// prediction: the question of the step to run next is in the steps list
// (the one with current true), where the document says it is.
func TestLessonRunMatchesOpenAPI(t *testing.T) {
	doc := loadAPIDoc(t)
	h := lessonServer(t, 1).Handler()
	check := func(what, schema string, rec *httptest.ResponseRecorder) {
		t.Helper()
		if rec.Code/100 != 2 {
			t.Fatalf("%s: %d %s", what, rec.Code, rec.Body)
		}
		if diffs := doc.conforms(schema, rec.Body.Bytes()); len(diffs) > 0 {
			t.Errorf("%s differs from the OpenAPI schema %s:\n  %s", what, schema, strings.Join(diffs, "\n  "))
		}
	}
	check("GET /api/v1/lessons", "[]LessonSummary", send(t, h, "GET", "/api/v1/lessons", ""))
	check("GET /api/v1/lessons/08-hw", "Lesson", send(t, h, "GET", "/api/v1/lessons/08-hw", ""))
	rec := send(t, h, "POST", "/api/v1/lessons/08-hw/runs", `{"speed":"instant"}`)
	check("a new run", "LessonRun", rec)
	var st lessons.RunState
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	run := "/api/v1/lessons/runs/" + st.ID
	rec = send(t, h, "POST", run+"/next", "")
	check("after next", "LessonRun", rec)
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	cur := st.Steps[st.Cursor]
	if !cur.Current || cur.Prediction == nil || len(cur.Prediction.Choices) == 0 {
		t.Fatalf("the step to predict (steps[%d]) is %+v", st.Cursor, cur)
	}
	check("after a prediction", "LessonRun", send(t, h, "POST", run+"/predict", `{"choice":"`+cur.Prediction.Choices[0].ID+`"}`))
}

// listedSeqs returns the data-seq of every item of a page's event list
// (#panel-events), newest first as the list shows them.
func listedSeqs(t *testing.T, page string) []uint64 {
	t.Helper()
	_, list, ok := strings.Cut(page, `id="panel-events"`)
	if !ok {
		t.Fatal("the page has no #panel-events")
	}
	list, _, _ = strings.Cut(list, "</ol>")
	var out []uint64
	for _, m := range regexp.MustCompile(`<li[^>]* data-seq="(\d+)"`).FindAllStringSubmatch(list, -1) {
		n, _ := strconv.ParseUint(m[1], 10, 64)
		out = append(out, n)
	}
	return out
}

// TestLessonPageListsRecentEvents: a lesson run's page opens with the
// run's recent events in its event list, as the overview does, and after
// Back with those up to the step it shows; the partition page too.
func TestLessonPageListsRecentEvents(t *testing.T) {
	h := lessonServer(t, 1).Handler()
	rec := send(t, h, "POST", "/api/v1/lessons/08-hw/runs", `{"speed":"instant"}`)
	var st lessons.RunState
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	page := "/lessons/runs/" + st.ID
	if seqs := listedSeqs(t, send(t, h, "GET", page, "").Body.String()); len(seqs) == 0 || seqs[0] > st.Seq {
		t.Errorf("before the first step the list shows %v; want the setup's events, none after seq %d", seqs, st.Seq)
	}
	before := st.Seq
	if err := json.Unmarshal(send(t, h, "POST", "/api/v1/lessons/runs/"+st.ID+"/next", "").Body.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	if seqs := listedSeqs(t, send(t, h, "GET", page, "").Body.String()); len(seqs) == 0 || seqs[0] <= before {
		t.Errorf("after step 1 the list shows %v; want step 1's events (after seq %d)", seqs, before)
	}
	send(t, h, "POST", "/api/v1/lessons/runs/"+st.ID+"/back", "")
	if seqs := listedSeqs(t, send(t, h, "GET", page, "").Body.String()); len(seqs) == 0 || seqs[0] > before {
		t.Errorf("back at step 0 the list shows %v; want none after seq %d", seqs, before)
	}

	lab := newTestLab(events.BusOptions{})
	e := lab.publish(events.Event{Kind: events.KindFault, Fault: &events.Fault{Kind: events.FaultCut, From: 1, To: 2}})
	s := newTestServer(t, lab, Options{})
	if seqs := listedSeqs(t, do(t, s.Handler(), "GET", "/topics/demo/partitions/0", nil).Body.String()); len(seqs) != 1 || seqs[0] != e.Seq {
		t.Errorf("the partition page lists %v, want [%d]", seqs, e.Seq)
	}
}

// TestJoinErrorIsShort: a refused join says what is wrong in a sentence
// without Kafka's long description (the code travels apart), with the key
// of its translated text.
func TestJoinErrorIsShort(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	ls, err := labs.New(labs.Options{Root: filepath.Join(t.TempDir(), "runs"), MaxClusters: 1, SweepInterval: -1, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	cl, _, err := class.Open(class.Options{Dir: t.TempDir(), Name: "QA", Seats: 1, Runs: ls, SweepInterval: -1, Logger: logger,
		NewHandler: func(class.Env) (http.Handler, io.Closer, error) { return nil, nil, errors.New("no seat serves here") }})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	s := newTestServer(t, newTestLab(events.BusOptions{}), Options{Class: cl})
	code := cl.Seats()[0].Code
	for _, c := range []struct{ body, code, msg, key string }{
		{`{"code":"` + code + `"}`, "INVALID_REQUEST", "the name must be 1 to 40 printable characters", "class.join.bad-name"},
		{`{"code":"AAAAA-AAAAA","name":"Ann"}`, "SASL_AUTHENTICATION_FAILED", "no seat has this join code", "class.join.bad-code"},
	} {
		rec := send(t, s.Handler(), "POST", "/api/v1/join", c.body)
		var body errorBody
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Error == nil {
			t.Fatalf("%s: %d %s", c.body, rec.Code, rec.Body)
		}
		if e := body.Error; e.Code != c.code || e.Message != c.msg || e.Key != c.key {
			t.Errorf("%s: %s %q key %q, want %s %q key %q", c.body, e.Code, e.Message, e.Key, c.code, c.msg, c.key)
		}
	}
}

// TestAlterConfigsNamesTheKey: a config value that is not one names its
// key and says what the body is (a body wrapped in "configs", as topic
// creation takes them, is the common slip).
func TestAlterConfigsNamesTheKey(t *testing.T) {
	s := newTestServer(t, fuzzLab{testLab: newTestLab(events.BusOptions{})}, Options{})
	rec := send(t, s.Handler(), "PATCH", "/api/v1/topics/demo/configs", `{"configs":{"min.insync.replicas":"2"}}`)
	wantError(t, rec, 400, "INVALID_REQUEST")
	want := `malformed JSON body: "configs": a config value must be a string, number, boolean or null; the body is the configs themselves: {"min.insync.replicas":"2"}`
	if got := errorMessage(t, rec.Body.Bytes()); got != want {
		t.Errorf("message %q, want %q", got, want)
	}
	if rec := send(t, s.Handler(), "PATCH", "/api/v1/topics/demo/configs", `{"min.insync.replicas":2,"retention.ms":null,"unclean.leader.election.enable":true}`); rec.Code != 200 {
		t.Errorf("good configs: %d %s", rec.Code, rec.Body)
	}
}

// TestEventsMatchOpenAPI: GET /api/v1/events answers what the OpenAPI
// document says, a message event's wire included.
func TestEventsMatchOpenAPI(t *testing.T) {
	lab := newTestLab(events.BusOptions{})
	lab.publish(events.Event{Kind: events.KindFetchRequest, Broker: 2, Topic: "demo", Wire: &events.Wire{From: 2, To: 1, FetchOffset: 3, LastFetchedEpoch: 1}})
	lab.publish(events.Event{Kind: events.KindHW, Broker: 1, Topic: "demo", Offsets: &events.Offsets{HW: 3}})
	s := newTestServer(t, lab, Options{})
	rec := do(t, s.Handler(), "GET", "/api/v1/events", nil)
	if diffs := loadAPIDoc(t).conforms("Events", rec.Body.Bytes()); rec.Code != 200 || len(diffs) > 0 {
		t.Errorf("GET /api/v1/events: %d, differs from the OpenAPI schema Events:\n  %s", rec.Code, strings.Join(diffs, "\n  "))
	}
}

// TestUnknownLessonQuotesTheID: an unknown lesson id is quoted ("no lesson
// \"runz\"", not "no lesson runz", which reads as if no run existed);
// GET /api/v1/lessons/runs is the learner's open runs, not a lesson.
func TestUnknownLessonQuotesTheID(t *testing.T) {
	s := newTestServer(t, newTestLab(events.BusOptions{}), Options{})
	rec := do(t, s.Handler(), "GET", "/api/v1/lessons/runz", nil)
	wantError(t, rec, 404, CodeNotFound)
	if got, want := errorMessage(t, rec.Body.Bytes()), `no lesson "runz"; GET /api/v1/lessons lists them`; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
	wantError(t, do(t, s.Handler(), "GET", "/api/v1/lessons/runs", nil), 501, CodeNotImplemented)
}

// TestOverviewListsEventsBehindMessages: in a running lab the newest events
// are mostly messages (fetches, heartbeats), which the list leaves out; the
// overview still opens with the state changes before them.
func TestOverviewListsEventsBehindMessages(t *testing.T) {
	lab := newTestLab(events.BusOptions{})
	cut := lab.publish(events.Event{Kind: events.KindFault, Fault: &events.Fault{Kind: events.FaultCut, From: 1, To: 2}})
	for range 1000 {
		lab.publish(events.Event{Kind: events.KindHeartbeat, Broker: 1, Wire: &events.Wire{From: 1, To: 0}})
	}
	s := newTestServer(t, lab, Options{})
	for _, path := range []string{"/", "/topics/demo/partitions/0"} {
		if seqs := listedSeqs(t, do(t, s.Handler(), "GET", path, nil).Body.String()); len(seqs) != 1 || seqs[0] != cut.Seq {
			t.Errorf("%s lists %v, want [%d] (the cut behind 1,000 heartbeats)", path, seqs, cut.Seq)
		}
	}
}

// TestProduceAcksForms: acks is taken as a producer's acks config takes it,
// as a string or a number; -1 is all; anything else is kept for the error.
func TestProduceAcksForms(t *testing.T) {
	for in, want := range map[string]events.Acks{
		`"0"`: events.AcksNone, `0`: events.AcksNone,
		`"1"`: events.AcksLeader, `1`: events.AcksLeader,
		`"all"`: events.AcksAll, `"-1"`: events.AcksAll, `-1`: events.AcksAll,
		`2`: "2", `1.5`: "1.5", `true`: "true", `"ALL"`: "ALL",
	} {
		var r ProduceRequest
		if err := json.Unmarshal([]byte(`{"acks":`+in+`}`), &r); err != nil || events.Acks(r.Acks) != want {
			t.Errorf("acks %s: %q, %v; want %q", in, r.Acks, err, want)
		}
	}
}
