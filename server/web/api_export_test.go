package web

import (
	"bufio"
	"encoding/json"
	"encoding/xml"
	"io"
	"strings"
	"testing"

	"tidemark/events"
)

// TestExportRoutes: the events come as JSON Lines, the topology and the
// lanes as well-formed SVG in the page's language, each as a download; the
// overview links them.
func TestExportRoutes(t *testing.T) {
	lab := newTestLab(events.BusOptions{})
	s := newTestServer(t, lab, Options{})
	h := s.Handler()
	lab.publish(events.Event{Kind: events.KindAppend, Broker: 1, Topic: "demo", Offsets: &events.Offsets{Base: 0, Last: 0, LEO: 1},
		Records: []events.Record{{Offset: 0, Value: "v0"}}})
	lab.publish(events.Event{Kind: events.KindHW, Broker: 1, Topic: "demo", Offsets: &events.Offsets{HW: 1}})

	rec := do(t, h, "GET", "/api/v1/export/events.jsonl", nil)
	if rec.Code != 200 || rec.Header().Get("Content-Type") != MIMEJSONLines ||
		!strings.Contains(rec.Header().Get("Content-Disposition"), `filename="events.jsonl"`) {
		t.Fatalf("events.jsonl: %d %v", rec.Code, rec.Header())
	}
	var seqs []uint64
	sc := bufio.NewScanner(rec.Body)
	for sc.Scan() {
		var e events.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		seqs = append(seqs, e.Seq)
	}
	if len(seqs) != 2 || seqs[0] != 1 || seqs[1] != 2 {
		t.Fatalf("event seqs %v", seqs)
	}
	if rec := do(t, h, "GET", "/api/v1/export/events.jsonl?since=1", nil); strings.Count(rec.Body.String(), "\n") != 1 {
		t.Fatalf("since=1: %q", rec.Body)
	}
	wantError(t, do(t, h, "GET", "/api/v1/export/events.jsonl?since=x", nil), 400, "INVALID_REQUEST")

	for _, path := range []string{"/api/v1/export/topology.svg", "/api/v1/export/topics/demo/partitions/0/lanes.svg"} {
		rec := do(t, h, "GET", path, map[string]string{"Accept-Language": "zh-TW"})
		if rec.Code != 200 || rec.Header().Get("Content-Type") != "image/svg+xml" {
			t.Fatalf("%s: %d %v", path, rec.Code, rec.Header())
		}
		d := xml.NewDecoder(rec.Body)
		for {
			if _, err := d.Token(); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("%s is not XML: %v", path, err)
			}
		}
	}
	if body := do(t, h, "GET", "/api/v1/export/topology.svg", map[string]string{"Accept-Language": "zh-TW"}).Body.String(); !strings.Contains(body, "控制器") {
		t.Fatalf("topology in Traditional Chinese: %s", body)
	}
	wantError(t, do(t, h, "GET", "/api/v1/export/topics/demo/partitions/9/lanes.svg", nil), 404, "UNKNOWN_TOPIC_OR_PARTITION")
	wantError(t, do(t, h, "GET", "/api/v1/export/topics/nope/partitions/0/lanes.svg", nil), 404, "UNKNOWN_TOPIC_OR_PARTITION")
	wantError(t, do(t, h, "GET", "/api/v1/export/topics/demo/partitions/x/lanes.svg", nil), 400, "INVALID_REQUEST")
	wantError(t, do(t, h, "GET", "/api/v1/export/chaos/x/acked.csv", nil), 501, CodeNotImplemented)

	page := do(t, h, "GET", "/", map[string]string{"Accept-Language": "zh-CN"}).Body.String()
	for _, want := range []string{`href="/api/v1/export/events.jsonl"`, `href="/api/v1/export/topology.svg"`,
		`href="/api/v1/export/topics/demo/partitions/0/lanes.svg"`, "拓扑图（SVG）"} {
		if !strings.Contains(page, want) {
			t.Errorf("overview lacks %s", want)
		}
	}
}
