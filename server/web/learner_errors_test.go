package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/events"
	"tidemark/i18n"
	"tidemark/server/kafkaerr"
)

// failingLab's controls fail as the issue saw them: Kafka errors wrapped
// with their descriptions (sometimes twice) around the lab's English
// detail, and a budget refusal that carries its own translated text.
type failingLab struct{ *testLab }

func (failingLab) Crash(int32) error {
	return fmt.Errorf("%w: %w: every private cluster is in use", kerr.ThrottlingQuotaExceeded, kerr.ThrottlingQuotaExceeded)
}
func (failingLab) PowerLoss(int32) (map[string]int64, error) {
	return nil, keyedError{fmt.Errorf("%w: topic \"t\" needs 9 partition replicas (--max-partition-replicas)", kerr.PolicyViolation)}
}
func (failingLab) Restart(int32) error          { return nil }
func (failingLab) Cut(int32, int32, bool) error { return nil }
func (failingLab) Heal()                        {}
func (failingLab) Produce(context.Context, string, int32, int16, []Record, time.Duration) (ProduceResult, error) {
	return ProduceResult{}, fmt.Errorf("produce to demo-0: %w", kerr.NotEnoughReplicas)
}

// keyedError is a refusal with its own i18n text, as the controller's
// BudgetError is.
type keyedError struct{ error }

func (e keyedError) Unwrap() error { return e.error }
func (keyedError) MessageKey() (string, []string) {
	return "limits.partition-replicas", []string{"t", "9", "60", "64"}
}

// TestChinesePagesShowNoKafkaDescriptions: on Chinese pages a failed
// control (answered to the panel as JSON and to a browser without it as
// the flash) and an error page show Kafka's code and a short translated
// text: never Kafka's long English description, nor the lab's English
// detail. The code travels as its own field.
func TestChinesePagesShowNoKafkaDescriptions(t *testing.T) {
	s := newTestServer(t, failingLab{newTestLab(events.BusOptions{})}, Options{})
	h := s.Handler()
	noDescription := func(where, text string) {
		t.Helper()
		for _, ke := range kafkaerr.All {
			if strings.Contains(text, ke.Description) {
				t.Errorf("%s shows Kafka's description of %s: %q", where, ke.Message, text)
			}
		}
		for _, detail := range []string{"private cluster is in use", "produce to demo-0", "needs 9 partition"} {
			if strings.Contains(text, detail) {
				t.Errorf("%s shows the lab's English detail %q: %q", where, detail, text)
			}
		}
	}
	for _, lang := range []i18n.Lang{"zh-Hans", "zh-Hant"} {
		cookie := map[string]string{"Cookie": i18n.CookieName + "=" + string(lang), "Accept": "application/json"}
		for _, c := range []struct {
			form url.Values
			code string
			key  string
			args []any
		}{
			{url.Values{"action": {"crash"}, "broker": {"1"}}, "THROTTLING_QUOTA_EXCEEDED", "errors.THROTTLING_QUOTA_EXCEEDED", nil},
			{url.Values{"action": {"produce"}, "topic": {"demo"}, "count": {"1"}, "acks": {"all"}}, "NOT_ENOUGH_REPLICAS", "errors.NOT_ENOUGH_REPLICAS", nil},
			{url.Values{"action": {"crash"}, "broker": {"x"}}, "INVALID_REQUEST", "form.broker", []any{`"x"`}},
		} {
			rec := postForm(h, c.form, cookie)
			var r ActionResult
			if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil || r.OK || r.Code != c.code {
				t.Fatalf("%s %v: %s, want code %s", lang, c.form, rec.Body, c.code)
			}
			if want := c.code + ": " + i18n.T(lang, c.key, c.args...); r.Text != want {
				t.Errorf("%s %v: text %q, want %q", lang, c.form, r.Text, want)
			}
			noDescription(string(lang)+" panel", r.Text)
		}
		rec := postForm(h, url.Values{"action": {"power-loss"}, "broker": {"1"}}, cookie)
		var r ActionResult
		json.Unmarshal(rec.Body.Bytes(), &r)
		if want := "POLICY_VIOLATION: " + i18n.T(lang, "limits.partition-replicas", "t", "9", "60", "64"); r.Text != want {
			t.Errorf("%s budget refusal: %q, want %q", lang, r.Text, want)
		}
		// Without the panel: the flash on the next page.
		rec = postForm(h, url.Values{"action": {"crash"}, "broker": {"1"}}, map[string]string{"Cookie": cookie["Cookie"]})
		flash := rec.Result().Cookies()[0]
		page := do(t, h, "GET", "/", map[string]string{"Cookie": cookie["Cookie"] + "; " + flash.Name + "=" + flash.Value})
		if body := page.Body.String(); !strings.Contains(body, "THROTTLING_QUOTA_EXCEEDED") || !strings.Contains(body, i18n.T(lang, "errors.THROTTLING_QUOTA_EXCEEDED")) {
			t.Errorf("%s flash: no code or translated text in %s", lang, body)
		}
		noDescription(string(lang)+" flash page", page.Body.String())
		// An error page.
		page = do(t, h, "GET", "/topics/nope/partitions/0", map[string]string{"Cookie": cookie["Cookie"]})
		if page.Code != http.StatusNotFound {
			t.Errorf("%s missing topic page: %d", lang, page.Code)
		}
		noDescription(string(lang)+" error page", page.Body.String())
		// A code the lab has no text for: a short general one.
		if got := learnerText(lang, LabError(kerr.InvalidTxnState).(*Error)); got != i18n.T(lang, "errors.other") {
			t.Errorf("%s INVALID_TXN_STATE: %q", lang, got)
		}
	}
	// English pages show the lab's detail, still without the description.
	rec := postForm(h, url.Values{"action": {"crash"}, "broker": {"1"}}, map[string]string{"Accept": "application/json"})
	var r ActionResult
	json.Unmarshal(rec.Body.Bytes(), &r)
	if r.Text != "THROTTLING_QUOTA_EXCEEDED: every private cluster is in use" {
		t.Errorf("English: %q", r.Text)
	}
}
