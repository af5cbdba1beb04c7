package web

import (
	"strings"
	"testing"
	"time"

	"tidemark/events"
	"tidemark/server/observe"
)

// observedLab is a test lab in observe mode.
type observedLab struct{ *testLab }

func (observedLab) Info() observe.Info {
	return observe.Info{Seeds: []string{"kafka-1:9092"}, ClusterID: "c1", Polled: time.Unix(0, 0),
		LogDirs: []observe.LogDir{{Broker: 1, Dir: "/var/kafka", Size: 4096, Partitions: 1}},
		Groups: []observe.Group{{Group: "billing", State: "Stable", Members: 1, TotalLag: 2,
			Lag: []observe.PartitionLag{{Topic: "demo", Partition: 0, Committed: 1, End: 3, Lag: 2}}}}}
}

// TestObserveReadOnly: in observe mode every request but GET and HEAD is
// refused (403 READ_ONLY, translated), /api/v1/observe answers the poll's
// Info and the overview shows it; a lab answers 501 there, saying why
// and where its own cluster is, in the learner's language (observe.off).
func TestObserveReadOnly(t *testing.T) {
	lab := newTestLab(events.BusOptions{})
	rec := do(t, newTestServer(t, lab, Options{}).Handler(), "GET", "/api/v1/observe", nil)
	wantError(t, rec, 501, CodeNotImplemented)
	if !strings.Contains(rec.Body.String(), `"key":"observe.off"`) || !strings.Contains(rec.Body.String(), "GET /api/v1/cluster") {
		t.Errorf("a lab's /api/v1/observe: %s, want the text of observe.off", rec.Body)
	}

	h := newTestServer(t, observedLab{lab}, Options{}).Handler()
	for _, m := range []string{"POST", "PUT", "DELETE", "PATCH"} {
		wantError(t, do(t, h, m, "/api/v1/topics/demo", nil), 403, CodeReadOnly)
	}
	rec = do(t, h, "POST", "/api/v1/brokers/1/crash", map[string]string{"Accept-Language": "zh-CN"})
	wantError(t, rec, 403, CodeReadOnly)
	if body := rec.Body.String(); !containsAll(body, "kafka-1:9092", "观察模式") {
		t.Fatalf("refusal in Simplified Chinese: %s", body)
	}
	if rec := do(t, h, "GET", "/api/v1/observe", nil); rec.Code != 200 || !containsAll(rec.Body.String(), `"billing"`, `"/var/kafka"`) {
		t.Fatalf("observe info: %d %s", rec.Code, rec.Body)
	}
	page := do(t, h, "GET", "/", nil).Body.String()
	if !containsAll(page, `<body class="observe"`, "kafka-1:9092", "/var/kafka", "billing", "State Stable, 1 members, total lag 2") {
		t.Fatalf("overview in observe mode:\n%s", page)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
