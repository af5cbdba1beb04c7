package web

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/events"
	"tidemark/i18n"
	"tidemark/server/chaos"
)

// rangeLab is a testLab whose consumer answers every read as out of range,
// as the lab's leader does for an offset outside its log.
type rangeLab struct{ *testLab }

func (rangeLab) Consume(string, int32, int64, int) ([]ConsumedRecord, int64, error) {
	return nil, 3, kerr.OffsetOutOfRange
}

// TestConsumeOutOfRangeNamesTheLog: a read beyond the log says where the
// leader's log starts and ends, not only that the offset missed it.
func TestConsumeOutOfRangeNamesTheLog(t *testing.T) {
	lab := newTestLab(events.BusOptions{})
	r := &lab.snap.Topics[0].Partitions[0].ReplicaLogs[0] // broker 1, the leader
	r.LogStartOffset, r.LEO = 1, 3
	s := newTestServer(t, rangeLab{lab}, Options{})
	rec := do(t, s.Handler(), "GET", "/api/v1/topics/demo/partitions/0/records?offset=100", nil)
	wantError(t, rec, 400, "OFFSET_OUT_OF_RANGE")
	want := "offset 100 is outside the log of demo-0; its leader, broker 1, has log start offset 1 and log end offset 3"
	if msg := errorMessage(t, rec.Body.Bytes()); msg != want {
		t.Fatalf("message %q, want %q", msg, want)
	}
}

// TestJSONTypeErrorsNameTheField: a value of the wrong type is named by its
// JSON field and the JSON it wants, with no Go type or struct in the text.
func TestJSONTypeErrorsNameTheField(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{`{"from":"1","to":2}`, `malformed JSON body: "from" must be an integer, got string`},
		{`{"from":1,"to":2,"x":1}`, `malformed JSON body: unknown field "x"`},
		{`{"from":1,"oneway":"yes"}`, `malformed JSON body: "oneway" must be true or false, got string`},
	} {
		req := loopbackRequest("POST", "/api/v1/network/cuts", strings.NewReader(c.body))
		req.Header.Set("Content-Type", "application/json")
		var cut CutRequest
		err := decodeJSON(echo.New().NewContext(req, httptest.NewRecorder()), &cut)
		var e *Error
		if !errors.As(err, &e) || e.Code != "INVALID_REQUEST" || e.Message != c.want {
			t.Errorf("%s: %v, want INVALID_REQUEST: %s", c.body, err, c.want)
		}
	}
	var v struct {
		Seed uint64 `json:"seed"`
	}
	err := json.Unmarshal([]byte(`{"seed":-1}`), &v)
	if got, want := jsonProblem(err), `"seed" must be an integer ≥ 0, got number -1`; got != want {
		t.Errorf("jsonProblem = %q, want %q", got, want)
	}
}

// TestExportSinceAsEvents: ?since= takes the same range on the export as on
// GET /api/v1/events (any uint64).
func TestExportSinceAsEvents(t *testing.T) {
	s := newTestServer(t, newTestLab(events.BusOptions{}), Options{})
	for _, path := range []string{"/api/v1/events", "/api/v1/export/events.jsonl"} {
		if rec := do(t, s.Handler(), "GET", path+"?since=18446744073709551615", nil); rec.Code != 200 {
			t.Errorf("%s: %d %s", path, rec.Code, rec.Body)
		}
	}
}

// TestOpenAPIChaosConfigs: the documented chaos configurations are the ones
// POST /api/v1/chaos accepts.
func TestOpenAPIChaosConfigs(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas struct {
				ChaosRequest struct {
					Properties struct {
						Config struct {
							Enum []string `json:"enum"`
						} `json:"config"`
					} `json:"properties"`
				} `json:"ChaosRequest"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openapiDoc, &doc); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, c := range chaos.Configs() {
		want = append(want, string(c))
	}
	if got := doc.Components.Schemas.ChaosRequest.Properties.Config.Enum; !slices.Equal(got, want) {
		t.Fatalf("openapi ChaosRequest.config enum %v, want %v", got, want)
	}
}

func errorMessage(t *testing.T, body []byte) string {
	t.Helper()
	var e struct{ Error struct{ Message string } }
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("error body %s: %v", body, err)
	}
	return strings.TrimSpace(e.Error.Message)
}

// TestFullLabFlashInTheLearnersLanguage: starting a lesson from its page
// when every private cluster is taken flashes the code once and the lab's
// own text in the page's language, not Kafka's description in English.
func TestFullLabFlashInTheLearnersLanguage(t *testing.T) {
	s := lessonServer(t, 1)
	h := s.Handler()
	if rec := send(t, h, "POST", "/api/v1/lessons/01-partitions/runs", `{"speed":"instant"}`); rec.Code != 201 {
		t.Fatalf("first run: %d %s", rec.Code, rec.Body)
	}
	for _, lang := range []i18n.Lang{"en", "zh-Hans", "zh-Hant"} {
		req := loopbackRequest("POST", "/lessons/01-partitions/start", strings.NewReader(""))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Cookie", i18n.CookieName+"="+string(lang))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var text string
		for _, c := range rec.Result().Cookies() {
			if c.Name == flashCookie {
				b, _ := base64.RawURLEncoding.DecodeString(c.Value)
				text = string(b[1:])
			}
		}
		// Another learner's run, used just now: the text says how many
		// seconds until it counts as idle (up to IdleAfter, 120).
		before, after, _ := strings.Cut(i18n.T(lang, "limits.clusters-full.wait", "1", "\x00"), "\x00")
		secs, ok := strings.CutPrefix(text, "THROTTLING_QUOTA_EXCEEDED: "+before)
		secs, ok2 := strings.CutSuffix(secs, after)
		if n, err := strconv.Atoi(secs); rec.Code != 303 || !ok || !ok2 || err != nil || n < 1 || n > 120 {
			t.Errorf("%s: %d flash %q, want THROTTLING_QUOTA_EXCEEDED: %q with the seconds to wait", lang, rec.Code, text, before+"…"+after)
		}
	}
	rec := send(t, h, "POST", "/api/v1/lessons/01-partitions/runs", "")
	wantError(t, rec, 429, "THROTTLING_QUOTA_EXCEEDED")
	if msg := errorMessage(t, rec.Body.Bytes()); strings.Contains(msg, "THROTTLING") || strings.Contains(msg, kerr.ThrottlingQuotaExceeded.Description) {
		t.Errorf("API message repeats the code or Kafka's description: %q", msg)
	}
}

// TestLessonErrorsWithoutKafkaDescription: the lessons' errors wrap
// INVALID_REQUEST; their messages carry the lab's detail only, not the code
// again or Kafka's description of it.
func TestLessonErrorsWithoutKafkaDescription(t *testing.T) {
	h := lessonServer(t, 1).Handler()
	for _, c := range []struct {
		method, path, body string
		status             int
		code, msg          string
	}{
		{"POST", "/api/v1/lessons/runs/nope/next", "", 404, CodeNotFound, "no such lesson run (it may have ended after being idle)"},
		{"POST", "/api/v1/lessons/08-hw/runs", `{"speed":"warp"}`, 400, "INVALID_REQUEST", "speed must be instant, fast, normal or slow"},
	} {
		rec := send(t, h, c.method, c.path, c.body)
		wantError(t, rec, c.status, c.code)
		if msg := errorMessage(t, rec.Body.Bytes()); msg != c.msg {
			t.Errorf("%s %s: message %q, want %q", c.method, c.path, msg, c.msg)
		}
	}
}

// TestCutsNameTheController: a cut from the controller (node 0) says
// "from": 0 rather than leaving the field out.
func TestCutsNameTheController(t *testing.T) {
	lab := newTestLab(events.BusOptions{})
	lab.publish(events.Event{Kind: events.KindFault, Fault: &events.Fault{Kind: events.FaultCut, From: 0, To: 3, OneWay: true}})
	s := newTestServer(t, lab, Options{})
	body := s.networkResponse()
	b, _ := json.Marshal(body)
	if want := `{"cuts":[{"kind":"cut","from":0,"to":3,"oneway":true}],`; !strings.HasPrefix(string(b), want) {
		t.Fatalf("network response %s, want it to start %s", b, want)
	}
}
