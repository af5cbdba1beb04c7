package server

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"tidemark/server/class"
	"tidemark/server/web"
)

// classLab is a lab started in class mode, as printed at start.
type classLab struct {
	url     string // ends in /
	teacher string
	codes   []string // by seat, from 1
}

func startClass(t *testing.T, dir string, args ...string) (classLab, func() error) {
	t.Helper()
	return startClassWith(t, dir, nil, args...)
}

func startClassWith(t testing.TB, dir string, change func(*config), args ...string) (classLab, func() error) {
	t.Helper()
	u, _, out, stop := startRunWith(t, dir, change, append([]string{"--brokers", "2", "--class", "Distributed Systems 101"}, args...)...)
	l := classLab{url: u}
	if m := regexp.MustCompile(`teacher: \S+/class\?token=(\S+)`).FindStringSubmatch(out.String()); m != nil {
		l.teacher = m[1]
	}
	for _, m := range regexp.MustCompile(`seat \d+(?: \([^)]*\))?: code (\S+)  \S+/join\?code=(\S+)`).FindAllStringSubmatch(out.String(), -1) {
		if m[1] != m[2] {
			t.Fatalf("seat line's code %s and link's %s differ", m[1], m[2])
		}
		l.codes = append(l.codes, m[1])
	}
	if l.teacher == "" || len(l.codes) == 0 {
		t.Fatalf("no teacher link or codes printed:\n%s", out)
	}
	return l, stop
}

// call sends one request with token as Authorization: Bearer ("" none) and
// returns the status and body; redirects are not followed.
func (l classLab) call(t testing.TB, method, path, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, l.url+strings.TrimPrefix(path, "/"), strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func (l classLab) join(t testing.TB, seat int, name string) string {
	t.Helper()
	b, _ := json.Marshal(web.JoinRequest{Code: l.codes[seat-1], Name: name})
	status, body := l.call(t, "POST", "/api/v1/join", "", string(b))
	var res web.JoinResponse
	if status != http.StatusCreated || json.Unmarshal([]byte(body), &res) != nil || res.Seat != seat || res.Token == "" {
		t.Fatalf("join seat %d: %d %s", seat, status, body)
	}
	return res.Token
}

// brokerState returns broker id's state in the cluster token sees.
func (l classLab) brokerState(t *testing.T, token string, id int32) string {
	t.Helper()
	status, body := l.call(t, "GET", "/api/v1/cluster", token, "")
	var cr web.ClusterResponse
	if status != 200 || json.Unmarshal([]byte(body), &cr) != nil {
		t.Fatalf("GET /api/v1/cluster: %d %s", status, body)
	}
	for _, b := range cr.Brokers {
		if b.ID == id {
			return string(b.State)
		}
	}
	return "missing"
}

// openAPIRoutes lists every method and path of the OpenAPI document, with
// its path parameters filled in with plausible values.
func (l classLab) openAPIRoutes(t *testing.T) [][2]string {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	status, body := l.call(t, "GET", "/api/v1/openapi.json", "", "")
	if err := json.Unmarshal([]byte(body), &doc); status != 200 || err != nil {
		t.Fatalf("the OpenAPI document without a token: %d %v", status, err)
	}
	fill := strings.NewReplacer("{id}", "1", "{topic}", "demo", "{partition}", "0", "{run}", "0123456789abcdef",
		"{action}", "next", "{seat}", "1", "{path}", "app.css")
	var out [][2]string
	for p, ops := range doc.Paths {
		for m := range ops {
			if m != "parameters" {
				out = append(out, [2]string{strings.ToUpper(m), fill.Replace(p)})
			}
		}
	}
	return out
}

// TestClassIsolation: two learners each get a private cluster — one
// crashes a broker, the other's and the teacher's are untouched — and no
// token reaches what is not its own: every route without a token is 401
// (pages go to /join), the teacher's routes are 403 with a seat token, a
// seat's lesson and chaos runs are 404 for the other seat and for the
// teacher.
func TestClassIsolation(t *testing.T) {
	l, _ := startClass(t, t.TempDir(), "--seats", "2")
	ada, bob := l.join(t, 1, "Ada"), l.join(t, 2, "Bob")

	if status, body := l.call(t, "POST", "/api/v1/brokers/1/crash", ada, ""); status/100 != 2 {
		t.Fatalf("seat 1 crashing broker 1: %d %s", status, body)
	}
	if got := l.brokerState(t, ada, 1); got == "up" {
		t.Fatalf("seat 1's broker 1 is %s after its crash", got)
	}
	if got := l.brokerState(t, bob, 1); got != "up" {
		t.Fatalf("seat 2's broker 1 is %s: seat 1's crash reached it", got)
	}
	if got := l.brokerState(t, l.teacher, 1); got != "up" {
		t.Fatalf("the teacher's broker 1 is %s: seat 1's crash reached it", got)
	}

	for _, r := range l.openAPIRoutes(t) {
		method, path := r[0], r[1]
		status, body := l.call(t, method, path, "", "")
		switch {
		case path == "/api/v1/join" || path == "/api/v1/openapi.json" || strings.HasPrefix(path, "/static/") ||
			path == "/ui/lang" || path == "/join":
			continue // public
		case method == "GET" && !strings.HasPrefix(path, "/api/") && path != "/ws" && path != "/metrics":
			if status != http.StatusSeeOther {
				t.Errorf("%s %s without a token: %d, want 303 to /join", method, path, status)
			}
		case status != http.StatusUnauthorized || !strings.Contains(body, "SASL_AUTHENTICATION_FAILED"):
			t.Errorf("%s %s without a token: %d %s, want 401 SASL_AUTHENTICATION_FAILED", method, path, status, body)
		}
		if strings.HasPrefix(path, "/api/v1/class") || strings.HasPrefix(path, "/class") {
			if status, body := l.call(t, method, path, ada, ""); status != http.StatusForbidden {
				t.Errorf("%s %s with a seat token: %d %s, want 403", method, path, status, body)
			}
		}
	}
	if status, _ := l.call(t, "GET", "/api/v1/cluster", "tms_forged", ""); status != http.StatusUnauthorized {
		t.Errorf("a forged seat token: %d, want 401", status)
	}

	status, body := l.call(t, "POST", "/api/v1/lessons/01-partitions/runs", ada, `{"speed":"instant"}`)
	var run struct{ ID string }
	if status != http.StatusCreated || json.Unmarshal([]byte(body), &run) != nil || run.ID == "" {
		t.Fatalf("seat 1 starting a lesson: %d %s", status, body)
	}
	for who, tok := range map[string]string{"seat 2": bob, "the teacher": l.teacher} {
		if status, _ := l.call(t, "GET", "/api/v1/lessons/runs/"+run.ID, tok, ""); status != http.StatusNotFound {
			t.Errorf("%s reading seat 1's lesson run: %d, want 404", who, status)
		}
		if status, _ := l.call(t, "POST", "/api/v1/lessons/runs/"+run.ID+"/next", tok, ""); status != http.StatusNotFound {
			t.Errorf("%s driving seat 1's lesson run: %d, want 404", who, status)
		}
	}
	if status, _ := l.call(t, "GET", "/api/v1/lessons/runs/"+run.ID, ada, ""); status != http.StatusOK {
		t.Errorf("seat 1 reading its own lesson run: %d", status)
	}

	status, body = l.call(t, "POST", "/api/v1/chaos", ada, `{"seed":1,"config":"strict","actions":5}`)
	var chaosRun struct{ ID string }
	if status != http.StatusCreated || json.Unmarshal([]byte(body), &chaosRun) != nil || chaosRun.ID == "" {
		t.Fatalf("seat 1 starting a chaos run: %d %s", status, body)
	}
	for who, tok := range map[string]string{"seat 2": bob, "the teacher": l.teacher} {
		if status, _ := l.call(t, "GET", "/api/v1/chaos/"+chaosRun.ID, tok, ""); status != http.StatusNotFound {
			t.Errorf("%s reading seat 1's chaos run: %d, want 404", who, status)
		}
	}
	if status, _ := l.call(t, "GET", "/api/v1/chaos/"+chaosRun.ID, ada, ""); status != http.StatusOK {
		t.Errorf("seat 1 reading its own chaos run: %d", status)
	}
}

// TestClassSurvivesRestart: the seats, joined names, seat tokens, the
// seat's own cluster and its lesson progress are there after a restart.
func TestClassSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	l, stop := startClass(t, dir, "--seats", "2")
	ada := l.join(t, 1, "Ada")
	if status, body := l.call(t, "POST", "/api/v1/topics", ada, `{"name":"adas","partitions":1,"replication_factor":1}`); status != http.StatusCreated {
		t.Fatalf("seat 1 creating a topic: %d %s", status, body)
	}
	status, body := l.call(t, "POST", "/api/v1/lessons/01-partitions/runs", ada, `{"speed":"instant"}`)
	var run struct{ ID string }
	if status != http.StatusCreated || json.Unmarshal([]byte(body), &run) != nil {
		t.Fatalf("starting a lesson: %d %s", status, body)
	}
	if status, body := l.call(t, "POST", "/api/v1/lessons/runs/"+run.ID+"/next", ada, ""); status != http.StatusOK {
		t.Fatalf("next: %d %s", status, body)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	l2, _ := startClass(t, dir)
	if l2.teacher == l.teacher || len(l2.codes) != 2 || l2.codes[0] != l.codes[0] {
		t.Fatalf("after restart: teacher token reused %v, codes %q (were %q)", l2.teacher == l.teacher, l2.codes, l.codes)
	}
	l.url = l2.url
	status, body = l.call(t, "GET", "/api/v1/topics/adas", ada, "")
	if status != http.StatusOK {
		t.Fatalf("seat 1's topic after restart, with its old token: %d %s", status, body)
	}
	for _, tok := range []string{l.teacher, l2.teacher} { // both starts' teacher links work
		status, body = l.call(t, "GET", "/api/v1/class", tok, "")
		var cr web.ClassResponse
		if status != http.StatusOK || json.Unmarshal([]byte(body), &cr) != nil {
			t.Fatalf("GET /api/v1/class: %d %s", status, body)
		}
		if cr.Name != "Distributed Systems 101" || len(cr.Seats) != 2 || cr.Seats[0].Name != "Ada" ||
			len(cr.Seats[0].Lessons) != 1 || cr.Seats[0].Lessons[0].Lesson != "01-partitions" || cr.Seats[0].Lessons[0].Executed < 1 {
			t.Fatalf("class after restart: %s", body)
		}
	}
	if status, _ := l.call(t, "GET", "/api/v1/topics/adas", l2.teacher, ""); status != http.StatusNotFound {
		t.Fatalf("seat 1's topic in the teacher's cluster: %d, want 404", status)
	}
}

// TestParseClassFlags: only class mode may listen beyond loopback; the
// class flags need --class.
func TestParseClassFlags(t *testing.T) {
	c, err := parseFlags([]string{"--class", "DS 101", "--seats", "40", "--addr", "0.0.0.0:8080", "--max-awake-seats", "12"}, io.Discard)
	if err != nil || c.className != "DS 101" || c.seats != 40 || c.maxAwakeSeats != 12 {
		t.Fatalf("class flags = %+v, %v", c, err)
	}
	for _, args := range [][]string{
		{"--addr", "0.0.0.0:8080"}, {"--seats", "3"}, {"--max-awake-seats", "3"},
		{"--class", "x", "--seats", "-1"}, {"--class", "x", "--seats", "501"}, {"--class", "x", "--hibernate-after", "0s"},
		{"--class", "x", "--observe", "127.0.0.1:9092"},
	} {
		if _, err := parseFlags(args, io.Discard); err == nil {
			t.Errorf("parseFlags(%q) accepted", args)
		}
	}
}

// TestClassTeacher: the teacher adds seats, exports progress as CSV and
// JSON and resets a seat (its token stops working, its code changes); the
// join page and its form set an HttpOnly, SameSite=Strict cookie; a wrong
// code is refused in the page's language.
func TestClassTeacher(t *testing.T) {
	l, _ := startClass(t, t.TempDir(), "--seats", "1")
	ada := l.join(t, 1, "=cmd|Ada")

	status, body := l.call(t, "POST", "/api/v1/class/seats", l.teacher, `{"count":2}`)
	var added web.AddSeatsResponse
	if status != http.StatusCreated || json.Unmarshal([]byte(body), &added) != nil || len(added.Seats) != 2 ||
		added.Seats[1].Seat != 3 || !strings.HasSuffix(added.Seats[1].JoinURL, "/join?code="+added.Seats[1].Code) {
		t.Fatalf("adding 2 seats: %d %s", status, body)
	}
	if status, _ := l.call(t, "POST", "/api/v1/class/seats", l.teacher, `{"count":0}`); status != http.StatusBadRequest {
		t.Fatalf("adding 0 seats: %d, want 400", status)
	}

	status, body = l.call(t, "GET", "/api/v1/class/export?format=csv", l.teacher, "")
	if status != 200 || !strings.HasPrefix(body, "row,seat,name,kind,lesson,exercise,title,step,choice,right,at,joined,lessons_started,lessons_done,predictions,right_first,exercises_passed,checks,failed_checks\nsummary,1,'=cmd|Ada,") ||
		strings.Count(body, "\n") != 4 {
		t.Fatalf("CSV export: %d\n%s", status, body)
	}
	if status, body = l.call(t, "GET", "/api/v1/class/export?format=json", l.teacher, ""); status != 200 || !strings.Contains(body, `"name":"=cmd|Ada"`) {
		t.Fatalf("JSON export: %d %s", status, body)
	}
	if status, _ = l.call(t, "GET", "/api/v1/class/export?format=xml", l.teacher, ""); status != http.StatusBadRequest {
		t.Fatalf("export as xml: %d, want 400", status)
	}
	if status, body = l.call(t, "GET", "/class", l.teacher, ""); status != 200 || !strings.Contains(body, `data-testid="seat-3"`) {
		t.Fatalf("dashboard: %d", status)
	}
	if status, body = l.call(t, "GET", "/class/seats/1", l.teacher, ""); status != 200 || !strings.Contains(body, `data-testid="projection"`) {
		t.Fatalf("projection: %d", status)
	}
	if status, body = l.call(t, "GET", "/metrics", l.teacher, ""); status != 200 || !strings.Contains(body, `cluster="seat-1"`) {
		t.Fatalf("the teacher's /metrics does not report awake seat 1: %d", status)
	}
	if status, _ = l.call(t, "GET", "/metrics", "", ""); status != http.StatusUnauthorized {
		t.Fatalf("/metrics without a token in class mode: %d, want 401", status)
	}

	for _, unconfirmed := range []string{"", `{}`, `{"confirm":false}`} {
		status, body = l.call(t, "POST", "/api/v1/class/seats/1/reset", l.teacher, unconfirmed)
		if status != http.StatusBadRequest || !strings.Contains(body, `"code":"INVALID_REQUEST"`) || !strings.Contains(body, "class.seat.reset-confirm") {
			t.Fatalf("reset without confirmation (%q): %d %s", unconfirmed, status, body)
		}
	}
	if status, _ = l.call(t, "GET", "/api/v1/cluster", ada, ""); status != 200 {
		t.Fatalf("an unconfirmed reset signed the learner out: %d", status)
	}
	status, body = l.call(t, "POST", "/api/v1/class/seats/1/reset", l.teacher, `{"confirm":true}`)
	var seat web.SeatResponse
	if status != 200 || json.Unmarshal([]byte(body), &seat) != nil || seat.Code == l.codes[0] || seat.Name != "" {
		t.Fatalf("reset: %d %s", status, body)
	}
	if status, _ = l.call(t, "GET", "/api/v1/cluster", ada, ""); status != http.StatusUnauthorized {
		t.Fatalf("a reset seat's old token: %d, want 401", status)
	}
	if status, _ = l.call(t, "POST", "/api/v1/class/seats/9/reset", l.teacher, `{"confirm":true}`); status != http.StatusNotFound {
		t.Fatalf("resetting seat 9 of 3: %d, want 404", status)
	}

	// The join form: cookie set, then the pages are the seat's.
	form := "code=" + seat.Code + "&name=Ada"
	req, _ := http.NewRequest("POST", l.url+"join", strings.NewReader(form))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var ck *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "tidemark_seat" {
			ck = c
		}
	}
	if resp.StatusCode != http.StatusSeeOther || ck == nil || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode {
		t.Fatalf("join form: %d, cookie %+v", resp.StatusCode, ck)
	}
	req, _ = http.NewRequest("GET", l.url, nil)
	req.AddCookie(ck)
	if resp, err = noRedirect.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("the overview with the seat cookie: %v %v", resp, err)
	}
	resp.Body.Close()

	req, _ = http.NewRequest("POST", l.url+"join", strings.NewReader("code=AAAAA-AAAAA&name=Eve"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept-Language", "zh-CN")
	if resp, err = noRedirect.Do(req); err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(b), "没有座位使用这个加入码") {
		t.Fatalf("a wrong code on a Chinese join page: %d\n%s", resp.StatusCode, b)
	}
}

// TestJoinRateLimited: of 100 joins sent at once from one address, at most
// the burst of 60 (and what refills meanwhile) get through to the code
// check; the rest are 429 THROTTLING_QUOTA_EXCEEDED, whatever
// X-Forwarded-For says.
func TestJoinRateLimited(t *testing.T) {
	l, _ := startClass(t, t.TempDir(), "--seats", "1")
	var (
		mu        sync.Mutex
		wg        sync.WaitGroup
		throttled int
	)
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("POST", l.url+"api/v1/join", strings.NewReader(`{"code":"AAAAA-AAAAA","name":"Eve"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Forwarded-For", "10.0.0."+strconv.Itoa(i))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			mu.Lock()
			defer mu.Unlock()
			switch {
			case resp.StatusCode == http.StatusTooManyRequests && strings.Contains(string(b), "THROTTLING_QUOTA_EXCEEDED"):
				throttled++
			case resp.StatusCode != http.StatusUnauthorized:
				t.Errorf("join %d: %d %s", i, resp.StatusCode, b)
			}
		}()
	}
	wg.Wait()
	if throttled < 20 {
		t.Fatalf("%d of 100 joins sent at once throttled, want at least 20 (burst 60)", throttled)
	}
}

// TestClassExercises: a learner checks find-offset through the API with
// their token (a wrong answer, then the right one from the lookup route),
// the other seat has not passed it, the teacher sees the pass in GET
// /api/v1/class and can run the same check for any seat (an external
// autograder), and a live exercise is graded from the seat's own events:
// acks=all acknowledged while a broker is down.
func TestClassExercises(t *testing.T) {
	l, _ := startClass(t, t.TempDir(), "--seats", "2", "--brokers", "3")
	ada, bob := l.join(t, 1, "Ada"), l.join(t, 2, "Bob")
	for _, n := range []int{3, 3} {
		recs := strings.Repeat(`{"value":"v"},`, n)
		body := `{"partition":0,"acks":"1","records":[` + strings.TrimSuffix(recs, ",") + `]}`
		if status, b := l.call(t, "POST", "/api/v1/topics/demo/records", ada, body); status != 200 {
			t.Fatalf("produce: %d %s", status, b)
		}
	}
	status, body := l.call(t, "GET", "/api/v1/brokers/1/partitions/demo/0/lookup?offset=5", ada, "")
	var lk struct {
		SegmentFile string `json:"segment_file"`
		Position    int64  `json:"position"`
	}
	if status != 200 || json.Unmarshal([]byte(body), &lk) != nil || lk.SegmentFile == "" {
		t.Fatalf("lookup: %d %s", status, body)
	}
	check := func(token, path, answer string) web.ExerciseResponse {
		t.Helper()
		status, body := l.call(t, "POST", path, token, answer)
		var r web.ExerciseResponse
		if status != 200 || json.Unmarshal([]byte(body), &r) != nil {
			t.Fatalf("POST %s: %d %s", path, status, body)
		}
		return r
	}
	if r := check(ada, "/api/v1/exercises/find-offset/check", `{"segment":"`+lk.SegmentFile+`","position":`+strconv.FormatInt(lk.Position+1, 10)+`}`); r.Passed {
		t.Fatalf("a wrong position passed: %+v", r)
	}
	if r := check(ada, "/api/v1/exercises/find-offset/check", `{"segment":"`+lk.SegmentFile+`","position":`+strconv.FormatInt(lk.Position, 10)+`}`); !r.Passed || r.Task["zh-Hans"] == "" {
		t.Fatalf("the right answer: %+v", r)
	}
	if r := check(l.teacher, "/api/v1/class/seats/2/exercises/find-offset/check", ""); r.Passed {
		t.Fatalf("seat 2 passed seat 1's exercise: %+v", r)
	}
	if status, page := l.call(t, "GET", "/exercises", ada, ""); status != 200 || !strings.Contains(page, `data-testid="exercise-find-offset" data-passed="true"`) {
		t.Fatalf("Ada's exercises page: %d", status)
	}
	if _, page := l.call(t, "GET", "/", ada, ""); !strings.Contains(page, `href="/exercises"`) || strings.Contains(page, `href="/class"`) {
		t.Fatal("a learner's nav should link the exercises, not the dashboard")
	}
	if _, page := l.call(t, "GET", "/", l.teacher, ""); strings.Contains(page, `href="/exercises"`) || !strings.Contains(page, `href="/class"`) {
		t.Fatal("the teacher's nav should link the dashboard, not the exercises")
	}
	if status, _ := l.call(t, "GET", "/api/v1/exercises", l.teacher, ""); status != http.StatusNotFound {
		t.Fatalf("the teacher's own exercises: %d, want 404", status)
	}

	// acks-all-one-down, live: crash broker 3, produce with acks=all.
	if status, b := l.call(t, "POST", "/api/v1/brokers/3/crash", bob, ""); status != 200 {
		t.Fatalf("crash: %d %s", status, b)
	}
	// The seat's clock runs: until the controller has fenced broker 3 and
	// the ISR has settled, a produce may be refused with a retriable error
	// (NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS…), which a Kafka
	// producer retries; so does this one, a bounded number of times.
	for i := 0; ; i++ {
		status, b := l.call(t, "POST", "/api/v1/topics/demo/records", bob, `{"partition":0,"acks":"all","records":[{"value":"x"}]}`)
		if status == 200 {
			break
		}
		if i == 50 || status != http.StatusServiceUnavailable {
			t.Fatalf("acks=all produce with broker 3 down: %d %s", status, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The acknowledgement's event is published by the leader after it
	// answers, so the grader may see it a moment after the produce returns:
	// ask again (bounded) until it has.
	var list []web.ExerciseResponse
	for i := 0; ; i++ {
		status, body = l.call(t, "GET", "/api/v1/exercises", bob, "")
		list = nil
		if status != 200 || json.Unmarshal([]byte(body), &list) != nil || len(list) != len(class.Exercises) {
			t.Fatalf("Bob's exercises: %d %s", status, body)
		}
		if slices.ContainsFunc(list, func(r web.ExerciseResponse) bool { return r.ID == "acks-all-one-down" && r.Passed }) || i == 500 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, r := range list {
		if want := r.ID == "acks-all-one-down"; r.Passed != want {
			t.Errorf("Bob's %s: passed %v, want %v", r.ID, r.Passed, want)
		}
	}

	status, body = l.call(t, "GET", "/api/v1/class", l.teacher, "")
	var cr web.ClassResponse
	if status != 200 || json.Unmarshal([]byte(body), &cr) != nil {
		t.Fatal(status, body)
	}
	passed := func(s web.SeatResponse) (out []string) {
		for _, r := range s.Exercises {
			if r.Passed {
				out = append(out, r.Exercise)
			}
		}
		return out
	}
	if a, b := passed(cr.Seats[0]), passed(cr.Seats[1]); len(a) != 1 || a[0] != "find-offset" || len(b) != 1 || b[0] != "acks-all-one-down" {
		t.Fatalf("the teacher sees passes %v and %v", a, b)
	}
}

// TestClassFull: with one awake seat allowed and seat 1's page open (its
// websocket keeps it awake), seat 2 gets 429 THROTTLING_QUOTA_EXCEEDED
// with the class's own text — on a Chinese page in Chinese, never Kafka's
// description — and gets in once seat 1 closes its page.
func TestClassFull(t *testing.T) {
	l, _ := startClass(t, t.TempDir(), "--seats", "2", "--max-awake-seats", "1")
	ada, bob := l.join(t, 1, "Ada"), l.join(t, 2, "Bob")
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(l.url, "http")+"ws",
		http.Header{"Authorization": {"Bearer " + ada}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ws.ReadMessage(); err != nil { // the snapshot: seat 1 is awake
		t.Fatal(err)
	}
	status, body := l.call(t, "GET", "/api/v1/cluster", bob, "")
	if status != http.StatusTooManyRequests || !strings.Contains(body, `"code":"THROTTLING_QUOTA_EXCEEDED"`) || !strings.Contains(body, `"key":"class.full"`) {
		t.Fatalf("seat 2 in a full class: %d %s", status, body)
	}
	req, _ := http.NewRequest("GET", l.url, nil)
	req.Header.Set("Authorization", "Bearer "+bob)
	req.Header.Set("Accept-Language", "zh-CN")
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(page), "课堂此刻已满") || strings.Contains(string(page), "throttling quota") {
		t.Fatalf("seat 2's overview in a full class, in Chinese: %d\n%s", resp.StatusCode, page)
	}
	ws.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if status, _ = l.call(t, "GET", "/api/v1/cluster", bob, ""); status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("seat 2 after seat 1 closed its page: %d", status)
		}
		time.Sleep(20 * time.Millisecond) // the server notices the closed websocket
	}
}
