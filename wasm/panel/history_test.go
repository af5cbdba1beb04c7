package panel

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"tidemark/events"
)

// fakeHistory is the server's history of a lab: every event from 1 and
// the state after each, paged as GET /api/v1/history pages.
type fakeHistory struct {
	evs    []events.Event // evs[i].Seq == i+1
	states []events.Snapshot
	asked  int
}

// newFakeHistory publishes n events: every fifth a message in flight
// (unlisted), the others config changes that leave their Seq in the
// state, so a rebuilt state says which it is.
func newFakeHistory(n int) *fakeHistory {
	h := &fakeHistory{states: []events.Snapshot{{}}}
	snap := events.Snapshot{}
	for i := 1; i <= n; i++ {
		e := events.Event{Seq: uint64(i), Kind: events.KindConfig, Broker: events.NoBroker, Config: &events.ConfigChange{Key: "n", Value: strconv.Itoa(i)}}
		if i%5 == 0 {
			e = events.Event{Seq: uint64(i), Kind: events.KindFetchRequest, Broker: 2, Wire: &events.Wire{From: 2, To: 1}}
		}
		h.evs = append(h.evs, e)
		snap.Apply(e)
		h.states = append(h.states, snap.Clone())
	}
	return h
}

func (h *fakeHistory) page(before uint64, limit int) (uint64, events.Message) {
	h.asked++
	last := uint64(len(h.evs))
	hi := last
	if before > 0 {
		hi = min(before-1, last)
	}
	lo := uint64(1)
	if hi >= uint64(limit) {
		lo = max(1, hi-uint64(limit)+1)
	}
	snap := h.states[lo-1].Clone()
	return 1, events.Message{Snapshot: &snap, Events: append([]events.Event(nil), h.evs[lo-1:hi]...)}
}

// serve answers what s waits for, as wasm/main.go does.
func (h *fakeHistory) serve(s *State) {
	for range 10 {
		before, ok := s.Wanted()
		if !ok {
			return
		}
		s.AddPage(h.page(before, HistoryPageLen))
	}
}

// check fails unless s shows the state after event seq: its Seq and the
// config the last change before it left.
func (h *fakeHistory) check(t *testing.T, s *State, seq uint64) {
	t.Helper()
	v := s.View()
	if v.Seq != seq || v.Configs["n"] != h.states[seq].Configs["n"] {
		t.Fatalf("view at %d (n=%s), want %d (n=%s)", v.Seq, v.Configs["n"], seq, h.states[seq].Configs["n"])
	}
}

// loaded returns a State that loaded the page after 20,000 events: a
// snapshot at 19,500, the last 500 events streamed, and the newest page
// of history fetched on load.
func loaded(t *testing.T) (*State, *fakeHistory) {
	t.Helper()
	h := newFakeHistory(20000)
	s := NewState()
	snap := h.states[19500].Clone()
	s.Handle(events.Message{Type: events.MessageSnapshot, Snapshot: &snap})
	s.Handle(events.Message{Type: events.MessageEvents, Events: h.evs[19500:]})
	s.AddPage(h.page(0, HistoryPageLen))
	return s, h
}

// TestTimelineReachesTheFirstEvent: after a load late in a long session
// the timeline spans the whole history; seeking to its start shows the
// state before the first event and lists the first events.
func TestTimelineReachesTheFirstEvent(t *testing.T) {
	s, h := loaded(t)
	if first, last := s.FirstSeq(), s.Snap.Seq; first != 1 || last != 20000 {
		t.Fatalf("data-first-seq %d, data-last-seq %d", first, last)
	}
	if pos, end := s.Position(); pos != 20000 || end != 20000 {
		t.Fatalf("Position %d/%d", pos, end)
	}
	s.Seek(0)
	if _, ok := s.Wanted(); !ok {
		t.Fatal("no page asked for the start")
	}
	h.serve(s)
	h.check(t, s, 0)
	if pos, _ := s.Position(); pos != 0 {
		t.Errorf("Position at the start %d", pos)
	}
	list := s.RenderEvents(s.Snap.Seq, s.ViewSeq(), Catalog{})
	if !strings.Contains(list, `data-seq="1"`) || !strings.Contains(list, `data-seq="2"`) || strings.Contains(list, `data-seq="5"`) {
		t.Errorf("the list at the start does not show the first listed events: %.300s", list)
	}
	s.Back()
	h.check(t, s, 0) // the start: it stays
	s.Seek(12346)
	h.serve(s)
	h.check(t, s, 12346)
	if list := s.RenderEvents(s.Snap.Seq, s.ViewSeq(), Catalog{}); !strings.Contains(list, `class="k-config cursor" data-seq="12346"`) {
		t.Errorf("the list does not mark the event shown: %.300s", list)
	}
	// Memory stays bounded: one page besides Hist.
	if len(s.past.evs) > HistoryPageLen || len(s.Hist) > MaxHistory+CheckpointEvery {
		t.Errorf("holds %d + %d events", len(s.past.evs), len(s.Hist))
	}
}

// TestTimelineStepsThroughPages: Back from live steps over every listed
// event to the first, fetching the pages before Hist as it goes, and
// Forward steps back to live.
func TestTimelineStepsThroughPages(t *testing.T) {
	s, h := loaded(t)
	want := uint64(20000)
	steps := 0
	for {
		s.Back()
		h.serve(s)
		// Back goes to just before the previous listed event.
		for want > 0 && want%5 == 0 {
			want--
		}
		if want > 0 {
			want--
		}
		for want > 0 && want%5 == 0 {
			want--
		}
		// Where the page the panel holds starts, Back may rest on a
		// message's Seq: the same state as the listed event's before it.
		if v := s.ViewSeq(); v != want && (v != want+1 || v%5 != 0) {
			t.Fatalf("step %d back: at %d, want %d", steps, v, want)
		}
		if n := s.View().Configs["n"]; n != h.states[want].Configs["n"] {
			t.Fatalf("step %d back: state n=%s, want n=%s", steps, n, h.states[want].Configs["n"])
		}
		steps++
		if want == 0 {
			break
		}
	}
	if steps != 16000 || h.asked > 40 {
		t.Errorf("%d steps back (want 16000, the listed events), %d pages asked", steps, h.asked)
	}
	for i := range 16001 { // past each listed event, and then live
		if s.Following {
			t.Fatalf("live after %d steps forward", i)
		}
		s.Forward()
		h.serve(s)
	}
	if !s.Following {
		t.Fatalf("not live after every step forward: at %d", s.ViewSeq())
	}
}

// TestPageFailedDropsTheMove: a failed fetch leaves the timeline where it
// was, asking nothing more.
func TestPageFailedDropsTheMove(t *testing.T) {
	s, h := loaded(t)
	s.Seek(100)
	s.AddPage(0, events.Message{}) // the request failed
	if _, ok := s.Wanted(); ok {
		t.Fatal("still waiting after a failure")
	}
	s.View() // the oldest state held, while nothing comes
	s.Seek(101)
	h.serve(s)
	h.check(t, s, 101)
}

// TestHistoryPageLenSpelled: static/panel.js asks for pages of
// HistoryPageLen events (the request is written there, where it costs the
// WASM panel nothing); this keeps the two in step.
func TestHistoryPageLenSpelled(t *testing.T) {
	src, err := os.ReadFile("../../static/panel.js")
	if err != nil {
		t.Fatal(err)
	}
	if want := `/api/v1/history?limit=` + strconv.Itoa(HistoryPageLen) + `"`; !strings.Contains(string(src), want) {
		t.Errorf("static/panel.js does not ask for %s", want)
	}
}
