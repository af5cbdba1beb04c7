package server

import (
	"encoding/base64"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"tidemark/i18n"
	"tidemark/server/web"
)

// TestClassSeatSeesNoServerPaths: nothing a seat can GET (every GET route of
// the OpenAPI document, the segment explorer among them) shows the server's
// data directory: a learner must not learn the teacher's file-system layout.
// The segment explorer shows a replica's directory relative to it.
func TestClassSeatSeesNoServerPaths(t *testing.T) {
	dir := t.TempDir()
	l, _ := startClass(t, dir, "--seats", "1")
	ada := l.join(t, 1, "Ada")
	if status, body := l.call(t, "POST", "/api/v1/topics/demo/records", ada, `{"acks":"all","partition":0,"records":[{"value":"a"}]}`); status != http.StatusOK {
		t.Fatalf("seat 1 producing: %d %s", status, body)
	}
	routes := append(l.openAPIRoutes(t), [2]string{"GET", "/api/v1/brokers/1/partitions/demo/0/lookup?offset=0"})
	for _, r := range routes {
		if r[0] != "GET" || r[1] == "/ws" {
			continue
		}
		status, body := l.call(t, "GET", r[1], ada, "")
		if status >= 500 && status != http.StatusNotImplemented { // 501: a class observes no Kafka cluster (/api/v1/observe)
			t.Errorf("GET %s as a seat: %d %s", r[1], status, body)
		}
		if strings.Contains(body, dir) {
			i := strings.Index(body, dir)
			t.Errorf("GET %s as a seat shows the server's data directory: …%s…", r[1], body[max(0, i-40):min(len(body), i+len(dir)+40)])
		}
	}
	_, body := l.call(t, "GET", "/api/v1/brokers/1/partitions/demo/0/segments", ada, "")
	if !strings.Contains(body, `"dir":"broker-1/demo-0"`) {
		t.Errorf("the segments' dir is not relative to the data directory: %s", body)
	}
	_, page := l.call(t, "GET", "/brokers/1/partitions/demo/0/segments", ada, "")
	if !strings.Contains(page, "<code>broker-1/demo-0</code>") {
		t.Errorf("the segment explorer does not show broker-1/demo-0")
	}
}

// getIn GETs path with token in lang (the language cookie); a status
// other than 200 fails the test.
func (l classLab) getIn(t *testing.T, path, token string, lang i18n.Lang) string {
	t.Helper()
	status, body, _ := send(t, "GET", l.url+strings.TrimPrefix(path, "/"), "", token, lang, false)
	if status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, status, body)
	}
	return body
}

// TestClassDashboardShowsFailedTries: the teacher sees who tries and
// fails, not only who passed: a learner's failed checks, counted, with the
// last failed answer and its reason, on the dashboard in every language
// and in GET /api/v1/class; the teacher's own check is not the learner's.
func TestClassDashboardShowsFailedTries(t *testing.T) {
	l, _ := startClass(t, t.TempDir(), "--seats", "2")
	ada := l.join(t, 1, "Ada")
	for range 2 {
		if status, body := l.call(t, "POST", "/api/v1/exercises/find-offset/check", ada, `{"segment":"00000000000000000003.log","position":77}`); status != http.StatusOK {
			t.Fatalf("a failed check: %d %s", status, body)
		}
	}
	if status, body := l.call(t, "POST", "/api/v1/exercises/lost-ack/check", ada, ""); status != http.StatusOK {
		t.Fatalf("a live exercise's check: %d %s", status, body)
	}
	if status, body := l.call(t, "POST", "/api/v1/class/seats/2/exercises/find-offset/check", l.teacher, ""); status != http.StatusOK {
		t.Fatalf("the teacher's check: %d %s", status, body)
	}
	_, body := l.call(t, "GET", "/api/v1/class", l.teacher, "")
	var cr web.ClassResponse
	if err := json.Unmarshal([]byte(body), &cr); err != nil {
		t.Fatal(err)
	}
	tries := map[string]int{}
	for _, st := range cr.Seats {
		for _, x := range st.Exercises {
			tries[x.Exercise+"@"+strconv.Itoa(st.Seat)] = x.Tries.Failed
			if st.Seat == 1 && x.Exercise == "find-offset" {
				if f := x.Tries.LastFailed; f == nil || f.Answer == nil || f.Answer.Segment != "00000000000000000003.log" || *f.Answer.Position != 77 || f.Key == "" {
					t.Errorf("seat 1's last failed find-offset: %+v", f)
				}
			}
		}
	}
	if tries["find-offset@1"] != 2 || tries["lost-ack@1"] != 1 || tries["find-offset@2"] != 0 {
		t.Errorf("failed tries by exercise and seat: %v (the teacher's check is not seat 2's)", tries)
	}
	for lang, want := range map[i18n.Lang][]string{
		i18n.English:            {"2 of 2 checks failed", "segment 00000000000000000003.log, byte 77"},
		i18n.SimplifiedChinese:  {"2 次检查未通过（共 2 次）", "segment 00000000000000000003.log，字节 77"},
		i18n.TraditionalChinese: {"2 次檢查未通過（共 2 次）", "segment 00000000000000000003.log，位元組 77"},
	} {
		page := l.getIn(t, "/class", l.teacher, lang)
		for _, w := range want {
			if !strings.Contains(page, w) {
				t.Errorf("the %s dashboard lacks %q", lang, w)
			}
		}
		if !strings.Contains(page, `data-exercise="lost-ack" data-failed="1"`) {
			t.Errorf("the %s dashboard does not show seat 1's failed lost-ack check", lang)
		}
		if lang != i18n.English && strings.Contains(page, "Not yet") {
			t.Errorf("the %s dashboard shows an English reason", lang)
		}
	}
	// The CSV export has a row per check (the answer and why it failed,
	// with its time), and the tries in seat 1's summary row.
	_, csv := l.call(t, "GET", "/api/v1/class/export?format=csv", l.teacher, "")
	if strings.Count(csv, "attempt,1,Ada,exercise,,find-offset,Find an offset on disk,,\"segment 00000000000000000003.log, byte 77 — Partition demo-0 on broker 1 does not hold offset 5 yet") != 2 ||
		!strings.Contains(csv, "attempt,1,Ada,exercise,,lost-ack,Lose an acknowledged write,,\"Not yet") ||
		!regexp.MustCompile(`\nsummary,1,Ada,,,,,,,,,\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ,0,0,0,0,0,3,3\n`).MatchString(csv) {
		t.Errorf("the CSV export lacks seat 1's failed tries:\n%s", csv)
	}
}

// apiError is the error body of an API answer.
type apiError struct {
	Error struct {
		Code, Message, Key string
		Args               []string
	}
}

// send makes one request of the lab at url with token ("" none) in lang
// (the language cookie), the body JSON unless form is set; the answer's
// status, body and header. Redirects are not followed.
func send(t *testing.T, method, url, body, token string, lang i18n.Lang, form bool) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case form:
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", "http://"+req.URL.Host) // the forms' same-origin check
	case body != "":
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Accept", "text/html,application/json;q=0.9") // as a browser asks
	req.AddCookie(&http.Cookie{Name: i18n.CookieName, Value: string(lang)})
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// uiAction posts a control form to the lab at u in lang, as the panel does
// (it asks for JSON), and returns the answer.
func uiAction(t *testing.T, u, form string, lang i18n.Lang) (web.ActionResult, error) {
	t.Helper()
	req, _ := http.NewRequest("POST", u+"ui/action", strings.NewReader(form))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.AddCookie(&http.Cookie{Name: i18n.CookieName, Value: string(lang)})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var res web.ActionResult
	return res, json.NewDecoder(resp.Body).Decode(&res)
}

// flashOf is the text of the one-shot flash cookie a form's answer sets.
func flashOf(h http.Header) string {
	for _, ck := range (&http.Response{Header: h}).Cookies() {
		if raw, err := base64.RawURLEncoding.DecodeString(ck.Value); err == nil && len(raw) > 0 {
			return string(raw[1:])
		}
	}
	return ""
}

// TestControlAndChaosRefusalsTranslated: a stepped fetch's and a broker
// control's refusals, and a chaos run's or comparison's bad configuration,
// carry the i18n key of their text beside Kafka's code, so a page says them
// in the learner's language (they were English only); a long name sent is
// not echoed whole.
func TestControlAndChaosRefusalsTranslated(t *testing.T) {
	u, _, _, _ := startRun(t, t.TempDir(), "--max-lesson-clusters", "1")
	for _, c := range []struct {
		method, path, body string
		status             int
		code, key          string
	}{
		{"POST", "api/v1/brokers/1/fetch", "", 409, "INVALID_REQUEST", "control.fetch-running"},
		{"POST", "api/v1/brokers/9/fetch", "", 404, "BROKER_NOT_AVAILABLE", "control.no-broker"},
		{"POST", "api/v1/brokers/1/restart", "", 409, "INVALID_REQUEST", "control.broker-running"},
		{"POST", "api/v1/chaos", `{"seed":1,"config":"nope"}`, 400, "INVALID_CONFIG", "chaos.refused.config"},
		{"POST", "api/v1/chaos", `{"seed":1,"config":"` + strings.Repeat("x", 100_000) + `"}`, 400, "INVALID_CONFIG", "chaos.refused.config"},
		{"POST", "api/v1/chaos", `{"seed":1,"actions":-5}`, 400, "INVALID_REQUEST", "chaos.refused.actions"},
		{"POST", "api/v1/chaos", `{"seed":1,"actions":"many"}`, 400, "INVALID_REQUEST", "chaos.refused.actions-type"},
		{"POST", "api/v1/chaos", `{"seed":9007199254740993}`, 400, "INVALID_REQUEST", "chaos.refused.seed"},
		{"POST", "api/v1/chaos", `{"seed":1,"actions":[{"kind":"explode"}]}`, 400, "INVALID_REQUEST", "chaos.refused.action-kind"},
		{"POST", "api/v1/compare", `{"seed":1,"protocols":["ISR!"]}`, 400, "INVALID_REQUEST", "chaos.refused.protocol-name"},
		{"POST", "api/v1/compare", `{"seed":1,"protocols":["isr","isr"]}`, 400, "INVALID_REQUEST", "chaos.refused.protocol-twice"},
		{"POST", "api/v1/compare", `{"seed":1,"actions":-1}`, 400, "INVALID_REQUEST", "chaos.refused.actions"},
		{"PATCH", "api/v1/topics/demo/configs", `{"segment.bytes":"` + strings.Repeat("9x", 50_000) + `"}`, 400, "INVALID_CONFIG", "config.bad-int"},
		{"PATCH", "api/v1/topics/demo/configs", `{"` + strings.Repeat("k", 50_000) + `":"1"}`, 400, "INVALID_CONFIG", "config.unknown"},
		{"PUT", "api/v1/cluster/fencing-rule", `{"rule":"` + strings.Repeat("r", 50_000) + `"}`, 400, "INVALID_CONFIG", "config.fencing-rule"},
	} {
		status, body, _ := send(t, c.method, u+c.path, c.body, "", i18n.SimplifiedChinese, false)
		var e apiError
		if err := json.Unmarshal([]byte(body), &e); err != nil || status != c.status || e.Error.Code != c.code || e.Error.Key != c.key {
			t.Errorf("%s %s %.60s: %d %.300s, want %d %s with key %s", c.method, c.path, c.body, status, body, c.status, c.code, c.key)
		}
		if len(body) > 1000 {
			t.Errorf("%s %s: a %d-byte answer echoes what was sent", c.method, c.path, len(body))
		}
	}
	for _, lang := range []i18n.Lang{i18n.SimplifiedChinese, i18n.TraditionalChinese} {
		// The overview's stepped-fetch form, answered to the panel.
		res, err := uiAction(t, u, "action=fetch&broker=1", lang)
		if want := "INVALID_REQUEST: " + i18n.T(lang, "control.fetch-running"); err != nil || res.Text != want || res.Code != "INVALID_REQUEST" {
			t.Errorf("%s: the stepped fetch of a running lab answered %+v, want %q", lang, res, want)
		}
		// The chaos form with a configuration that does not exist.
		_, _, h := send(t, "POST", u+"chaos/start", "seed=1&actions=5&config=nope", "", lang, true)
		if want := i18n.T(lang, "chaos.refused.config", `"nope"`, "strict, acks1, unclean, hw-truncation, strict-quorum, strict-pipeline"); !strings.Contains(flashOf(h), want) {
			t.Errorf("%s: the chaos form's flash is %q, want %q", lang, flashOf(h), want)
		}
		_, _, h = send(t, "POST", u+"compare/start", "seed=abc&actions=5", "", lang, true)
		if want := i18n.T(lang, "chaos.refused.seed-form", `"abc"`, "9007199254740991"); !strings.Contains(flashOf(h), want) {
			t.Errorf("%s: the comparison form's flash is %q, want %q", lang, flashOf(h), want)
		}
	}
}

// TestPageErrorsAreHTML: a page a browser opens that cannot be shown — a
// lesson run that ended, a chaos run or comparison the lab no longer keeps,
// an unknown address — is an error page in the learner's language with
// Kafka's (or the lab's) code, not the API's English JSON, when a browser
// asks for HTML; the API keeps its JSON. A missing topic's refusal says there is no such topic.
func TestPageErrorsAreHTML(t *testing.T) {
	u, _, _, _ := startRun(t, t.TempDir())
	for _, path := range []string{"lessons/runs/0123456789abcdef", "chaos/runs/zzz", "compare/runs/zzz", "no/such/page"} {
		status, body, h := send(t, "GET", u+path, "", "", i18n.SimplifiedChinese, false)
		if status != http.StatusNotFound || !strings.HasPrefix(h.Get("Content-Type"), "text/html") || !strings.Contains(body, "NOT_FOUND") {
			t.Errorf("GET /%s: %d %s %.200s, want a 404 page", path, status, h.Get("Content-Type"), body)
		}
	}
	if _, body, _ := send(t, "GET", u+"lessons/runs/0123456789abcdef", "", "", i18n.SimplifiedChinese, false); !strings.Contains(body, i18n.T(i18n.SimplifiedChinese, "lesson.run-gone")) {
		t.Errorf("an ended lesson run's page does not say so in Chinese")
	}
	if _, body, _ := send(t, "GET", u+"chaos/runs/zzz", "", "", i18n.TraditionalChinese, false); !strings.Contains(body, i18n.T(i18n.TraditionalChinese, "chaos.run-gone")) {
		t.Errorf("an unknown chaos run's page does not say so in Chinese")
	}
	if status, _, h := send(t, "GET", u+"api/v1/lessons/runs/0123456789abcdef", "", "", i18n.SimplifiedChinese, false); status != http.StatusNotFound || h.Get("Content-Type") != "application/json" {
		t.Errorf("the API's unknown lesson run: %d %s, want 404 JSON", status, h.Get("Content-Type"))
	}
	for _, c := range [][3]string{
		{"DELETE", "api/v1/topics/nope", ""},
		{"PATCH", "api/v1/topics/nope/configs", `{"min.insync.replicas":"1"}`},
	} {
		_, body, _ := send(t, c[0], u+c[1], c[2], "", i18n.English, false)
		var e apiError
		if json.Unmarshal([]byte(body), &e) != nil || e.Error.Code != "UNKNOWN_TOPIC_OR_PARTITION" || e.Error.Message != `no topic "nope"` {
			t.Errorf("%s /%s: %s, want UNKNOWN_TOPIC_OR_PARTITION saying no topic \"nope\"", c[0], c[1], body)
		}
	}
}

// TestControlFormsSayWhatIsWrong: a control form with an empty, negative,
// huge or mistyped field is refused with a text that names the field, in
// the learner's language, and Kafka's code apart; before, every one of them
// read only "INVALID_REQUEST: 请求无效。" in Chinese.
func TestControlFormsSayWhatIsWrong(t *testing.T) {
	u, _, _, _ := startRun(t, t.TempDir())
	for form, key := range map[string]string{
		"action=produce&topic=demo&count=&acks=all&value=x":              "form.count",
		"action=produce&topic=demo&count=-1&acks=all&value=x":            "form.count",
		"action=produce&topic=demo&count=99999&acks=all&value=x":         "form.count",
		"action=produce&topic=demo&count=1&acks=all&partition=一&value=x": "form.partition",
		"action=step&ms=":                                   "form.ms",
		"action=step&ms=-100":                               "clock.step-range",
		"action=rate&rate=2":                                "form.rate",
		"action=cut&from=a&to=2":                            "form.nodes",
		"action=cut&from=1&to=1":                            "control.link-same-node",
		"action=cut&from=1&to=99":                           "control.no-node",
		"action=configs&topic=demo&min.insync.replicas=abc": "config.bad-int",
		"action=configs&topic=demo&unclean.leader.election.enable=maybe": "config.bad-bool",
		"action=configs&topic=demo&truncation.rule=hope":                 "config.bad-choice",
		"action=configs&topic=demo&min.insync.replicas=9":                "config.min-isr",
		"action=crash&broker=":                                           "form.broker",
		"action=configs&topic=demo":                                      "form.no-configs",
		"action=" + strings.Repeat("x", 10_000):                          "form.action",
	} {
		for _, lang := range []i18n.Lang{i18n.SimplifiedChinese, i18n.TraditionalChinese} {
			res, err := uiAction(t, u, form, lang)
			text := strings.TrimPrefix(res.Text, res.Code+": ")
			generic := i18n.T(lang, "errors."+res.Code) // the bare text of the code
			if err != nil || res.OK || res.Code == "" || text == generic || len(res.Text) > 300 {
				t.Errorf("%s %.60s: %+v, want the text of %s", lang, form, res, key)
				continue
			}
			withArgs := map[string]bool{"form.count": true, "form.broker": true, "form.action": true, "clock.step-range": true, "control.no-node": true,
				"config.bad-int": true, "config.bad-bool": true, "config.bad-choice": true, "config.min-isr": true}
			if want := i18n.T(lang, key); !withArgs[key] && text != want {
				t.Errorf("%s %.60s: %q, want %q", lang, form, text, want)
			}
		}
	}
	// Paused, a step out of range says the range.
	send(t, "POST", u+"api/v1/clock/pause", "", "", i18n.English, false)
	_, body, _ := send(t, "POST", u+"api/v1/clock/step", `{"ms":-5}`, "", i18n.English, false)
	var e apiError
	if json.Unmarshal([]byte(body), &e) != nil || e.Error.Key != "clock.step-range" || strings.Join(e.Error.Args, " ") != "3600000 -5" {
		t.Errorf("a negative step: %s, want clock.step-range [3600000 -5]", body)
	}
}

// TestPagesFitAPhone: every page a learner or the teacher opens declares a
// device-width viewport (the seat projection had none: a phone showed it
// 980 px wide), and the chaos form offers its configurations as wrapping
// radio buttons instead of a select as wide as its longest description,
// which made the page scroll sideways at 360 px. TestBrowserMenusFitAPhone
// opens the overview's menus at 360 px in a browser.
func TestPagesFitAPhone(t *testing.T) {
	l, _ := startClass(t, t.TempDir(), "--seats", "1")
	ada := l.join(t, 1, "Ada")
	viewport := `<meta name="viewport" content="width=device-width, initial-scale=1">`
	for _, c := range []struct{ path, token string }{
		{"/class", l.teacher}, {"/class/seats/1", l.teacher}, {"/join", ""},
		{"/", ada}, {"/lessons", ada}, {"/exercises", ada}, {"/chaos", ada}, {"/compare", ada},
		{"/topics/demo/partitions/0", ada}, {"/brokers/1/partitions/demo/0/segments", ada},
	} {
		for _, lang := range []i18n.Lang{i18n.English, i18n.SimplifiedChinese} {
			status, body, _ := send(t, "GET", l.url+strings.TrimPrefix(c.path, "/"), "", c.token, lang, false)
			if status != http.StatusOK || !strings.Contains(body, viewport) {
				t.Errorf("%s GET %s: %d, viewport declared: %v", lang, c.path, status, strings.Contains(body, viewport))
			}
			if c.path == "/chaos" && (strings.Contains(body, "<select") || strings.Count(body, `type="radio" name="config"`) < 4) {
				t.Errorf("%s: the chaos form's configurations are not radio buttons", lang)
			}
		}
	}
}

// TestAddSeatsRefusalsTranslated: the dashboard's "Add seats" form with a
// count that is not a number is INVALID_REQUEST (it was an internal error),
// and a count out of range says the range in the teacher's language.
func TestAddSeatsRefusalsTranslated(t *testing.T) {
	l, _ := startClass(t, t.TempDir(), "--seats", "1")
	for count, want := range map[string]string{
		"abc": "INVALID_REQUEST: " + i18n.T(i18n.SimplifiedChinese, "class.add.count", "499"),
		"-5":  "INVALID_REQUEST: " + i18n.T(i18n.SimplifiedChinese, "class.add.count", "499"),
		"900": "POLICY_VIOLATION: " + i18n.T(i18n.SimplifiedChinese, "class.add.too-many", "500", "1"),
	} {
		_, _, h := send(t, "POST", l.url+"class/seats", "count="+count, l.teacher, i18n.SimplifiedChinese, true)
		if got := flashOf(h); got != want {
			t.Errorf("adding %s seats: flash %q, want %q", count, got, want)
		}
	}
	_, body, _ := send(t, "POST", l.url+"api/v1/class/seats", `{"count":0}`, l.teacher, i18n.English, false)
	var e apiError
	if json.Unmarshal([]byte(body), &e) != nil || e.Error.Code != "INVALID_REQUEST" || e.Error.Key != "class.add.count" {
		t.Errorf("adding 0 seats: %s, want INVALID_REQUEST with key class.add.count", body)
	}
}

// TestLessonRefusalsTranslated: a lesson run's refusals (back at the first
// step, next before the step's prediction, an unknown answer, an unknown
// speed) tell the learner what to do in their language; in Chinese they
// read only "INVALID_REQUEST: 请求无效。".
func TestLessonRefusalsTranslated(t *testing.T) {
	u, _, _, _ := startRun(t, t.TempDir())
	_, body, _ := send(t, "POST", u+"api/v1/lessons/10-acks/runs", `{"speed":"instant"}`, "", i18n.English, false)
	var run struct{ ID string }
	if err := json.Unmarshal([]byte(body), &run); err != nil || run.ID == "" {
		t.Fatalf("starting lesson 10: %s", body)
	}
	lang := i18n.TraditionalChinese
	step := func(action, form, key string) {
		t.Helper()
		_, _, h := send(t, "POST", u+"lessons/runs/"+run.ID+"/"+action, form, "", lang, true)
		got := flashOf(h)
		if want := "INVALID_REQUEST: " + i18n.T(lang, key); key != "" && got != want {
			t.Errorf("%s %s: flash %q, want %q", action, form, got, want)
		}
	}
	step("back", "", "lesson.refused.at-start")
	step("next", "", "")
	step("next", "", "")
	step("next", "", "lesson.refused.predict-first") // step 3 asks for a prediction
	step("predict", "choice=nope", "lesson.refused.choice")
	step("speed", "speed=warp", "lesson.refused.speed")
}

// TestClassSeatMetricsAndObserve: a seat's GET /metrics and GET
// /api/v1/observe answered 501 "this lab cannot serve metrics" (in
// Chinese the bare "not available in this lab"). They say why, in the
// learner's language, and what to use instead: /metrics is the teacher's
// (403 CLUSTER_AUTHORIZATION_FAILED: it reports every seat's cluster, this
// one as seat-1), and no lab of a class observes a Kafka cluster (501
// NOT_IMPLEMENTED, for the teacher too); a browser opening /metrics gets
// the error page. The teacher's /metrics still reports the seat.
func TestClassSeatMetricsAndObserve(t *testing.T) {
	l, _ := startClass(t, t.TempDir(), "--seats", "1")
	ada := l.join(t, 1, "Ada")
	for _, c := range []struct {
		who, path, token string
		status           int
		code, key        string
		args             []string
	}{
		{"seat 1", "/metrics", ada, http.StatusForbidden, "CLUSTER_AUTHORIZATION_FAILED", "class.metrics.teacher-only", []string{"1"}},
		{"seat 1", "/api/v1/observe", ada, http.StatusNotImplemented, "NOT_IMPLEMENTED", "class.observe-off", nil},
		{"the teacher", "/api/v1/observe", l.teacher, http.StatusNotImplemented, "NOT_IMPLEMENTED", "class.observe-off", nil},
	} {
		status, body := l.call(t, "GET", c.path, c.token, "")
		var e apiError
		if json.Unmarshal([]byte(body), &e) != nil || status != c.status || e.Error.Code != c.code || e.Error.Key != c.key ||
			strings.Join(e.Error.Args, " ") != strings.Join(c.args, " ") || !strings.Contains(e.Error.Message, "GET /api/v1/cluster") {
			t.Errorf("GET %s as %s: %d %s, want %d %s with key %s %v, saying what to use instead", c.path, c.who, status, body, c.status, c.code, c.key, c.args)
		}
		args := make([]any, len(c.args))
		for i, a := range c.args {
			args[i] = a
		}
		for _, lang := range []i18n.Lang{i18n.SimplifiedChinese, i18n.TraditionalChinese} {
			if text := i18n.T(lang, c.key, args...); text == c.key || text == i18n.T(i18n.English, c.key, args...) {
				t.Errorf("%s has no %s text", c.key, lang)
			}
		}
	}
	for _, lang := range i18n.Languages() {
		status, body, h := send(t, "GET", l.url+"metrics", "", ada, lang, false)
		if want := i18n.T(lang, "class.metrics.teacher-only", "1"); status != http.StatusForbidden || !strings.HasPrefix(h.Get("Content-Type"), "text/html") ||
			!strings.Contains(body, html.EscapeString(want)) || !strings.Contains(body, "CLUSTER_AUTHORIZATION_FAILED") {
			t.Errorf("%s: a browser opening /metrics on seat 1: %d %s %.300s, want the 403 page saying %q", lang, status, h.Get("Content-Type"), body, want)
		}
	}
	l.brokerState(t, ada, 1) // wakes seat 1's cluster, which the refusals did not
	if status, body := l.call(t, "GET", "/metrics", l.teacher, ""); status != http.StatusOK || !strings.Contains(body, `cluster="seat-1"`) {
		t.Errorf("the teacher's /metrics: %d, seat 1 reported: %v", status, strings.Contains(body, `cluster="seat-1"`))
	}
	// The teacher trying a seat holds both cookies: /metrics is still theirs.
	req, _ := http.NewRequest("GET", l.url+"metrics", nil)
	req.AddCookie(&http.Cookie{Name: "tidemark_seat", Value: ada})
	req.AddCookie(&http.Cookie{Name: "tidemark_teacher", Value: l.teacher})
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/metrics with the teacher's and a seat's cookie: %d, want 200", resp.StatusCode)
	}
}
