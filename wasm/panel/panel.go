// Package panel is the live panel's state and rendering, kept free of
// syscall/js so it is tested natively; wasm/main.go only wires it to the DOM
// and the websocket. It renders HTML and SVG strings with every value escaped.
//
// State keeps the live snapshot and a bounded history: the events (Hist) and
// clones of the live state taken every CheckpointEvery of them, the first
// being the state Hist starts from. The timeline shows the lab as it was
// after any recorded event by applying the events since the checkpoint
// before it to a clone of that checkpoint. Each event is applied once to
// the live state and never again, unless the timeline shows a past state.
package panel

import (
	"strconv"
	"strings"

	"tidemark/events"
)

// MaxRecent is how many recent events the panel lists.
const MaxRecent = 50

// MaxHistory is how many events the timeline keeps at least; past it the
// oldest CheckpointEvery are dropped at once, so memory stays bounded
// however long the page stays open.
const MaxHistory = 5000

// CheckpointEvery is how many events lie between two checkpoints of the
// timeline: a past state costs at most that many applies.
const CheckpointEvery = 500

// Catalog translates the panel's strings (the "panel." keys of the i18n
// catalogues, embedded in the page). A missing key is shown as itself.
type Catalog map[string]string

// T returns the text for key formatted with args.
func (c Catalog) T(key string, args ...any) string {
	s, ok := c[key]
	if !ok {
		s = key
	}
	if len(args) > 0 {
		return Sprintf(s, args...)
	}
	return s
}

// Sprintf formats as fmt.Sprintf does for the verbs the catalogues' panel
// and stage texts use: %d, %s, %v and %%, with integers, strings and bools
// (the ones the panel passes; a Stringer case would keep every String
// method of the program, time's formatting among them). fmt is not used: with the
// reflection it keeps it cost the WASM panel a tenth of its size. A verb it
// does not know, or an argument missing, is written as fmt marks it
// (%!x(…), %!d(MISSING)); extra arguments are dropped.
func Sprintf(format string, args ...any) string {
	b := make([]byte, 0, len(format)+16)
	n := 0
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' || i+1 == len(format) {
			b = append(b, c)
			continue
		}
		i++
		verb := format[i]
		if verb == '%' {
			b = append(b, '%')
			continue
		}
		if n >= len(args) {
			b = append(b, "%!"...)
			b = append(b, verb)
			b = append(b, "(MISSING)"...)
			continue
		}
		arg := args[n]
		n++
		switch verb {
		case 'd', 's', 'v':
			b = appendArg(b, arg)
		default:
			b = append(b, "%!"...)
			b = append(b, verb)
			b = append(b, '(')
			b = appendArg(b, arg)
			b = append(b, ')')
		}
	}
	return string(b)
}

func appendArg(b []byte, arg any) []byte {
	switch v := arg.(type) {
	case string:
		return append(b, v...)
	case int:
		return strconv.AppendInt(b, int64(v), 10)
	case int32:
		return strconv.AppendInt(b, int64(v), 10)
	case int64:
		return strconv.AppendInt(b, v, 10)
	case uint32:
		return strconv.AppendUint(b, uint64(v), 10)
	case uint64:
		return strconv.AppendUint(b, v, 10)
	case bool:
		return strconv.AppendBool(b, v)
	}
	return append(b, '?')
}

// State is what the panel knows: the lab's snapshot as of Snap.Seq, the most
// recent events (oldest first), whether a snapshot has arrived on the current
// connection (Live), and the timeline (Hist, its checkpoints and the
// position shown).
type State struct {
	Snap      events.Snapshot
	Recent    []events.Event
	Live      bool
	Snapshots int // snapshots received, including fresh ones after falling behind

	// Hist is the events since the first checkpoint, oldest first, at
	// most MaxHistory+CheckpointEvery.
	Hist []events.Event
	// checks are clones of the live state after Hist[:at], by at; the
	// first is at 0 (the state Hist starts from).
	checks []checkpoint
	// Following is true while the panel shows the live state; otherwise it
	// shows the state after Hist[:Pos] (Pos 0: Base itself).
	Following bool
	Pos       int

	view    events.Snapshot // cache of the past state shown
	viewPos int             // the Pos view was built for; -1 none

	// The lab's history before Hist (history.go): first is the first
	// event the server's history keeps (0: not known), past the page of
	// it held, inPast whether the timeline shows the state after event
	// pastAt from it, want the page asked for (0: none) and move the
	// move that waits for it (0: none, moveBack, moveForward).
	first  uint64
	past   *pastPage
	inPast bool
	pastAt uint64
	want   uint64
	move   int
}

type checkpoint struct {
	at   int
	snap events.Snapshot
}

// NewState returns an empty State following the live state.
func NewState() *State {
	return &State{Following: true, viewPos: -1, checks: []checkpoint{{}}}
}

// Handle applies one websocket message: a snapshot replaces the state and
// restarts the history from it; events newer than the snapshot are applied
// in order (older ones, already in the snapshot, are skipped) and recorded.
// It reports whether anything changed.
func (s *State) Handle(m events.Message) bool {
	switch m.Type {
	case events.MessageSnapshot:
		if m.Snapshot == nil {
			return false
		}
		if m.Snapshot.Seq < s.Snap.Seq {
			// Another lab (the server restarted): its history is not
			// the one paged in.
			s.first, s.past, s.inPast, s.want = 0, nil, false, 0
		}
		s.Snap = m.Snapshot.Clone()
		s.checks = append(s.checks[:0], checkpoint{0, m.Snapshot.Clone()})
		s.Hist = nil
		s.Pos = 0
		s.viewPos = -1
		s.Live = true
		s.Snapshots++
		return true
	case events.MessageEvents:
		// Hist grows by MaxHistory at a time, so dropping its oldest events
		// moves it to a new array only every MaxHistory events.
		if need := len(s.Hist) + len(m.Events); need > cap(s.Hist) {
			s.Hist = append(make([]events.Event, 0, need+MaxHistory), s.Hist...)
		}
		changed := false
		for _, e := range m.Events {
			if e.Seq <= s.Snap.Seq {
				continue
			}
			s.Snap.Apply(e)
			if !e.Kind.Unlisted() { // drawn in flight on the stage, or late values: not listed
				s.Recent = append(s.Recent, e)
			}
			s.Hist = append(s.Hist, e)
			changed = true
			if len(s.Hist)-s.checks[len(s.checks)-1].at >= CheckpointEvery {
				s.checks = append(s.checks, checkpoint{len(s.Hist), s.Snap.Clone()})
			}
		}
		// Resliced, not copied: appending moves the recent events to a
		// new array only as its capacity runs out.
		if n := len(s.Recent) - MaxRecent; n > 0 {
			clear(s.Recent[:n])
			s.Recent = s.Recent[n:]
		}
		s.dropOldest()
		return changed
	}
	return false
}

// dropOldest drops the events before the second checkpoint once Hist
// holds more than MaxHistory after it: the second becomes the first, and
// nothing is applied again. Hist is resliced, not copied.
func (s *State) dropOldest() {
	if len(s.checks) < 2 || len(s.Hist)-s.checks[1].at < MaxHistory {
		return
	}
	n := s.checks[1].at
	clear(s.Hist[:n]) // let the dropped events' records go
	s.Hist = s.Hist[n:]
	s.checks[0] = checkpoint{}
	s.checks = s.checks[1:]
	for i := range s.checks {
		s.checks[i].at -= n
	}
	// The past state shown is the same after dropping, unless it was
	// dropped itself.
	keep := s.viewPos == s.Pos && s.Pos >= n
	s.Pos = max(0, s.Pos-n)
	if keep {
		s.viewPos = s.Pos
	} else {
		s.viewPos = -1
	}
}

// Disconnected marks the state as no longer live (the stream ended).
func (s *State) Disconnected() { s.Live = false }

// Status returns the panel's status word: "live" or "connecting".
func (s *State) Status() string {
	if s.Live {
		return "live"
	}
	return "connecting"
}

// View returns the state the panel shows: the live one while Following,
// else the one after Hist[:Pos]. The caller must not change it.
func (s *State) View() *events.Snapshot {
	if s.Following {
		return &s.Snap
	}
	if s.inPast {
		return s.pastView()
	}
	if s.viewPos == s.Pos {
		return &s.view
	}
	c := s.checkpointBefore(s.Pos)
	// Stepping forward within a checkpoint's stretch goes on from the
	// state shown instead of cloning again.
	if s.viewPos < c.at || s.viewPos > s.Pos {
		s.view = c.snap.Clone()
		s.viewPos = c.at
	}
	for _, e := range s.Hist[s.viewPos:s.Pos] {
		s.view.Apply(e)
	}
	s.viewPos = s.Pos
	return &s.view
}

// checkpointBefore returns the last checkpoint at or before pos.
func (s *State) checkpointBefore(pos int) *checkpoint {
	i := len(s.checks) - 1
	for i > 0 && s.checks[i].at > pos {
		i--
	}
	return &s.checks[i]
}

// ViewSeq returns the Seq of the state shown.
func (s *State) ViewSeq() uint64 { return s.View().Seq }

// Back moves the timeline one event earlier (from live: to just before the
// newest event), over messages (which change nothing); from the start of
// Hist into the server's history (history.go); at the start of the
// history it stays.
func (s *State) Back() {
	if s.inPast {
		s.backPast()
		return
	}
	if s.Following {
		s.Following = false
		s.Pos = len(s.Hist)
	}
	// Messages change nothing: step over them to the change before.
	skip := func() {
		for s.Pos > 0 && s.Hist[s.Pos-1].Kind.Unlisted() {
			s.Pos--
		}
	}
	skip()
	if s.Pos == 0 && s.older() {
		s.inPast, s.pastAt = true, s.checks[0].snap.Seq
		s.backPast()
		return
	}
	s.Pos = max(0, s.Pos-1)
	skip()
}

// Forward moves the timeline one event later, over messages; past the
// newest it is live again.
func (s *State) Forward() {
	if s.Following {
		return
	}
	if s.inPast {
		s.forwardPast()
		return
	}
	s.Pos++
	for s.Pos < len(s.Hist) && s.Hist[s.Pos-1].Kind.Unlisted() {
		s.Pos++
	}
	if s.Pos >= len(s.Hist) {
		s.GoLive()
	}
}

// Seek shows the state at position pos of the timeline (see Position):
// before Hist, the server's history's; pos at or past the end is live.
func (s *State) Seek(pos int) {
	off := s.offset()
	if pos >= off+len(s.Hist) {
		s.GoLive()
		return
	}
	if pos < off {
		seq := s.first - 1 + uint64(max(0, pos))
		s.Following, s.inPast, s.pastAt = false, true, seq
		if !s.held(seq) {
			s.want, s.move = min(seq+HistoryPageLen/2+1, s.checks[0].snap.Seq+1), 0
		}
		return
	}
	s.Following, s.inPast, s.Pos = false, false, pos-off
}

// GoLive returns the timeline to the live state.
func (s *State) GoLive() { s.Following, s.inPast, s.Pos = true, false, len(s.Hist) }

// Position returns where the timeline is and its end (where it is when
// live), counted in events from the first it reaches: the server's
// history's first when it holds older events than Hist, else Hist's.
func (s *State) Position() (pos, end int) {
	off := s.offset()
	end = off + len(s.Hist)
	switch {
	case s.Following:
		return end, end
	case s.inPast:
		return int(s.pastAt - (s.first - 1)), end
	}
	return off + s.Pos, end
}

// TimelineText describes the timeline's position for its status line.
func (s *State) TimelineText(c Catalog) string {
	if s.Following {
		return c.T("panel.tl.live.at", s.Snap.Seq)
	}
	v := s.ViewSeq()
	return c.T("panel.tl.at", v, s.Snap.Seq-min(v, s.Snap.Seq))
}

// RenderBrokers returns the broker cards of v: id, state (word and shape),
// role (controller, how many partitions it leads) and listener.
func RenderBrokers(v *events.Snapshot, c Catalog) string {
	var b strings.Builder
	for _, br := range v.Brokers {
		st := string(br.State)
		b.WriteString(`<div class="broker-card state-` + esc(st) + `" data-broker="` + itoa(br.ID) + `">`)
		b.WriteString(`<strong>` + esc(c.T("panel.broker", br.ID)) + `</strong> `)
		b.WriteString(`<span class="badge state-` + esc(st) + `"><span aria-hidden="true">` + br.State.Glyph() + `</span> ` + esc(c.T("panel.state."+st)) + `</span>`)
		var roles []string
		if br.ID == v.Controller {
			roles = append(roles, c.T("panel.controller"))
		}
		if n := leads(v, br.ID); n > 0 {
			roles = append(roles, c.T("panel.leaderof", n))
		}
		if len(roles) > 0 {
			b.WriteString(`<div class="role">` + esc(strings.Join(roles, " · ")) + `</div>`)
		}
		b.WriteString(`<div><code>` + esc(br.Listener) + `</code></div></div>`)
	}
	return b.String()
}

func leads(v *events.Snapshot, id int32) (n int) {
	for _, t := range v.Topics {
		for _, p := range t.Partitions {
			if p.Leader == id {
				n++
			}
		}
	}
	return n
}

func contains(v []int32, x int32) bool {
	for _, y := range v {
		if y == x {
			return true
		}
	}
	return false
}

// RenderEvents returns the recent events as list items, newest first; items
// with Seq above newSince get the class "new" (a highlight that
// prefers-reduced-motion turns off), and the one at cursor (0: none) the
// class "cursor".
func (s *State) RenderEvents(newSince, cursor uint64, c Catalog) string {
	var b strings.Builder
	list := s.Recent
	if v := s.ViewSeq(); !s.Following && (len(list) == 0 || v < list[0].Seq) {
		list = s.pastEvents(v) // the timeline is before the recent events
	}
	for i := len(list) - 1; i >= 0; i-- {
		e := list[i]
		if e.Kind.Unlisted() {
			continue // pastEvents' messages
		}
		cls := "k-" + string(e.Kind)
		if e.Seq > newSince {
			cls += " new"
		}
		if e.Seq == cursor {
			cls += " cursor"
		}
		b.WriteString(`<li class="` + esc(cls) + `" data-seq="` + strconv.FormatUint(e.Seq, 10) + `">`)
		b.WriteString(`<span class="seq">#` + strconv.FormatUint(e.Seq, 10) + `</span>`)
		b.WriteString(`<span class="kind">` + esc(c.T("panel.kind."+string(e.Kind))) + `</span>`)
		b.WriteString(esc(Describe(e, c)) + `</li>`)
	}
	return b.String()
}

// Describe returns a one-line description of e in c's language, followed by
// its message when it has one (EventMessage).
func Describe(e events.Event, c Catalog) string {
	tp := e.Topic + "-" + itoa(e.Partition)
	o := e.Offsets
	if o == nil {
		o = &events.Offsets{}
	}
	var d string
	switch e.Kind {
	case events.KindAppend:
		d = c.T("panel.ev.append", e.Broker, o.Base, o.Last, tp, o.LEO)
	case events.KindFetch:
		d = c.T("panel.ev.fetch", e.Broker, tp, o.Base, o.HW)
	case events.KindHW:
		d = c.T("panel.ev.hw", e.Broker, tp, o.HW)
	case events.KindLEO:
		d = c.T("panel.ev.leo", e.Broker, tp, o.LEO)
	case events.KindISR:
		d = c.T("panel.ev.isr", tp, ids(e.ISR))
	case events.KindElection:
		if l := e.Leader; l != nil {
			d = c.T("panel.ev.election", tp, brokerName(l.Leader, c), l.LeaderEpoch)
			if l.Unclean {
				d += " " + c.T("panel.ev.unclean")
			}
		}
	case events.KindEpoch:
		if l := e.Leader; l != nil {
			d = c.T("panel.ev.epoch", e.Broker, tp, l.LeaderEpoch, l.StartOffset)
		}
	case events.KindAck:
		if e.Acks == events.AcksNone {
			// The leader knows the offsets; the producer is never told.
			d = c.T("panel.ev.ack0", tp, o.Base, o.Last)
		} else {
			d = c.T("panel.ev.ack", tp, string(e.Acks), o.Base, o.Last)
		}
	case events.KindProduceError:
		d = c.T("panel.ev.produce-error", tp, e.Error, string(e.Acks))
	case events.KindTruncation:
		d = c.T("panel.ev.truncation", e.Broker, tp, o.LEO, len(e.Truncated))
	case events.KindFault:
		if f := e.Fault; f != nil {
			switch f.Kind {
			case events.FaultCut:
				if f.OneWay {
					d = c.T("panel.ev.cut1", f.From, f.To)
				} else {
					d = c.T("panel.ev.cut2", f.From, f.To)
				}
			case events.FaultHeal:
				d = c.T("panel.ev.heal")
			default:
				d = c.T("panel.ev."+string(f.Kind), e.Broker)
			}
		}
	case events.KindConfig:
		if cf := e.Config; cf != nil {
			scope := e.Topic
			if scope == "" {
				scope = c.T("panel.ev.lab")
			}
			if cf.Value == "" {
				d = c.T("panel.ev.config.unset", scope, cf.Key)
			} else {
				d = c.T("panel.ev.config", scope, cf.Key, cf.Value)
			}
		}
	case events.KindClock:
		if ck := e.Clock; ck != nil {
			switch ck.Action {
			case events.ClockStep:
				d = c.T("panel.ev.step", ck.StepMs)
			case events.ClockRate:
				d = c.T("panel.ev.rate", RateLabel(c, ck.Rate))
			default:
				d = c.T("panel.ev." + string(ck.Action))
			}
		}
	case events.KindBroker:
		d = c.T("panel.ev.broker", e.Broker, c.T("panel.state."+string(e.BrokerState)))
	case events.KindTopic:
		if e.TopicCreated != nil {
			// The controller's message says all of this and the
			// replication factor: the line is that message alone.
			if m := EventMessage(e, c); m != "" {
				return m
			}
			d = c.T("panel.ev.topic.created", e.TopicCreated.Name, len(e.TopicCreated.Partitions))
		} else {
			d = c.T("panel.ev.topic.deleted", e.Topic)
		}
	}
	if e.Kind.IsMessage() && e.Wire != nil {
		d = c.T("stage.ev.msg", nodeName(e.Wire.From, c), nodeName(e.Wire.To, c), MessageLabel(e, c))
	}
	if d == "" {
		d = string(e.Kind)
	}
	if m := EventMessage(e, c); m != "" {
		d += " — " + m
	}
	return d
}

// EventMessage returns e's message in c's language; its English Message
// when it has no key (an older server's event).
func EventMessage(e events.Event, c Catalog) string {
	if e.MessageKey == "" {
		return e.Message
	}
	return events.Render(c.T, e.MessageKey, e.MessageArgs)
}

// TruncatedReason returns why a truncated record went (its truncation
// event's message) in c's language.
func TruncatedReason(t events.TruncatedRecord, c Catalog) string {
	if t.ReasonKey == "" {
		return t.Reason
	}
	return events.Render(c.T, t.ReasonKey, t.ReasonArgs)
}

// esc escapes s for HTML text and attribute values, as html.EscapeString
// does (which would bring in the html package's entity tables).
func esc(s string) string {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '<', '>', '&', '"', '\'':
			return escSlow(s)
		}
	}
	return s
}

func escSlow(s string) string {
	b := make([]byte, 0, len(s)+16)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '<':
			b = append(b, "&lt;"...)
		case '>':
			b = append(b, "&gt;"...)
		case '&':
			b = append(b, "&amp;"...)
		case '"':
			b = append(b, "&#34;"...)
		case '\'':
			b = append(b, "&#39;"...)
		default:
			b = append(b, c)
		}
	}
	return string(b)
}

// Esc is esc for the WASM side.
func Esc(s string) string { return esc(s) }

func itoa(v int32) string { return strconv.Itoa(int(v)) }

// Atoi parses a non-negative decimal int of at most 9 digits, as the
// page's data attributes and inputs hold (strconv.Atoi's error type, with
// its quoting, would be kept in the WASM panel).
func Atoi(s string) (int, bool) {
	if s == "" || len(s) > 9 {
		return 0, false
	}
	n := 0
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

func i64(v int64) string { return strconv.FormatInt(v, 10) }

func brokerName(id int32, c Catalog) string {
	if id == events.NoBroker {
		return c.T("panel.nobroker")
	}
	return c.T("panel.broker", id)
}

// ids writes broker ids as Go's fmt.Sprint does, [1 2 3]: the lesson
// texts and lesson lanes (views) write an ISR so.
func ids(v []int32) string {
	b := append(make([]byte, 0, 2+4*len(v)), '[')
	for i, id := range v {
		if i > 0 {
			b = append(b, ' ')
		}
		b = strconv.AppendInt(b, int64(id), 10)
	}
	return string(append(b, ']'))
}
