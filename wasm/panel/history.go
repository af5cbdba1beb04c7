package panel

import (
	"strconv"

	"tidemark/events"
)

// The timeline reaches past what State holds in memory (Hist) through the
// lab's history on the server (GET /api/v1/history): the panel keeps one
// page of it at a time, asks for the page a move needs (Wanted) and takes
// it when it comes (AddPage). Positions on the timeline count events from
// the first the history keeps, so the slider spans the whole session while
// memory stays bounded by MaxHistory and one page.

// HistoryPageLen is how many events the panel asks the server for at a
// time.
const HistoryPageLen = 1000

// pastPage is a page of the lab's history older than Hist (or overlapping
// it) and the state shown from it.
type pastPage struct {
	base    events.Snapshot
	evs     []events.Event
	view    events.Snapshot // cache of the state shown
	viewSeq uint64
	viewOK  bool
}

// last returns the Seq of the page's last event (its base's when empty).
func (p *pastPage) last() uint64 {
	if n := len(p.evs); n > 0 {
		return p.evs[n-1].Seq
	}
	return p.base.Seq
}

// covers reports whether the state after seq is rebuilt from the page.
func (p *pastPage) covers(seq uint64) bool {
	return p != nil && seq >= p.base.Seq && seq <= p.last()
}

// at returns how many of the page's events the state after seq includes.
func (p *pastPage) at(seq uint64) int {
	j := 0
	for j < len(p.evs) && p.evs[j].Seq <= seq {
		j++
	}
	return j
}

// state returns the state after seq, which the page covers.
func (p *pastPage) state(seq uint64) *events.Snapshot {
	if p.viewOK && p.viewSeq == seq {
		return &p.view
	}
	from := 0
	if p.viewOK && p.viewSeq < seq {
		from = p.at(p.viewSeq) // go on from the state shown
	} else {
		p.view = p.base.Clone()
	}
	for _, e := range p.evs[from:p.at(seq)] {
		p.view.Apply(e)
	}
	p.view.Seq = seq
	p.viewSeq, p.viewOK = seq, true
	return &p.view
}

// histBase returns the Seq of the state Hist starts from.
func (s *State) histBase() uint64 { return s.checks[0].snap.Seq }

// older reports whether the server's history reaches before Hist.
func (s *State) older() bool { return s.first > 0 && s.first <= s.histBase() }

// FirstSeq returns the first event the timeline reaches: the first the
// lab's history keeps, or Hist's first when the server keeps none older.
func (s *State) FirstSeq() uint64 {
	if s.older() {
		return s.first
	}
	return s.histBase() + 1
}

// offset is where Hist starts on the timeline: how many events of the
// server's history lie before it.
func (s *State) offset() int {
	if !s.older() {
		return 0
	}
	return int(s.histBase() - (s.first - 1))
}

// Wanted returns the page of history the timeline waits for: the before
// of GET /api/v1/history; false when it waits for none.
func (s *State) Wanted() (before uint64, ok bool) { return s.want, s.want > 0 }

// want asks for the page ending with the event before before, and says
// what to do once it comes (pending: Back or Forward again).
func (s *State) ask(before uint64, pending int) {
	s.want, s.pending = max(before, 1), pending
}

// The moves a page is awaited for.
const (
	pendNone = iota
	pendBack
	pendForward
	pendSkip
)

// AddPage takes a page of the lab's history (GET /api/v1/history): it
// learns where the history starts, keeps the page (dropping the one it
// held) and finishes the move that waited for it.
func (s *State) AddPage(p events.HistoryPage) {
	pending := s.pending
	s.want, s.pending = 0, pendNone
	if p.Snapshot == nil {
		return
	}
	s.first = p.FirstSeq
	s.past = &pastPage{base: *p.Snapshot, evs: p.Events}
	switch pending {
	case pendBack:
		s.Back()
	case pendForward:
		s.Forward()
	case pendSkip:
		if s.inPast {
			s.skipPast()
		}
	}
}

// PageFailed drops the page the timeline waited for (the request
// failed): the move it was for does not happen.
func (s *State) PageFailed() { s.want, s.pending = 0, pendNone }

// SetFirst records the first event the lab's history keeps, as the
// server said (GET /api/v1/events' history_first_seq, a page's
// first_seq).
func (s *State) SetFirst(first uint64) { s.first = first }

// pastView returns the state after s.pastAt from the page, or, while the
// page is on its way, the oldest state the panel holds.
func (s *State) pastView() *events.Snapshot {
	if s.past.covers(s.pastAt) {
		return s.past.state(s.pastAt)
	}
	return &s.checks[0].snap
}

// seqAt returns the Seq of the state after the page's first j events.
func (p *pastPage) seqAt(j int) uint64 {
	if j == 0 {
		return p.base.Seq
	}
	return p.evs[j-1].Seq
}

// backPast moves one listed event earlier within the history before Hist.
func (s *State) backPast() {
	p := s.past
	if !p.covers(s.pastAt) {
		if s.pastAt >= s.first {
			s.ask(s.pastAt+1, pendBack)
		}
		return
	}
	j := p.at(s.pastAt)
	for j > 0 && p.evs[j-1].Kind.Unlisted() {
		j--
	}
	if j == 0 {
		// The event to step over is in the page before this one.
		s.pastAt = p.base.Seq
		if p.base.Seq >= s.first {
			s.ask(p.base.Seq+1, pendBack)
		}
		return
	}
	s.pastAt = p.seqAt(j - 1)
	s.skipPast()
}

// skipPast steps back over messages (which change nothing) to the state
// after the listed event before, as Back does in Hist.
func (s *State) skipPast() {
	p := s.past
	if !p.covers(s.pastAt) {
		if s.pastAt >= s.first {
			s.ask(s.pastAt+1, pendSkip)
		}
		return
	}
	j := p.at(s.pastAt)
	for j > 0 && p.evs[j-1].Kind.Unlisted() {
		j--
	}
	s.pastAt = p.seqAt(j)
	if j == 0 && p.base.Seq >= s.first {
		s.ask(p.base.Seq+1, pendSkip) // the event before may be a message too
	}
}

// forwardPast moves to just after the next listed event, from the
// history before Hist into Hist when it gets there.
func (s *State) forwardPast() {
	p := s.past
	base := s.histBase()
	if !p.covers(s.pastAt) {
		s.ask(min(s.pastAt+HistoryPageLen+1, base+1), pendForward)
		return
	}
	for _, e := range p.evs[p.at(s.pastAt):] {
		if e.Seq > base {
			break // Hist holds it: go on there
		}
		if !e.Kind.Unlisted() {
			s.pastAt = e.Seq
			if e.Seq == base {
				s.inPast, s.Pos = false, 0
			}
			return
		}
	}
	if p.last() < base {
		s.pastAt = p.last()
		s.ask(min(p.last()+HistoryPageLen+1, base+1), pendForward)
		return
	}
	s.inPast, s.Pos = false, 0
	s.Forward()
}

// seekPast shows the state after seq, before Hist.
func (s *State) seekPast(seq uint64) {
	s.Following, s.inPast, s.pastAt = false, true, seq
	if !s.past.covers(seq) {
		s.ask(min(seq+HistoryPageLen/2+1, s.histBase()+1), pendNone)
	}
}

// pastEvents returns the events listed around the state after cursor
// while the timeline is before the recent events: up to MaxRecent, oldest first,
// from the page or Hist, the cursor among them.
func (s *State) pastEvents(cursor uint64) []events.Event {
	src := s.Hist
	if s.inPast && s.past != nil {
		src = s.past.evs
	}
	i := 0
	for i < len(src) && src[i].Seq <= cursor {
		i++
	}
	var out []events.Event
	for j := i - 1; j >= 0 && len(out) < MaxRecent/2; j-- {
		if !src[j].Kind.Unlisted() {
			out = append(out, src[j])
		}
	}
	for l, r := 0, len(out)-1; l < r; l, r = l+1, r-1 {
		out[l], out[r] = out[r], out[l]
	}
	for j := i; j < len(src) && len(out) < MaxRecent; j++ {
		if !src[j].Kind.Unlisted() {
			out = append(out, src[j])
		}
	}
	return out
}

// TimelineAttrs returns the timeline element's data-first-seq and
// data-last-seq: the first event it reaches and the live state's.
func (s *State) TimelineAttrs() (first, last string) {
	return strconv.FormatUint(s.FirstSeq(), 10), strconv.FormatUint(s.Snap.Seq, 10)
}
