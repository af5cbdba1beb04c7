package web

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"tidemark/events"
	"tidemark/i18n"
	"tidemark/lessons"
	"tidemark/server/chaos"
	"tidemark/server/labs"
)

// testClock is a clock a test moves by hand (labs.Options.Now).
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// runsServer is a Server with lessons and chaos runs on max private
// clusters whose idleness is measured with clock.
func runsServer(t *testing.T, max int, clock *testClock) *Server {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	ls, err := labs.New(labs.Options{Root: filepath.Join(t.TempDir(), "labs"), MaxClusters: max, SweepInterval: -1,
		Now: clock.Now, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := lessons.NewService(lessons.Options{Labs: ls, Speed: lessons.SpeedInstant, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := chaos.NewService(chaos.ServiceOptions{Labs: ls, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); svc.Close(); ls.Close() })
	return newTestServer(t, newTestLab(events.BusOptions{}), Options{Lessons: svc, Chaos: cs})
}

// browser is a learner's cookie jar: it keeps what the server sets.
type browser struct {
	t       *testing.T
	h       http.Handler
	cookies map[string]*http.Cookie
}

func (b *browser) send(method, target, contentType, body string) *httptest.ResponseRecorder {
	b.t.Helper()
	req := loopbackRequest(method, target, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for _, c := range b.cookies {
		req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
	}
	rec := httptest.NewRecorder()
	b.h.ServeHTTP(rec, req)
	for _, c := range rec.Result().Cookies() {
		b.cookies[c.Name] = c
	}
	return rec
}

// start starts lesson id with the lesson list's form and returns the run
// it went to; "" and the flash when it came back to the list.
func (b *browser) start(id string) (run, flashText string) {
	b.t.Helper()
	rec := b.send("POST", "/lessons/"+id+"/start", "application/x-www-form-urlencoded", "")
	loc := rec.Header().Get("Location")
	if rec.Code != http.StatusSeeOther {
		b.t.Fatalf("start %s: %d %s", id, rec.Code, rec.Body)
	}
	if run, ok := strings.CutPrefix(loc, "/lessons/runs/"); ok {
		return run, ""
	}
	if c := b.cookies[flashCookie]; c != nil && loc == "/lessons" {
		raw, _ := base64.RawURLEncoding.DecodeString(c.Value)
		delete(b.cookies, flashCookie)
		return "", string(raw[1:])
	}
	b.t.Fatalf("start %s: to %q without a flash", id, loc)
	return "", ""
}

// open returns the ids of GET /api/v1/lessons/runs, checked against the
// OpenAPI document.
func (b *browser) open() []string {
	b.t.Helper()
	rec := b.send("GET", "/api/v1/lessons/runs", "", "")
	if diffs := loadAPIDoc(b.t).conforms("[]LessonOpenRun", rec.Body.Bytes()); rec.Code != 200 || len(diffs) > 0 {
		b.t.Fatalf("GET /api/v1/lessons/runs: %d %s, differs from the OpenAPI schema:\n  %s", rec.Code, rec.Body, strings.Join(diffs, "\n  "))
	}
	var runs []lessons.OpenRun
	if err := json.Unmarshal(rec.Body.Bytes(), &runs); err != nil {
		b.t.Fatal(err)
	}
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	slices.Sort(ids)
	return ids
}

var listedRun = regexp.MustCompile(`<li data-run="([0-9a-f]+)"`)

// TestLessonStartsNeverDeadEnd: one learner starts eight lessons one after
// another on a lab of four private clusters; each start goes to its run
// page, ending the learner's run used longest ago, and /lessons and GET
// /api/v1/lessons/runs list the four newest. A second learner, while those
// four are in use, is refused THROTTLING_QUOTA_EXCEEDED with the seconds
// to wait; once the first learner's oldest has been idle for two minutes
// (the labs clock moved, no sleep) their start takes its place.
func TestLessonStartsNeverDeadEnd(t *testing.T) {
	clock := &testClock{now: time.Unix(1_000_000, 0)}
	s := runsServer(t, 4, clock)
	ann := &browser{t: t, h: s.Handler(), cookies: map[string]*http.Cookie{}}
	var started []string
	for _, l := range lessons.All()[:8] {
		run, flash := ann.start(l.ID)
		if run == "" {
			t.Fatalf("start %d (%s): refused %q", len(started)+1, l.ID, flash)
		}
		started = append(started, run)
		clock.Add(time.Second)
		want := slices.Sorted(slices.Values(started[max(0, len(started)-4):]))
		if got := ann.open(); !slices.Equal(got, want) {
			t.Fatalf("after %d starts the open runs are %v, want the newest four %v", len(started), got, want)
		}
	}
	c := ann.cookies[learnerCookie]
	if c == nil || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || !validLearnerID(c.Value) {
		t.Fatalf("learner cookie %+v, want a random HttpOnly SameSite=Lax id", c)
	}
	for _, id := range started[:4] {
		wantError(t, ann.send("GET", "/api/v1/lessons/runs/"+id, "", ""), 404, CodeNotFound)
	}
	page := ann.send("GET", "/lessons", "", "").Body.String()
	_, list, _ := strings.Cut(page, `data-testid="open-runs"`)
	list, _, _ = strings.Cut(list, "</ul>")
	var listed []string
	for _, m := range listedRun.FindAllStringSubmatch(list, -1) {
		listed = append(listed, m[1])
	}
	slices.Sort(listed)
	if want := slices.Sorted(slices.Values(started[4:])); !slices.Equal(listed, want) {
		t.Fatalf("/lessons lists %v in open-runs, want %v", listed, want)
	}
	if n := strings.Count(list, `data-end="`); n != 4 {
		t.Fatalf("%d End buttons in open-runs, want 4", n)
	}

	// Bob: every slot is Ann's, used within two minutes.
	bob := &browser{t: t, h: s.Handler(), cookies: map[string]*http.Cookie{}}
	if got := bob.open(); len(got) != 0 {
		t.Fatalf("a new browser lists %v", got)
	}
	if strings.Contains(bob.send("GET", "/lessons", "", "").Body.String(), `data-testid="open-runs"`) {
		t.Fatal("/lessons shows open runs to a learner who has none")
	}
	rec := bob.send("POST", "/api/v1/lessons/08-hw/runs", "", "")
	wantError(t, rec, 429, "THROTTLING_QUOTA_EXCEEDED")
	var e struct{ Error Error }
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil {
		t.Fatal(err)
	}
	// Ann's oldest open run was used 4 s ago (one tick per start since).
	if e.Error.Key != "limits.clusters-full.wait" || !slices.Equal(e.Error.Args, []string{"4", "116"}) ||
		!strings.Contains(e.Error.Message, "counts as idle in 1m56s") {
		t.Fatalf("refusal %+v, want limits.clusters-full.wait with 4 clusters and 116 s to wait", e.Error)
	}
	bob.cookies[i18n.CookieName] = &http.Cookie{Name: i18n.CookieName, Value: string(i18n.SimplifiedChinese)}
	if run, flash := bob.start("08-hw"); run != "" || flash != "THROTTLING_QUOTA_EXCEEDED: "+i18n.T(i18n.SimplifiedChinese, "limits.clusters-full.wait", "4", "116") {
		t.Fatalf("the form: run %q flash %q, want the translated refusal", run, flash)
	}
	clock.Add(116 * time.Second)
	run, flash := bob.start("08-hw")
	if run == "" {
		t.Fatalf("after two idle minutes: refused %q", flash)
	}
	if got, want := ann.open(), slices.Sorted(slices.Values(started[5:])); !slices.Equal(got, want) {
		t.Fatalf("Ann's open runs %v, want %v (her oldest made room)", got, want)
	}
	if got := bob.open(); !slices.Equal(got, []string{run}) {
		t.Fatalf("Bob's open runs %v, want [%s]", got, run)
	}
}

// TestFinishedRunLeaves: a run whose every step ran is finished: listed as
// such, ended by the page's leave beacon (which leaves an unfinished run
// alone) and by End even after it ended, and a chaos run or a comparison
// started on a full lab ends the learner's own lesson run to make room.
func TestFinishedRunLeaves(t *testing.T) {
	clock := &testClock{now: time.Unix(1_000_000, 0)}
	s := runsServer(t, 1, clock)
	ann := &browser{t: t, h: s.Handler(), cookies: map[string]*http.Cookie{}}
	run, flash := ann.start("01-partitions")
	if run == "" {
		t.Fatal(flash)
	}
	form := "application/x-www-form-urlencoded"
	if rec := ann.send("POST", "/lessons/runs/"+run+"/leave", form, ""); rec.Code != 204 || len(ann.open()) != 1 {
		t.Fatalf("leave on an unfinished run: %d, open %v", rec.Code, ann.open())
	}
	for i := 0; ; i++ {
		var st lessons.RunState
		rec := ann.send("GET", "/api/v1/lessons/runs/"+run, "", "")
		if err := json.Unmarshal(rec.Body.Bytes(), &st); rec.Code != 200 || err != nil || i > 50 {
			t.Fatalf("step %d: %d %s", i, rec.Code, rec.Body)
		}
		if st.Executed == st.Total {
			break
		}
		if p := st.Steps[st.Cursor].Prediction; p != nil {
			rec = ann.send("POST", "/api/v1/lessons/runs/"+run+"/predict", "application/json", `{"choice":"`+p.Choices[0].ID+`"}`)
		} else {
			rec = ann.send("POST", "/api/v1/lessons/runs/"+run+"/next", "", "")
		}
		if rec.Code != 200 {
			t.Fatalf("step %d: %d %s", i, rec.Code, rec.Body)
		}
	}
	if !strings.Contains(ann.send("GET", "/lessons", "", "").Body.String(), `data-finished="true"`) {
		t.Fatal("/lessons does not show the run finished")
	}
	if rec := ann.send("POST", "/lessons/runs/"+run+"/leave", form, ""); rec.Code != 204 || len(ann.open()) != 0 {
		t.Fatalf("leave on a finished run: %d, open %v", rec.Code, ann.open())
	}
	if rec := ann.send("POST", "/lessons/runs/"+run+"/stop", form, ""); rec.Code != 303 || rec.Header().Get("Location") != "/lessons" {
		t.Fatalf("End on an ended run: %d %q, want back to /lessons", rec.Code, rec.Header().Get("Location"))
	}

	run, flash = ann.start("01-partitions")
	if run == "" {
		t.Fatal(flash)
	}
	rec := ann.send("POST", "/api/v1/chaos", "application/json", `{"seed":1,"actions":5}`)
	if rec.Code != 201 {
		t.Fatalf("a chaos run on a full lab of the learner's own lesson run: %d %s", rec.Code, rec.Body)
	}
	if got := ann.open(); len(got) != 0 {
		t.Fatalf("the lesson run %v is still open after the chaos run took its place", got)
	}
	var st chaos.RunState
	json.Unmarshal(rec.Body.Bytes(), &st)
	waitChaos(t, s, st.ID) // a finished chaos run gives its cluster back

	// A comparison likewise.
	if run, flash = ann.start("01-partitions"); run == "" {
		t.Fatal(flash)
	}
	rec = ann.send("POST", "/api/v1/compare", "application/json", `{"seed":1,"actions":3,"protocols":["isr"]}`)
	if rec.Code != 201 {
		t.Fatalf("a comparison on a full lab of the learner's own lesson run: %d %s", rec.Code, rec.Body)
	}
	if got := ann.open(); len(got) != 0 {
		t.Fatalf("the lesson run %v is still open after the comparison took its place", got)
	}
	var cs chaos.CompareState
	json.Unmarshal(rec.Body.Bytes(), &cs)
	for deadline := time.Now().Add(60 * time.Second); !cs.Done(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("comparison %s not done: %+v", cs.ID, cs.Progress)
		}
		json.Unmarshal(ann.send("GET", "/api/v1/compare/"+cs.ID, "", "").Body.Bytes(), &cs)
	}
}

// TestWatchedRunIsNeverIdle: a run whose page is open (its /ws stream) is
// in use however long nobody clicks: another learner is refused, with the
// text for every cluster held rather than a time to wait. Once the page
// closes, two idle minutes later (labs clock) another learner's start
// ends it.
func TestWatchedRunIsNeverIdle(t *testing.T) {
	clock := &testClock{now: time.Unix(1_000_000, 0)}
	s := runsServer(t, 1, clock)
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	ann := &browser{t: t, h: s.Handler(), cookies: map[string]*http.Cookie{}}
	run, flash := ann.start("01-partitions")
	if run == "" {
		t.Fatal(flash)
	}
	url := "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws?run=" + run
	conn, resp, err := websocket.DefaultDialer.Dial(url, http.Header{"Origin": {srv.URL}})
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	c := &wsClient{t: t, conn: conn}
	if m := c.next(); m.Type != events.MessageSnapshot { // held from before the snapshot
		t.Fatalf("first message %+v", m)
	}
	clock.Add(time.Hour)
	bob := &browser{t: t, h: s.Handler(), cookies: map[string]*http.Cookie{}}
	rec := bob.send("POST", "/api/v1/lessons/01-partitions/runs", "", "")
	wantError(t, rec, 429, "THROTTLING_QUOTA_EXCEEDED")
	var e struct{ Error Error }
	if json.Unmarshal(rec.Body.Bytes(), &e); e.Error.Key != "limits.clusters-full.busy" {
		t.Fatalf("refusal %+v, want limits.clusters-full.busy", e.Error)
	}
	if got := ann.open(); !slices.Equal(got, []string{run}) {
		t.Fatalf("Ann's open runs %v", got)
	}
	conn.Close()
	// The server sees the close on its own goroutine: each try moves the
	// labs clock two minutes on, so the first after the release succeeds.
	deadline := time.Now().Add(10 * time.Second)
	for {
		clock.Add(2 * time.Minute)
		if rec := bob.send("POST", "/api/v1/lessons/01-partitions/runs", "", ""); rec.Code == 201 {
			break
		} else if rec.Code != 429 || time.Now().After(deadline) {
			t.Fatalf("after the page closed: %d %s", rec.Code, rec.Body)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := ann.open(); len(got) != 0 {
		t.Fatalf("Ann's idle run %v was not ended", got)
	}
}
