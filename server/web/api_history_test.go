package web

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"tidemark/events"
	"tidemark/events/history"
)

// historyLab is a testLab that keeps its events on disk.
type historyLab struct {
	*testLab
	store *history.Store
}

func (l historyLab) History() *history.Store { return l.store }

// newHistoryLab returns a lab with n clock steps published and written.
func newHistoryLab(t *testing.T, n int) historyLab {
	t.Helper()
	lab := newTestLab(events.BusOptions{History: 64})
	h, err := history.Open(history.Options{Dir: filepath.Join(t.TempDir(), "history")})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Follow(lab.bus, lab.bus.SubscribeQueue(h.QueueLen()), lab.Snapshot(), lab.Snapshot); err != nil {
		t.Fatal(err)
	}
	for range n {
		lab.publish(events.Event{Kind: events.KindClock, Broker: events.NoBroker, Clock: &events.ClockChange{Action: events.ClockStep, StepMs: 5}})
	}
	h.Close() // written to the end: the pages below are exact
	return historyLab{lab, h}
}

// TestHistoryPages: pages go back from the newest to the first event,
// each with the state it starts from, past what the bus's ring holds.
func TestHistoryPages(t *testing.T) {
	lab := newHistoryLab(t, 1200)
	s := newTestServer(t, lab, Options{})
	doc := loadAPIDoc(t)
	var seen []uint64
	before := ""
	for range 10 {
		rec := do(t, s.Handler(), "GET", "/api/v1/history?limit=500"+before, nil)
		if rec.Code != 200 {
			t.Fatalf("%s: %d %s", before, rec.Code, rec.Body)
		}
		if diffs := doc.conforms("HistoryPage", rec.Body.Bytes()); len(diffs) > 0 {
			t.Fatalf("differs from the OpenAPI schema HistoryPage:\n  %s", strings.Join(diffs, "\n  "))
		}
		var p events.HistoryPage
		json.Unmarshal(rec.Body.Bytes(), &p)
		if p.FirstSeq != 1 || p.LastSeq != 1200 {
			t.Fatalf("bounds %d..%d", p.FirstSeq, p.LastSeq)
		}
		if len(p.Events) == 0 {
			if p.Snapshot == nil || p.Snapshot.Seq != 0 {
				t.Errorf("the page before the first: snapshot %+v", p.Snapshot)
			}
			break
		}
		if p.Snapshot == nil || p.Snapshot.Seq != p.Events[0].Seq-1 {
			t.Fatalf("page from %d: snapshot at %v", p.Events[0].Seq, p.Snapshot)
		}
		for i := len(p.Events) - 1; i >= 0; i-- {
			seen = append(seen, p.Events[i].Seq)
		}
		before = "&before=" + strconv.FormatUint(p.Events[0].Seq, 10)
	}
	if len(seen) != 1200 || seen[0] != 1200 || seen[1199] != 1 {
		t.Fatalf("paged back through %d events", len(seen))
	}
	rec := do(t, s.Handler(), "GET", "/api/v1/history/snapshot?seq=700", nil)
	var snap HistorySnapshotResponse
	json.Unmarshal(rec.Body.Bytes(), &snap)
	if diffs := doc.conforms("HistorySnapshot", rec.Body.Bytes()); rec.Code != 200 || len(diffs) > 0 || snap.Snapshot.Seq != 700 {
		t.Errorf("snapshot at 700: %d %s %v", rec.Code, rec.Body, diffs)
	}
	rec = do(t, s.Handler(), "GET", "/api/v1/events", nil)
	var evs EventsResponse
	json.Unmarshal(rec.Body.Bytes(), &evs)
	if diffs := doc.conforms("Events", rec.Body.Bytes()); len(diffs) > 0 || evs.HistoryFirstSeq != 1 || evs.OldestSeq <= 1 {
		t.Errorf("events: history_first_seq %d, oldest_seq %d, %v", evs.HistoryFirstSeq, evs.OldestSeq, diffs)
	}
}

// TestHistoryBadInput: bad parameters are 400s with a Kafka code; a lab
// without a history answers 501.
func TestHistoryBadInput(t *testing.T) {
	s := newTestServer(t, newHistoryLab(t, 10), Options{})
	for _, c := range []struct{ target, code string }{
		{"/api/v1/history?before=x", "INVALID_REQUEST"},
		{"/api/v1/history?before=-1", "INVALID_REQUEST"},
		{"/api/v1/history?limit=0", "INVALID_REQUEST"},
		{"/api/v1/history?limit=2001", "INVALID_REQUEST"},
		{"/api/v1/history/snapshot", "INVALID_REQUEST"},
		{"/api/v1/history/snapshot?seq=1e3", "INVALID_REQUEST"},
		{"/api/v1/history/snapshot?seq=11", "OFFSET_OUT_OF_RANGE"},
	} {
		rec := do(t, s.Handler(), "GET", c.target, nil)
		wantError(t, rec, http.StatusBadRequest, c.code)
		if diffs := loadAPIDoc(t).conforms("Error", rec.Body.Bytes()); len(diffs) > 0 {
			t.Errorf("%s: %v", c.target, diffs)
		}
	}
	plain := newTestServer(t, newTestLab(events.BusOptions{}), Options{})
	wantError(t, do(t, plain.Handler(), "GET", "/api/v1/history", nil), http.StatusNotImplemented, CodeNotImplemented)
	rec := do(t, plain.Handler(), "GET", "/api/v1/events", nil)
	if strings.Contains(rec.Body.String(), `history_first_seq`) {
		t.Errorf("events without a history: %s", rec.Body)
	}
}
