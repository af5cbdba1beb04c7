package server

import (
	"net/http"
	"strings"
	"testing"
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
