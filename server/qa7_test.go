package server

import (
	"encoding/json"
	"io"
	"net/http"
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
		if status >= 500 && status != http.StatusNotImplemented { // 501: /metrics and /api/v1/observe are the teacher's lab's
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

// getIn GETs path with token in lang (the language cookie).
func (l classLab) getIn(t *testing.T, path, token string, lang i18n.Lang) string {
	t.Helper()
	req, err := http.NewRequest("GET", l.url+strings.TrimPrefix(path, "/"), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.AddCookie(&http.Cookie{Name: i18n.CookieName, Value: string(lang)})
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	return string(b)
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
}
