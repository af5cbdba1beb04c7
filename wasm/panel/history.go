package panel

import (
	"tidemark/events"
)

// The timeline reaches past what State holds in memory (Hist) through the
// lab's history on the server (GET /api/v1/history): the panel keeps one
// page of it at a time, asks for the page a move needs (Wanted) and takes
// it when it comes (AddPage). Positions on the timeline count events from
// the first the history keeps, so the slider spans the whole session while
// memory stays bounded by MaxHistory and one page. Hist starts from the
// state after event checks[0].snap.Seq. The code is kept to few, plain
// functions (that Seq is written out, not a method): each function cost
// the WASM panel's size budget some hundred bytes.

// HistoryPageLen is how many events the panel asks the server for at a
// time.
const HistoryPageLen = 1000

// pastPage is a page of the lab's history (older than Hist, or
// overlapping it): the state it starts from, its events, the Seq of its
// last (base's when none) and the state shown from it.
type pastPage struct {
	base  *events.Snapshot
	evs   []events.Event
	end   uint64
	view  events.Snapshot
	built uint64 // 1 + the Seq view is the state after; 0: none
}

// The moves a page may be awaited for (State.move).
const (
	moveBack = 1 + iota
	moveForward
)

// after returns how many of evs (in Seq order) have a Seq at most seq.
func after(evs []events.Event, seq uint64) int {
	lo, hi := 0, len(evs)
	for lo < hi {
		if m := (lo + hi) / 2; evs[m].Seq <= seq {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// older reports whether the server's history reaches before Hist.
func (s *State) older() bool { return s.first > 0 && s.first <= s.checks[0].snap.Seq }

// held reports whether the page held rebuilds the state after seq.
func (s *State) held(seq uint64) bool {
	p := s.past
	return p != nil && seq >= p.base.Seq && seq <= p.end
}

// FirstSeq returns the first event the timeline reaches: the first the
// lab's history keeps, or Hist's first when the server keeps none older.
func (s *State) FirstSeq() uint64 {
	if s.older() {
		return s.first
	}
	return s.checks[0].snap.Seq + 1
}

// offset is where Hist starts on the timeline: how many events of the
// server's history lie before it.
func (s *State) offset() int {
	if !s.older() {
		return 0
	}
	return int(s.checks[0].snap.Seq - (s.first - 1))
}

// Wanted returns the page of history the timeline waits for: the before
// of GET /api/v1/history; false when it waits for none.
func (s *State) Wanted() (before uint64, ok bool) { return s.want, s.want > 0 }

// AddPage takes a page of the lab's history (GET /api/v1/history: its
// first_seq, and its snapshot and events as m's): it learns where the
// history starts, keeps the page (dropping the one it held) and finishes
// the move that waited for it. A page without a snapshot (the request
// failed, or the lab keeps no history) drops the move.
func (s *State) AddPage(first uint64, m events.Message) {
	move := s.move
	s.want, s.move = 0, 0
	if m.Snapshot == nil {
		return
	}
	p := &pastPage{base: m.Snapshot, evs: m.Events, end: m.Snapshot.Seq}
	if n := len(m.Events); n > 0 {
		p.end = m.Events[n-1].Seq
	}
	s.first, s.past = first, p
	if s.inPast {
		switch move {
		case moveBack:
			s.backPast()
		case moveForward:
			s.Forward()
		}
	}
}

// pastView returns the state after s.pastAt from the page (kept until the
// timeline moves); while the page is on its way, the oldest state the
// panel holds.
func (s *State) pastView() *events.Snapshot {
	p := s.past
	if !s.held(s.pastAt) {
		return &s.checks[0].snap
	}
	if p.built != s.pastAt+1 {
		p.view, p.built = p.base.Clone(), s.pastAt+1
		for _, e := range p.evs[:after(p.evs, s.pastAt)] {
			p.view.Apply(e)
		}
		p.view.Seq = s.pastAt
	}
	return &p.view
}

// backPast moves within the history before Hist as Back does in Hist:
// over messages (which change nothing) to the listed event before, and
// past it to the listed one before that. At the start of the page it holds
// it asks for the one before.
func (s *State) backPast() {
	p := s.past
	if !s.held(s.pastAt) {
		if s.pastAt >= s.first {
			s.want, s.move = s.pastAt+1, moveBack
		}
		return
	}
	j := after(p.evs, s.pastAt)
	for j > 0 && p.evs[j-1].Kind.Unlisted() {
		j--
	}
	s.pastAt = p.base.Seq
	if j == 0 {
		if p.base.Seq >= s.first {
			s.want, s.move = p.base.Seq+1, moveBack // the event to step over is in the page before
		}
		return
	}
	for j--; j > 0 && p.evs[j-1].Kind.Unlisted(); j-- {
	}
	if j > 0 {
		s.pastAt = p.evs[j-1].Seq
	}
}

// forwardPast moves to just after the next listed event, from the
// history before Hist into Hist once it gets there.
func (s *State) forwardPast() {
	p, base := s.past, s.checks[0].snap.Seq
	next := min(s.pastAt+HistoryPageLen+1, base+1) // the page to ask for
	if s.held(s.pastAt) {
		for _, e := range p.evs[after(p.evs, s.pastAt):] {
			if e.Seq > base {
				break // Hist holds it
			}
			if !e.Kind.Unlisted() {
				s.pastAt = e.Seq
				return
			}
		}
		if p.end >= base {
			s.inPast, s.Pos = false, 0
			s.Forward()
			return
		}
		s.pastAt = p.end
		next = min(p.end+HistoryPageLen+1, base+1)
	}
	s.want, s.move = next, moveForward
}

// pastEvents returns the events around the state after cursor while the
// timeline is before the recent events: up to MaxRecent either side of
// it, from the page or Hist (RenderEvents lists the listed ones).
func (s *State) pastEvents(cursor uint64) []events.Event {
	src := s.Hist
	if s.inPast && s.past != nil {
		src = s.past.evs
	}
	i := after(src, cursor)
	return src[max(0, i-MaxRecent):min(len(src), i+MaxRecent)]
}
