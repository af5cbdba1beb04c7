package server

import (
	"encoding/json"
	"net/http"
	"testing"
)

// TestClassCompareIsSeats: in class mode a seat's comparison is its own,
// as its chaos runs are: 404 for the other seat and for the teacher.
func TestClassCompareIsSeats(t *testing.T) {
	l, _ := startClass(t, t.TempDir(), "--seats", "2")
	ada, bob := l.join(t, 1, "Ada"), l.join(t, 2, "Bob")
	status, body := l.call(t, "POST", "/api/v1/compare", ada, `{"seed":1,"actions":5}`)
	var run struct{ ID string }
	if status != http.StatusCreated || json.Unmarshal([]byte(body), &run) != nil || run.ID == "" {
		t.Fatalf("seat 1 starting a comparison: %d %s", status, body)
	}
	for who, tok := range map[string]string{"seat 2": bob, "the teacher": l.teacher} {
		for _, path := range []string{"/api/v1/compare/" + run.ID, "/compare/runs/" + run.ID} {
			if status, _ := l.call(t, "GET", path, tok, ""); status != http.StatusNotFound {
				t.Errorf("%s reading seat 1's comparison at %s: %d, want 404", who, path, status)
			}
		}
	}
	if status, _ := l.call(t, "GET", "/api/v1/compare/"+run.ID, ada, ""); status != http.StatusOK {
		t.Errorf("seat 1 reading its own comparison: %d", status)
	}
}
