package events

// HistoryPage is a page of the lab's history (GET /api/v1/history): Events,
// oldest first, and Snapshot, the state after the event before the first
// of them, so applying Events to it in order gives the state after each.
// FirstSeq is the first event the history keeps and LastSeq the last it
// has written: a page before FirstSeq has no events. The panel decodes it
// with DecodeHistoryPage.
type HistoryPage struct {
	FirstSeq uint64    `json:"first_seq"`
	LastSeq  uint64    `json:"last_seq"`
	Snapshot *Snapshot `json:"snapshot"`
	Events   []Event   `json:"events"`
}

// DecodeHistoryPage decodes a HistoryPage from its JSON as encoding/json
// would, without reflection (see DecodeMessage); unknown fields are
// skipped.
func DecodeHistoryPage(data string) (HistoryPage, error) {
	d := decoder{b: data}
	var p HistoryPage
	d.object(func(k string) {
		switch k {
		case "first_seq":
			p.FirstSeq = d.u64()
		case "last_seq":
			p.LastSeq = d.u64()
		case "snapshot":
			if !d.null() {
				p.Snapshot = new(Snapshot)
				d.snapshot(p.Snapshot)
			}
		case "events":
			if d.list() {
				p.Events = []Event{}
			}
			d.array(func() {
				p.Events = append(p.Events, Event{})
				d.event(&p.Events[len(p.Events)-1])
			})
		default:
			d.skip()
		}
	})
	d.end()
	return p, d.err
}
