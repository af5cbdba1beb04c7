package events

// HistoryPage is a page of the lab's history (GET /api/v1/history): Events,
// oldest first, and Snapshot, the state after the event before the first
// of them, so applying Events to it in order gives the state after each.
// FirstSeq is the first event the history keeps and LastSeq the last it
// has written: a page before FirstSeq has no events. Its snapshot and
// events are a Message's fields, so the panel decodes a page with
// DecodeMessage (and reads first_seq apart: static/panel.js).
type HistoryPage struct {
	FirstSeq uint64    `json:"first_seq"`
	LastSeq  uint64    `json:"last_seq"`
	Snapshot *Snapshot `json:"snapshot"`
	Events   []Event   `json:"events"`
}
