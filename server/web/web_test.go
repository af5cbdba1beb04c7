package web

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"tidemark/events"
)

// testLab is the smallest real Lab: a snapshot and a bus, changed together
// under one lock exactly as the contract of Lab asks.
type testLab struct {
	mu   sync.Mutex
	snap events.Snapshot
	bus  *events.Bus
}

func newTestLab(opts events.BusOptions) *testLab {
	s := events.Snapshot{Controller: 1}
	for id := int32(1); id <= 3; id++ {
		s.Brokers = append(s.Brokers, events.Broker{ID: id, State: events.BrokerUp, Listener: "127.0.0.1:909" + string(rune('1'+id))})
	}
	p := events.Partition{Leader: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}}
	for id := int32(1); id <= 3; id++ {
		p.ReplicaLogs = append(p.ReplicaLogs, events.Replica{Broker: id})
	}
	s.Topics = []events.Topic{{Name: "demo", Partitions: []events.Partition{p}}}
	return &testLab{snap: s, bus: events.NewBus(opts)}
}

func (l *testLab) Snapshot() events.Snapshot {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.snap.Clone()
}

func (l *testLab) Bus() *events.Bus { return l.bus }

func (l *testLab) publish(e events.Event) events.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	e = l.bus.Publish(e)
	l.snap.Apply(e)
	return e
}

// testStatic is a small static tree with a stand-in panel.wasm big enough to
// be compressed.
func testStatic() fstest.MapFS {
	return fstest.MapFS{
		"app.css":           {Data: []byte("body{}")},
		"wasm/panel.wasm":   {Data: bytes.Repeat([]byte("\x00asm tidemark panel "), 512)},
		"wasm/wasm_exec.js": {Data: []byte("// loader")},
	}
}

func newTestServer(t testing.TB, lab Lab, opts Options) *Server {
	t.Helper()
	opts.Lab = lab
	if opts.Static == nil {
		opts.Static = testStatic()
	}
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func do(t *testing.T, h http.Handler, method, target string, hdr map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := loopbackRequest(method, target, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func wantError(t *testing.T, rec *httptest.ResponseRecorder, status int, code string) {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status %d, want %d; body %s", rec.Code, status, rec.Body)
	}
	var body struct {
		Error struct{ Code, Message string }
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("error body is not JSON: %v: %s", err, rec.Body)
	}
	if body.Error.Code != code || body.Error.Message == "" {
		t.Fatalf("error = %+v, want code %s and a message", body.Error, code)
	}
}

func TestOverviewPage(t *testing.T) {
	lab := newTestLab(events.BusOptions{})
	s := newTestServer(t, lab, Options{})
	rec := do(t, s.Handler(), "GET", "/", nil)
	if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
		t.Fatalf("GET / = %d %s", rec.Code, rec.Header().Get("Content-Type"))
	}
	body := rec.Body.String()
	for _, want := range []string{`<html lang="en">`, "broker 1", "broker 2", "broker 3", "127.0.0.1:9093", "demo",
		"under-replicated", `id="panel"`, `data-status="loading"`, "/static/panel.js"} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

func TestClusterAPI(t *testing.T) {
	lab := newTestLab(events.BusOptions{})
	lab.publish(events.Event{Kind: events.KindFault, Broker: 3, Fault: &events.Fault{Kind: events.FaultCrash}})
	s := newTestServer(t, lab, Options{})
	rec := do(t, s.Handler(), "GET", "/api/v1/cluster", nil)
	var got ClusterResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &got); rec.Code != 200 || err != nil {
		t.Fatalf("GET /api/v1/cluster = %d %v: %s", rec.Code, err, rec.Body)
	}
	want := ClusterResponse{
		Brokers: []events.Broker{
			{ID: 1, State: "up", Listener: "127.0.0.1:9092"},
			{ID: 2, State: "up", Listener: "127.0.0.1:9093"},
			{ID: 3, State: "crashed", Listener: "127.0.0.1:9094"},
		},
		Controller: 1,
		Topics:     []TopicSummary{{Name: "demo", Partitions: 1, ReplicationFactor: 3, UnderReplicated: 1}},
		LastSeq:    1,
	}
	if g, w := mustJSON(t, got), mustJSON(t, want); g != w {
		t.Fatalf("cluster =\n%s\nwant\n%s", g, w)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestEventsAPI(t *testing.T) {
	lab := newTestLab(events.BusOptions{History: 5})
	s := newTestServer(t, lab, Options{})
	h := s.Handler()

	rec := do(t, h, "GET", "/api/v1/events", nil)
	if rec.Code != 200 || strings.TrimSpace(rec.Body.String()) != `{"events":[],"oldest_seq":0,"last_seq":0}` {
		t.Fatalf("empty events = %d %s", rec.Code, rec.Body)
	}
	for range 8 {
		lab.publish(events.Event{Kind: events.KindHW, Broker: 1, Topic: "demo", Offsets: &events.Offsets{HW: 1}})
	}
	get := func(q string) EventsResponse {
		t.Helper()
		rec := do(t, h, "GET", "/api/v1/events"+q, nil)
		var r EventsResponse
		if err := json.Unmarshal(rec.Body.Bytes(), &r); rec.Code != 200 || err != nil {
			t.Fatalf("GET events%s = %d %v %s", q, rec.Code, err, rec.Body)
		}
		return r
	}
	r := get("")
	if len(r.Events) != 5 || r.Events[0].Seq != 4 || r.OldestSeq != 4 || r.LastSeq != 8 {
		t.Fatalf("all events = %d from %d, oldest %d last %d", len(r.Events), r.Events[0].Seq, r.OldestSeq, r.LastSeq)
	}
	r = get("?since=5&limit=2")
	if len(r.Events) != 2 || r.Events[0].Seq != 6 || r.Events[1].Seq != 7 {
		t.Fatalf("since=5 limit=2 = %+v", r.Events)
	}
	if r = get("?since=8"); len(r.Events) != 0 {
		t.Fatalf("since=last = %+v", r.Events)
	}

	for _, q := range []string{"?since=abc", "?since=-1", "?since=1.5", "?since=99999999999999999999999",
		"?since=18446744073709551616", "?since=+1", "?since=0x10", "?limit=0", "?limit=1001", "?limit=x", "?since=" + strings.Repeat("9", 500)} {
		t.Run(q, func(t *testing.T) {
			wantError(t, do(t, h, "GET", "/api/v1/events"+q, nil), http.StatusBadRequest, "INVALID_REQUEST")
		})
	}
}

func TestUnknownRoutesAndMethods(t *testing.T) {
	s := newTestServer(t, newTestLab(events.BusOptions{}), Options{})
	h := s.Handler()
	wantError(t, do(t, h, "GET", "/nope", nil), http.StatusNotFound, CodeNotFound)
	wantError(t, do(t, h, "GET", "/api/v1/topics/x/y/z", nil), http.StatusNotFound, CodeNotFound)
	wantError(t, do(t, h, "GET", "/static/missing.css", nil), http.StatusNotFound, CodeNotFound)
	wantError(t, do(t, h, "POST", "/api/v1/cluster", nil), http.StatusMethodNotAllowed, CodeMethodNotAllowed)
	wantError(t, do(t, h, "DELETE", "/api/v1/events", nil), http.StatusMethodNotAllowed, CodeMethodNotAllowed)
	// A plain GET of /ws is not a websocket handshake.
	wantError(t, do(t, h, "GET", "/ws", nil), http.StatusBadRequest, "INVALID_REQUEST")
}

func TestStaticFiles(t *testing.T) {
	s := newTestServer(t, newTestLab(events.BusOptions{}), Options{})
	h := s.Handler()
	raw := testStatic()["wasm/panel.wasm"].Data

	rec := do(t, h, "GET", "/static/wasm/panel.wasm", map[string]string{"Accept-Encoding": "br, gzip;q=0.8"})
	if rec.Code != 200 || rec.Header().Get("Content-Encoding") != "gzip" || rec.Header().Get("Content-Type") != "application/wasm" {
		t.Fatalf("wasm: %d encoding %q type %q", rec.Code, rec.Header().Get("Content-Encoding"), rec.Header().Get("Content-Type"))
	}
	if rec.Body.Len() >= len(raw) {
		t.Fatalf("gzip body %d bytes, raw %d", rec.Body.Len(), len(raw))
	}
	zr, err := gzip.NewReader(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(zr); err != nil || !bytes.Equal(got, raw) {
		t.Fatalf("gunzipped body differs (err %v)", err)
	}
	if _, gz, _ := s.StaticSize("wasm/panel.wasm"); gz != rec.Body.Len() && gz == 0 {
		t.Fatalf("StaticSize gz = %d", gz)
	}

	for _, ae := range []string{"", "identity", "gzip;q=0", "br"} {
		rec = do(t, h, "GET", "/static/wasm/panel.wasm", map[string]string{"Accept-Encoding": ae})
		if rec.Header().Get("Content-Encoding") != "" || !bytes.Equal(rec.Body.Bytes(), raw) {
			t.Fatalf("Accept-Encoding %q: got encoding %q, %d bytes", ae, rec.Header().Get("Content-Encoding"), rec.Body.Len())
		}
	}

	rec = do(t, h, "GET", "/static/app.css", nil)
	etag := rec.Header().Get("ETag")
	if rec.Code != 200 || rec.Body.String() != "body{}" || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/css") || etag == "" {
		t.Fatalf("app.css: %d %q %q etag %q", rec.Code, rec.Body, rec.Header().Get("Content-Type"), etag)
	}
	if rec = do(t, h, "GET", "/static/app.css", map[string]string{"If-None-Match": etag}); rec.Code != http.StatusNotModified {
		t.Fatalf("If-None-Match: %d", rec.Code)
	}
}

// TestEmbeddedStatic checks the real embedded tree loads, whether or not the
// panel has been built.
func TestEmbeddedStatic(t *testing.T) {
	s, err := New(Options{Lab: newTestLab(events.BusOptions{})})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, name := range []string{"app.css", "panel.js"} {
		if _, _, ok := s.StaticSize(name); !ok {
			t.Errorf("embedded %s missing", name)
		}
	}
	if raw, gz, ok := s.StaticSize("wasm/panel.wasm"); ok {
		// Issue 11's budget: what a learner's browser downloads before the
		// live panel, as served.
		rec := do(t, s.Handler(), "GET", "/static/wasm/panel.wasm", map[string]string{"Accept-Encoding": "gzip, deflate, br, zstd"})
		served := rec.Body.Len()
		t.Logf("embedded panel.wasm: %d bytes, %d gzip (%.1f KiB served)", raw, gz, float64(served)/1024)
		if rec.Code != http.StatusOK || rec.Header().Get("Content-Encoding") != "gzip" || rec.Header().Get("Vary") != "Accept-Encoding" || served != gz {
			t.Errorf("panel.wasm: %d, Content-Encoding %q, Vary %q, %d bytes (gzip form %d)",
				rec.Code, rec.Header().Get("Content-Encoding"), rec.Header().Get("Vary"), served, gz)
		}
		if budget := 800 << 10; served > budget {
			t.Errorf("panel.wasm is served in %d bytes gzip, over its %d-byte budget (800 KiB)", served, budget)
		}
	} else {
		t.Log("panel.wasm not built; pages work without the live panel")
	}
}

func TestRenderReturnsErrors(t *testing.T) {
	e := echo.New()
	boom := errors.New("boom")
	failing := templ.ComponentFunc(func(ctx context.Context, w io.Writer) error {
		io.WriteString(w, "<p>half")
		return boom
	})
	rec := httptest.NewRecorder()
	c := e.NewContext(loopbackRequest("GET", "/", nil), rec)
	if err := Render(c, 200, failing); !errors.Is(err, boom) {
		t.Fatalf("Render error = %v, want boom", err)
	}
	if rec.Body.Len() != 0 || c.Response().Committed {
		t.Fatalf("Render wrote %q after failing", rec.Body)
	}
	// Through the error handler that becomes a JSON 500 without the cause.
	s := newTestServer(t, newTestLab(events.BusOptions{}), Options{})
	s.Echo().GET("/boom", func(c echo.Context) error { return Render(c, 200, failing) })
	rec = do(t, s.Handler(), "GET", "/boom", nil)
	wantError(t, rec, 500, "UNKNOWN_SERVER_ERROR")
	if strings.Contains(rec.Body.String(), "boom") || strings.Contains(rec.Body.String(), "half") {
		t.Fatalf("500 body leaks the cause: %s", rec.Body)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	if _, err := New(Options{}); err == nil {
		t.Error("New without Lab succeeded")
	}
	if _, err := New(Options{Lab: newTestLab(events.BusOptions{}), PingInterval: 10, PongWait: 5}); err == nil {
		t.Error("New with PongWait < PingInterval succeeded")
	}
}

// openAPIPath turns an Echo route path into its OpenAPI form: :name → {name},
// a trailing * → {path}.
func openAPIPath(p string) string {
	p = regexp.MustCompile(`:([A-Za-z_]+)`).ReplaceAllString(p, "{$1}")
	if strings.HasSuffix(p, "/*") {
		p = strings.TrimSuffix(p, "*") + "{path}"
	}
	return p
}

// TestOpenAPIMatchesRoutes keeps /api/v1/openapi.json true: every route Echo
// has is documented with its method, and the document has nothing else.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	s := newTestServer(t, newTestLab(events.BusOptions{}), Options{})
	rec := do(t, s.Handler(), "GET", "/api/v1/openapi.json", nil)
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); rec.Code != 200 || err != nil {
		t.Fatalf("openapi.json: %d %v", rec.Code, err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi version %q", doc.OpenAPI)
	}
	var routes, documented []string
	for _, r := range s.Echo().Routes() {
		routes = append(routes, r.Method+" "+openAPIPath(r.Path))
	}
	for p, ops := range doc.Paths {
		for m, op := range ops {
			if m == "parameters" || m == "summary" || m == "description" {
				continue
			}
			documented = append(documented, strings.ToUpper(m)+" "+p)
			var o struct{ Responses map[string]any }
			if err := json.Unmarshal(op, &o); err != nil || len(o.Responses) == 0 {
				t.Errorf("%s %s documents no responses", m, p)
			}
		}
	}
	// Every schema a $ref names exists.
	var full struct {
		Components struct{ Schemas map[string]json.RawMessage }
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &full); err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`"\$ref":\s*"#/components/schemas/([^"]+)"`).FindAllStringSubmatch(rec.Body.String(), -1) {
		if _, ok := full.Components.Schemas[m[1]]; !ok {
			t.Errorf("$ref to missing schema %s", m[1])
		}
	}
	sort.Strings(routes)
	sort.Strings(documented)
	if strings.Join(routes, "\n") != strings.Join(documented, "\n") {
		t.Fatalf("routes and OpenAPI differ\nroutes:\n  %s\ndocumented:\n  %s", strings.Join(routes, "\n  "), strings.Join(documented, "\n  "))
	}
}

// loopbackRequest is httptest.NewRequest sent to 127.0.0.1 instead of
// example.com, which the lab's Host check refuses.
func loopbackRequest(method, target string, body io.Reader) *http.Request {
	r := httptest.NewRequest(method, target, body)
	r.Host = "127.0.0.1"
	return r
}
