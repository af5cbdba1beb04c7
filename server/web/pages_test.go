package web

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"tidemark/events"
	"tidemark/i18n"
)

func postForm(h http.Handler, form url.Values, hdr map[string]string) *httptest.ResponseRecorder {
	req := loopbackRequest("POST", "/ui/action", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestPageLanguage: the cookie wins, then Accept-Language, then English;
// the switch sets the cookie and returns only to a local path.
func TestPageLanguage(t *testing.T) {
	s := newTestServer(t, newTestLab(events.BusOptions{}), Options{})
	h := s.Handler()
	for _, c := range []struct {
		hdr  map[string]string
		want string
	}{
		{nil, `lang="en"`},
		{map[string]string{"Accept-Language": "zh-TW,en;q=0.5"}, `lang="zh-Hant"`},
		{map[string]string{"Accept-Language": "zh-CN", "Cookie": i18n.CookieName + "=en"}, `lang="en"`},
		{map[string]string{"Cookie": i18n.CookieName + "=zh-Hans"}, "集群"},
	} {
		if body := do(t, h, "GET", "/", c.hdr).Body.String(); !strings.Contains(body, c.want) {
			t.Errorf("%v: page lacks %q", c.hdr, c.want)
		}
	}
	rec := do(t, h, "GET", "/ui/lang?set=zh-Hant&next=/topics/demo/partitions/0", nil)
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/topics/demo/partitions/0" ||
		!strings.Contains(rec.Header().Get("Set-Cookie"), i18n.CookieName+"=zh-Hant") {
		t.Fatalf("switch: %d %v", rec.Code, rec.Header())
	}
	for _, next := range []string{"//evil.example/", "https://evil.example/", "/\\evil", ""} {
		rec := do(t, h, "GET", "/ui/lang?set=en&next="+url.QueryEscape(next), nil)
		if rec.Header().Get("Location") != "/" {
			t.Errorf("next %q redirects to %q", next, rec.Header().Get("Location"))
		}
	}
	wantError(t, do(t, h, "GET", "/ui/lang?set=klingon", nil), http.StatusBadRequest, "INVALID_REQUEST")
}

// TestPageErrors: a page that cannot be shown is an HTML page naming the
// Kafka error, in the learner's language.
func TestPageErrors(t *testing.T) {
	s := newTestServer(t, newTestLab(events.BusOptions{}), Options{})
	rec := do(t, s.Handler(), "GET", "/topics/nope/partitions/0", map[string]string{"Cookie": i18n.CookieName + "=zh-Hans"})
	if rec.Code != http.StatusNotFound || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") ||
		!strings.Contains(rec.Body.String(), "UNKNOWN_TOPIC_OR_PARTITION") || !strings.Contains(rec.Body.String(), "无法显示此页面") {
		t.Fatalf("unknown topic page: %d %s", rec.Code, rec.Body)
	}
	rec = do(t, s.Handler(), "GET", "/topics/demo/partitions/0", nil)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `id="server-lanes"`) || !strings.Contains(rec.Body.String(), `data-partition="0"`) {
		t.Fatalf("partition page: %d", rec.Code)
	}
}

// TestActionForms: a form is sent through the API; browsers get a 303 back
// with the outcome in a one-shot cookie shown on the next page, the panel
// gets JSON; bad forms and other sites' posts are refused.
func TestActionForms(t *testing.T) {
	s := newTestServer(t, newTestLab(events.BusOptions{}), Options{})
	h := s.Handler()
	// The test lab has no clock: the API's own 501 comes back.
	rec := postForm(h, url.Values{"action": {"pause"}, "next": {"/topics/demo/partitions/0"}}, nil)
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/topics/demo/partitions/0" {
		t.Fatalf("form post: %d %v", rec.Code, rec.Header())
	}
	flash := rec.Result().Cookies()[0]
	page := do(t, h, "GET", "/", map[string]string{"Cookie": flash.Name + "=" + flash.Value})
	if !strings.Contains(page.Body.String(), `class="flash bad"`) || !strings.Contains(page.Body.String(), "NOT_IMPLEMENTED") {
		t.Fatalf("flash not shown: %s", page.Body)
	}
	if !strings.Contains(page.Header().Get("Set-Cookie"), "Max-Age=0") {
		t.Fatal("flash not cleared")
	}
	for _, c := range []struct {
		form url.Values
		want string
	}{
		{url.Values{"action": {"nope"}}, "unknown action"},
		{url.Values{"action": {"crash"}, "broker": {"x"}}, "broker must be an integer"},
		{url.Values{"action": {"produce"}, "topic": {"demo"}, "count": {"0"}, "acks": {"all"}}, "count must be"},
		{url.Values{"action": {"configs"}, "topic": {"demo"}}, "no config to change"},
		{url.Values{"action": {"step"}, "ms": {"soon"}}, "ms must be an integer"},
		{url.Values{"action": {"produce"}, "topic": {"../x"}, "count": {"1"}, "acks": {"all"}}, "NOT_IMPLEMENTED"}, // the API answers; this lab cannot produce
		{url.Values{"action": {"crash"}, "broker": {"9"}}, "NOT_IMPLEMENTED"},
	} {
		rec := postForm(h, c.form, map[string]string{"Accept": "application/json"})
		var r ActionResult
		if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil || rec.Code != 200 || r.OK || !strings.Contains(r.Text, c.want) {
			t.Errorf("%v: %d %+v %v, want %q", c.form, rec.Code, r, err, c.want)
		}
	}
	rec = postForm(h, url.Values{"action": {"pause"}}, map[string]string{"Origin": "http://evil.example"})
	wantError(t, rec, http.StatusForbidden, CodeForbiddenOrigin)
}
