package server

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"
)

// TestClassSeatOwnsItsRuns: in class mode a seat's runs are the seat's,
// whatever browser sends its token: GET /api/v1/lessons/runs lists only
// its own, a second start on a full lab ends the seat's own older run,
// and another seat is refused while that run is in use rather than
// ending it.
func TestClassSeatOwnsItsRuns(t *testing.T) {
	l, _ := startClass(t, t.TempDir(), "--seats", "2", "--max-lesson-clusters", "1")
	ada, bob := l.join(t, 1, "Ada"), l.join(t, 2, "Bob")
	start := func(tok string) (int, string) {
		t.Helper()
		status, body := l.call(t, "POST", "/api/v1/lessons/01-partitions/runs", tok, `{"speed":"instant"}`)
		var run struct{ ID string }
		json.Unmarshal([]byte(body), &run)
		return status, run.ID
	}
	open := func(tok string) []string {
		t.Helper()
		status, body := l.call(t, "GET", "/api/v1/lessons/runs", tok, "")
		var runs []struct{ ID string }
		if status != http.StatusOK || json.Unmarshal([]byte(body), &runs) != nil {
			t.Fatalf("GET /api/v1/lessons/runs: %d %s", status, body)
		}
		ids := []string{}
		for _, r := range runs {
			ids = append(ids, r.ID)
		}
		return ids
	}
	status, first := start(ada)
	if status != http.StatusCreated {
		t.Fatalf("seat 1's first run: %d", status)
	}
	if got := open(ada); !slices.Equal(got, []string{first}) {
		t.Fatalf("seat 1's open runs %v, want [%s]", got, first)
	}
	if got := open(bob); len(got) != 0 {
		t.Fatalf("seat 2 lists %v", got)
	}
	status, second := start(ada)
	if status != http.StatusCreated {
		t.Fatalf("seat 1's second run on a full lab: %d, want its first to make room", status)
	}
	if got := open(ada); !slices.Equal(got, []string{second}) {
		t.Fatalf("seat 1's open runs %v, want [%s]", got, second)
	}
	status, body := l.call(t, "POST", "/api/v1/lessons/01-partitions/runs", bob, "")
	var e struct{ Error struct{ Code, Key string } }
	if json.Unmarshal([]byte(body), &e); status != http.StatusTooManyRequests || e.Error.Code != "THROTTLING_QUOTA_EXCEEDED" || e.Error.Key != "limits.clusters-full.wait" {
		t.Fatalf("seat 2 while seat 1's run is in use: %d %s", status, body)
	}
	if got := open(ada); !slices.Equal(got, []string{second}) {
		t.Fatalf("seat 2's refused start changed seat 1's runs: %v", got)
	}
}
