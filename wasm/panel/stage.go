package panel

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"tidemark/events"
)

// The stage's picture is an SVG of StageW×StageH user units: the
// controller (node 0) at the top, the UI's producer at the top left, the
// brokers on an arc below. Nodes and their menus are HTML laid over it (so
// they are buttons a keyboard reaches); links and messages are SVG.
const (
	StageW = 600
	StageH = 270
	// ClientNode is where the stage draws clients (Wire's NoBroker).
	ClientNode = events.NoBroker
	// linkGap is how far apart a link's two directions are drawn.
	linkGap = 5
)

// Point is a position on the stage, in user units.
type Point struct{ X, Y float64 }

// StageLayout places the controller, the client and the brokers ids.
func StageLayout(ids []int32) map[int32]Point {
	pos := map[int32]Point{0: {StageW / 2, 34}, ClientNode: {62, 34}}
	n := len(ids)
	for i, id := range ids {
		// Along the lower half of an ellipse, left to right, so that no
		// link between two brokers passes through a third.
		a := math.Pi * 0.88
		if n > 1 {
			a = math.Pi*0.88 - float64(i)*math.Pi*0.76/float64(n-1)
		} else {
			a = math.Pi / 2
		}
		pos[id] = Point{StageW/2 + 245*math.Cos(a), 125 + 110*math.Sin(a)}
	}
	return pos
}

// stageLayout places v's nodes as StageLayout does, without the lab's
// controller (node 0) and the UI's producer when v is an observed cluster:
// its controller is one of its brokers (whose id may be 0), and the UI
// produces nothing to it.
func stageLayout(v *events.Snapshot) map[int32]Point {
	ids := brokerIDs(v)
	pos := StageLayout(ids)
	if v.Observed {
		delete(pos, ClientNode)
		if !slices.Contains(ids, 0) {
			delete(pos, 0)
		}
	}
	return pos
}

// stageLinks returns v's directed links: StageLinks, or for an observed
// cluster only those between its brokers.
func stageLinks(v *events.Snapshot) []Link {
	ids := brokerIDs(v)
	if !v.Observed {
		return StageLinks(ids)
	}
	var out []Link
	for i, a := range ids {
		for _, b := range ids[i+1:] {
			out = append(out, Link{a, b}, Link{b, a})
		}
	}
	return out
}

// stageNodeName is nodeName, but every node of an observed cluster is a
// broker.
func stageNodeName(v *events.Snapshot, id int32, c Catalog) string {
	if v.Observed {
		return c.T("panel.broker", id)
	}
	return nodeName(id, c)
}

// Link is one direction of a link between two nodes.
type Link struct{ From, To int32 }

// StageLinks returns every directed link of the stage: each broker to and
// from the controller and to and from every other broker.
func StageLinks(ids []int32) []Link {
	var out []Link
	nodes := append([]int32{0}, ids...)
	for i, a := range nodes {
		for _, b := range nodes[i+1:] {
			out = append(out, Link{a, b}, Link{b, a})
		}
	}
	return out
}

// cut reports whether the snapshot has the link from→to cut.
func cut(v *events.Snapshot, from, to int32) bool {
	for _, c := range v.Cuts {
		if c.From == from && c.To == to || !c.OneWay && c.From == to && c.To == from {
			return true
		}
	}
	return false
}

func brokerIDs(v *events.Snapshot) []int32 {
	ids := make([]int32, 0, len(v.Brokers))
	for _, b := range v.Brokers {
		ids = append(ids, b.ID)
	}
	slices.Sort(ids)
	return ids
}

// linkPath returns the ends of the link from→to, drawn linkGap/2 to the
// right of the line between the nodes' centres and short of the nodes.
func linkPath(pos map[int32]Point, from, to int32) (Point, Point) {
	a, b := pos[from], pos[to]
	dx, dy := b.X-a.X, b.Y-a.Y
	l := math.Hypot(dx, dy)
	if l == 0 {
		return a, b
	}
	ux, uy := dx/l, dy/l
	ox, oy := -uy*linkGap/2, ux*linkGap/2
	const inset = 34 // the node's half width, roughly
	return Point{a.X + ux*inset + ox, a.Y + uy*inset + oy}, Point{b.X - ux*inset + ox, b.Y - uy*inset + oy}
}

func f1(v float64) string { return F1(v) }

// F1 formats v with one decimal, as strconv.FormatFloat(v, 'f', 1, 64)
// does for the coordinates the stage uses (a tie may round the other way),
// with integer arithmetic:
// float formatting brought tens of KiB of tables into the WASM panel.
func F1(v float64) string {
	n := int64(math.Round(v * 10))
	b := make([]byte, 0, 12)
	if n < 0 {
		b = append(b, '-')
		n = -n
	}
	b = strconv.AppendInt(b, n/10, 10)
	return string(append(b, '.', byte('0'+n%10)))
}

// StageLinksSVG returns the markup of the links' group: one line per
// direction, with an arrowhead; a cut direction is dashed, in vermillion,
// and crossed out (✕) in its middle, so a one-way cut shows which way.
func StageLinksSVG(v *events.Snapshot, c Catalog) string {
	pos := stageLayout(v)
	var b strings.Builder
	for _, l := range stageLinks(v) {
		p, q := linkPath(pos, l.From, l.To)
		isCut := cut(v, l.From, l.To)
		cls, state := "link", "up"
		if isCut {
			cls, state = "link cut", "cut"
		}
		name := c.T("stage.link.dir", stageNodeName(v, l.From, c), stageNodeName(v, l.To, c), c.T("stage.link."+state))
		b.WriteString(`<g class="` + cls + `" data-testid="link-` + itoa(l.From) + `-` + itoa(l.To) + `" data-from="` + itoa(l.From) +
			`" data-to="` + itoa(l.To) + `" data-state="` + state + `"><title>` + esc(name) + `</title><line x1="` + f1(p.X) + `" y1="` + f1(p.Y) +
			`" x2="` + f1(q.X) + `" y2="` + f1(q.Y) + `" marker-end="url(#stage-arrow` + map[bool]string{true: "-cut", false: ""}[isCut] + `)"/>`)
		if isCut {
			mx, my := (p.X+q.X)/2, (p.Y+q.Y)/2
			b.WriteString(`<text class="cut-mark" x="` + f1(mx) + `" y="` + f1(my+5) + `" text-anchor="middle">✕</text>`)
		}
		b.WriteString(`</g>`)
	}
	return b.String()
}

// StageLinksKey returns what StageLinksSVG draws from: the nodes and the
// cut directions. The markup changes only when the key does.
func StageLinksKey(v *events.Snapshot) string {
	var b strings.Builder
	b.WriteString(StageShape(v))
	if v.Observed {
		b.WriteString("o")
	}
	for _, c := range v.Cuts {
		b.WriteString("|" + itoa(c.From) + ">" + itoa(c.To))
		if !c.OneWay {
			b.WriteString("<")
		}
	}
	return b.String()
}

// nodeName is "controller", "broker N" or "client" in c's language.
func nodeName(id int32, c Catalog) string {
	switch id {
	case 0:
		return c.T("panel.controller")
	case ClientNode:
		return c.T("stage.client")
	}
	return c.T("panel.broker", id)
}

// StageShape is what the stage's nodes depend on besides their state: the
// brokers there are. While it stays, nodes are updated in place.
func StageShape(v *events.Snapshot) string {
	var b strings.Builder
	for _, id := range brokerIDs(v) {
		b.WriteString(itoa(id) + ",")
	}
	return b.String()
}

// ClientPos is where the stage draws the UI's producer, as a data-pos;
// ok is false for an observed cluster, which has none.
func ClientPos(v *events.Snapshot) (pos string, ok bool) {
	p, ok := stageLayout(v)[ClientNode]
	return pct(p), ok
}

// pct is where an HTML element goes over the stage at p: "left%,top%",
// in its data-pos attribute. The page's policy forbids inline styles, so
// the panel places the element from it (PlaceJS); without the panel the
// nodes are listed in order instead.
func pct(p Point) string {
	return f1(p.X*100/StageW) + `,` + f1(p.Y*100/StageH)
}

// StageNodesHTML returns the stage's nodes: the controller and the
// brokers, each placed by its data-pos ("left%,top%"); the UI's producer
// is the page's (ClientPos), which the panel does not redraw. With menus,
// a broker is a <details> whose menu injects its faults: keyboard and
// no-JS use need nothing more, and each form returns to next. A broker's menu holds every action,
// each marked with the states it applies to (data-when: "running" or
// "down"); the stylesheet shows only those of the node's state, so an
// update of the state in place offers the right ones without rebuilding an
// open menu. Without menus (an observed cluster, a lesson's stage, which
// the lesson drives) the nodes only show.
func StageNodesHTML(v *events.Snapshot, c Catalog, next string, menus bool) string {
	menus = menus && !v.Observed
	pos := stageLayout(v)
	var b strings.Builder
	if !v.Observed {
		b.WriteString(`<div class="node controller" data-testid="node-0" data-state="up" data-pos="` + pct(pos[0]) + `"><span class="node-name">` +
			esc(c.T("panel.controller")) + `</span><span class="node-state">` + esc(c.T("stage.node0")) + `</span></div>`)
	}
	for _, nv := range StageNodes(v, c) {
		sid := itoa(nv.ID)
		attrs := ` class="node broker state-` + esc(nv.State) + `" data-testid="node-` + sid + `" data-broker="` + sid +
			`" data-state="` + esc(nv.State) + `" data-pos="` + pct(pos[nv.ID]) + `"`
		spans := `<span class="node-name">` + esc(c.T("panel.broker", nv.ID)) + `</span><span class="node-state">` + esc(nv.Text) +
			`</span><span class="node-role">` + esc(nv.Role) + `</span>`
		if !menus {
			b.WriteString(`<div` + attrs + `>` + spans + `</div>`)
			continue
		}
		b.WriteString(`<details` + attrs + `><summary aria-label="` + esc(c.T("stage.menu.broker", nv.ID)) + `">` + spans + `</summary><div class="menu">`)
		for _, act := range []string{"crash", "power-loss", "disk-failure", "fetch", "restart"} {
			when := "running"
			if act == "restart" {
				when = "down"
			}
			b.WriteString(actionForm(next, act, c.T("stage.act."+act, nv.ID), "broker", sid, "", when))
		}
		b.WriteString(`</div></details>`)
	}
	return b.String()
}

// actionForm is a one-button form posting action to /ui/action with the
// given hidden fields (name, value pairs). A pair whose name is "" sets
// the form's data-when instead (the broker states it applies to).
func actionForm(next, action, label string, fields ...string) string {
	var b, hidden strings.Builder
	when := ""
	for i := 0; i+1 < len(fields); i += 2 {
		if fields[i] == "" {
			when = ` data-when="` + esc(fields[i+1]) + `"`
			continue
		}
		hidden.WriteString(`<input type="hidden" name="` + esc(fields[i]) + `" value="` + esc(fields[i+1]) + `">`)
	}
	b.WriteString(`<form method="post" action="/ui/action" class="inline" data-action="` + esc(action) + `"` + when + `><input type="hidden" name="action" value="` + esc(action) + `">`)
	b.WriteString(hidden.String())
	b.WriteString(`<input type="hidden" name="next" value="` + esc(next) + `"><button type="submit">` + esc(label) + `</button></form>`)
	return b.String()
}

// StageLinkMenusHTML returns a button at the middle of each link (a pair
// of nodes) that opens its menu: cut one way, cut the other way, cut both
// ways, heal every link. Without menus (an observed cluster, which the
// lab only reads, or a lesson's stage) there are none.
func StageLinkMenusHTML(v *events.Snapshot, c Catalog, next string, menus bool) string {
	if v.Observed || !menus {
		return ""
	}
	ids := brokerIDs(v)
	pos := StageLayout(ids)
	var b strings.Builder
	for _, l := range StageLinks(ids) {
		if l.From > l.To {
			continue
		}
		a, z := itoa(l.From), itoa(l.To)
		p, q := pos[l.From], pos[l.To]
		// 40% of the way, not half: the middles of 0–2 and 1–3 nearly meet.
		mid := Point{p.X + (q.X-p.X)*0.4, p.Y + (q.Y-p.Y)*0.4}
		na, nz := nodeName(l.From, c), nodeName(l.To, c)
		b.WriteString(`<details class="linkctl" data-testid="linkctl-` + a + `-` + z + `" data-pos="` + pct(mid) + `"><summary aria-label="` +
			esc(c.T("stage.menu.link", na, nz)) + `"><span aria-hidden="true">⋯</span></summary><div class="menu">`)
		b.WriteString(actionForm(next, "cut", c.T("stage.act.cut1", na, nz), "from", a, "to", z, "oneway", "true"))
		b.WriteString(actionForm(next, "cut", c.T("stage.act.cut1", nz, na), "from", z, "to", a, "oneway", "true"))
		b.WriteString(actionForm(next, "cut", c.T("stage.act.cut2", na, nz), "from", a, "to", z, "oneway", "false"))
		b.WriteString(actionForm(next, "heal", c.T("stage.act.heal")))
		b.WriteString(`</div></details>`)
	}
	return b.String()
}

// NodeView is what a broker's node shows: state (class and words) and role.
type NodeView struct {
	ID    int32
	State string // "up", "crashed", "fenced"
	Text  string // glyph and state word
	Role  string // "controller", "leader of N", both (" · ") or ""
}

// StageNodes returns each broker's NodeView in v.
func StageNodes(v *events.Snapshot, c Catalog) []NodeView {
	out := make([]NodeView, 0, len(v.Brokers))
	for _, br := range v.Brokers {
		nv := NodeView{ID: br.ID, State: string(br.State), Text: br.State.Glyph() + " " + c.T("panel.state."+string(br.State))}
		var roles []string
		if br.ID == v.Controller { // an observed cluster's: the lab's is node 0
			roles = append(roles, c.T("panel.controller"))
		}
		if n := leads(v, br.ID); n > 0 {
			roles = append(roles, c.T("panel.leaderof", n))
		}
		nv.Role = strings.Join(roles, " · ")
		out = append(out, nv)
	}
	return out
}

// Flight is one message in flight on the stage: its kind, ends, label and
// accessible description.
type Flight struct {
	Seq      uint64
	Kind     events.Kind
	From, To Point
	Label    string
	Lost     bool
	Title    string
}

// Flights returns the messages among evs the stage animates: the message
// kinds, and acks and produce errors (leader → client). At most max, the
// newest.
func Flights(v *events.Snapshot, evs []events.Event, c Catalog, max int) []Flight {
	pos := stageLayout(v)
	var out []Flight
	for _, e := range evs {
		var from, to int32
		var label string
		lost := false
		switch {
		case e.Kind.IsMessage() && e.Wire != nil:
			w := e.Wire
			from, to, lost = w.From, w.To, w.Lost
			label = MessageLabel(e, c)
		case e.Kind == events.KindAck || e.Kind == events.KindProduceError:
			from, to = e.Broker, ClientNode
			if e.Kind == events.KindAck {
				label = c.T("stage.msg.ack", string(e.Acks))
			} else {
				label = e.Error
			}
		default:
			continue
		}
		p, okp := pos[from]
		q, okq := pos[to]
		if !okp || !okq {
			continue
		}
		if from != ClientNode && to != ClientNode {
			p, q = linkPath(pos, from, to)
		}
		out = append(out, Flight{Seq: e.Seq, Kind: e.Kind, From: p, To: q, Label: label, Lost: lost, Title: Describe(e, c)})
	}
	out = groupFlights(out, c)
	if len(out) > max {
		out = out[len(out)-max:]
	}
	return out
}

// groupFlights merges the messages that take the same direction of the
// same link in one frame into the first of them: drawn together, their
// labels overprinted one another. The merged one's label counts the
// others ("fetch @3 +2") and its title (the list's description, for screen
// readers) holds every one.
func groupFlights(fs []Flight, c Catalog) []Flight {
	out := fs[:0]
	more := make([]int, 0, len(fs)) // by index in out: how many joined it
	for _, f := range fs {
		i := 0
		for i < len(out) && (out[i].From != f.From || out[i].To != f.To) {
			i++
		}
		if i < len(out) {
			more[i]++
			out[i].Title += "\n" + f.Title
			out[i].Lost = out[i].Lost && f.Lost
			continue
		}
		out = append(out, f)
		more = append(more, 0)
	}
	for i, n := range more {
		if n > 0 {
			out[i].Label += " " + c.T("stage.msg.more", n)
		}
	}
	return out
}

// MessageLabel is the short label a message carries on the stage: a
// fetch's offset and last epoch, a response's HW, a produce's acks; for
// any other kind its event's message (a Raft message's term, index and
// commit), else the kind's name.
func MessageLabel(e events.Event, c Catalog) string {
	w := e.Wire
	switch e.Kind {
	case events.KindFetchRequest:
		return c.T("stage.msg.fetch", w.FetchOffset, w.LastFetchedEpoch)
	case events.KindFetchResponse:
		return c.T("stage.msg.fetched", w.Records, w.HW)
	case events.KindProduceRequest:
		return c.T("stage.msg.produce", w.Records, string(e.Acks))
	case events.KindClientFetch:
		return c.T("stage.msg.clientfetch", w.FetchOffset, w.HW)
	case events.KindHeartbeat:
		return c.T("stage.msg.heartbeat")
	case events.KindAlterPartition:
		return c.T("stage.msg.alter", ids(e.ISR))
	case events.KindMetadata:
		return c.T("stage.msg.metadata", w.Version)
	}
	if e.MessageKey != "" { // a kind without its own label says what it carries
		return EventMessage(e, c)
	}
	return string(e.Kind)
}

// MsgShape is how a kind of message is drawn, centred on 0,0 (in the
// topology's units): D, an SVG path, filled in the CSS colour Fill and
// outlined in ink, or, for a Tick, stroked in Fill alone; Flap, when set,
// a path outlined in ink over it. The legend draws it as SVG (Shape), the
// messages in flight on the topology's canvas (static/panel.js).
type MsgShape struct {
	D, Flap, Fill string
	Tick          bool
}

// shapes draws each kind of message in its own shape. A list, not a map:
// a map literal is built by code at start, which cost the panel 3.7 KB.
var shapes = [...]struct {
	kind  events.Kind
	shape MsgShape
}{
	{events.KindFetchRequest, MsgShape{D: "M6 0 A6 6 0 1 1 -6 0 A6 6 0 1 1 6 0 Z", Fill: "--sky"}},
	{events.KindFetchResponse, MsgShape{D: "M0 -7 L7 0 L0 7 L-7 0 Z", Fill: "--blue"}},
	{events.KindProduceRequest, MsgShape{D: "M-6 -6 H6 V6 H-6 Z", Fill: "--orange"}},
	{events.KindAck, MsgShape{D: "M-7 0 L-2 5 L7 -5", Fill: "--green", Tick: true}},
	{events.KindProduceError, MsgShape{D: "M-5 -5 L5 5 M5 -5 L-5 5", Fill: "--vermillion", Tick: true}},
	{events.KindClientFetch, MsgShape{D: "M-6 -6 L6 -6 L0 6 Z", Fill: "--yellow"}},
	{events.KindHeartbeat, MsgShape{D: "M0 6 L-6 0 A3 3 0 0 1 0 -4 A3 3 0 0 1 6 0 Z", Fill: "--purple"}},
	{events.KindAlterPartition, MsgShape{D: "M-7 0 L-3.5 -6 L3.5 -6 L7 0 L3.5 6 L-3.5 6 Z", Fill: "--green"}},
	{events.KindMetadata, MsgShape{D: "M-8 -5 H8 V5 H-8 Z", Flap: "M-8 -5 L0 1 L8 -5", Fill: "--metadata"}},
}

// anyShape draws every message kind that has no shape of its own (Raft's,
// and kinds added later): a pill, its label beside it.
var anyShape = MsgShape{D: "M-3 -4 H3 A4 4 0 0 1 3 4 H-3 A4 4 0 0 1 -3 -4 Z", Fill: "--muted"}

// ShapeOf returns how messages of kind k are drawn.
func ShapeOf(k events.Kind) MsgShape {
	for _, s := range shapes {
		if s.kind == k {
			return s.shape
		}
	}
	return anyShape
}

// Shape returns the SVG markup of the shape messages of kind k are drawn
// in (the legend's), coloured by app.css's .msg-<kind> rules.
func Shape(k events.Kind) string {
	s := ShapeOf(k)
	cls := ""
	switch {
	case s.Tick:
		cls = ` class="tick"`
	case s.Fill == anyShape.Fill:
		cls = ` class="any"`
	}
	m := `<path d="` + s.D + `"` + cls + `/>`
	if s.Flap != "" {
		m += `<path d="` + s.Flap + `" class="flap"/>`
	}
	return m
}

// HTML returns the message's item in the list of messages in flight
// (#topo-msgs): an SVG group outside any SVG, so never rendered, that says
// what the canvas draws (data-testid msg, data-kind, data-seq, the ms it
// takes to cross its link as data-duration, its description and label)
// for tests and the page's scripts.
func (f *Flight) HTML(durMs float64) string {
	cls := "msg msg-" + string(f.Kind)
	if f.Lost {
		cls += " lost"
	}
	return `<g class="` + esc(cls) + `" data-testid="msg" data-kind="` + esc(string(f.Kind)) + `" data-seq="` + strconv.FormatUint(f.Seq, 10) +
		`" data-duration="` + F1(durMs) + `"><title>` + esc(f.Title) + `</title><text>` + esc(f.Label) + `</text></g>`
}

// labelAt places the label's text on the message's right-hand side, where
// linkPath draws its direction of the link: the labels of a link's two
// directions (a fetch and its response) then pass on either side instead
// of over each other. x, y are from the message's centre; end says the
// text ends there (else starts).
func (f *Flight) labelAt() (x, y int64, end bool) {
	dx, dy := f.To.X-f.From.X, f.To.Y-f.From.Y
	switch {
	case math.Abs(dx) >= math.Abs(dy) && dx > 0: // rightwards: below
		return 9, 16, false
	case math.Abs(dx) >= math.Abs(dy): // leftwards: above
		return 9, -8, false
	case dy > 0: // downwards: on the left
		return -9, 4, true
	}
	return 9, 4, false // upwards: on the right
}

// Fly appends an M op that puts f in flight on the topology's canvas
// (static/panel.js draws it in every frame until it lands): from and to
// in pixels (the topology's units × scale), its delay and duration in ms,
// the scale, flags (1 lost: it stops halfway and fades; 2 still: reduced
// motion, shown at the middle of its link; 4 a tick; 8 the label ends at
// its place), its shape (MsgShape: D, Flap, Fill), label, the label's
// place and its title (every message it carries, described: what hovering
// or focusing the topology shows).
func (p *Painter) Fly(f *Flight, scale, delayMs, durMs float64, still bool) {
	sh := ShapeOf(f.Kind)
	p.Op('M', 0)
	for _, v := range [...]float64{f.From.X * scale, f.From.Y * scale, f.To.X * scale, f.To.Y * scale, delayMs, durMs, scale} {
		p.Str(F1(v))
	}
	lx, ly, end := f.labelAt()
	var flags int64
	for bit, on := range [...]bool{f.Lost, still, sh.Tick, end} {
		if on {
			flags |= 1 << bit
		}
	}
	p.Num(flags)
	p.Str(sh.D)
	p.Str(sh.Flap)
	p.Str(sh.Fill)
	p.Str(f.Label)
	p.Num(lx)
	p.Num(ly)
	p.Str(f.Title)
}
