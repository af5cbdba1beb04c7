package views

import (
	"tidemark/apiv1"
	"tidemark/events"
	"tidemark/internal/clip"
)

// LaneWidth is how many offsets the server-rendered lanes show: the newest
// ones up to the furthest LEO (or truncated record) of any replica.
const LaneWidth = 32

// laneCell is one offset of one replica's lane.
type laneCell struct {
	Offset    int64
	Rec       *apiv1.RecordView       // nil: the replica has no record here
	Ghost     *events.TruncatedRecord // a record truncation removed from here (the newest)
	Committed bool                    // below the partition's HW
	HW, LEO   bool                    // the replica's HW / LEO is at this offset
	LSO       bool                    // the replica's LSO is at this offset
}

// laneWindow returns the offsets [lo, hi) the lanes of v show.
func laneWindow(v apiv1.PartitionView) (lo, hi int64) {
	for _, r := range v.ReplicaLogs {
		hi = max(hi, r.LEO, r.HW)
		for _, t := range r.Truncated {
			hi = max(hi, t.Offset+1)
		}
	}
	lo = max(0, hi-LaneWidth)
	start := hi
	for _, r := range v.ReplicaLogs {
		start = min(start, r.LogStartOffset)
	}
	lo = max(lo, start)
	return lo, hi + 1 // one more column shows where the next record goes (LEO)
}

// laneCells lays replica r out on [lo, hi).
func laneCells(v apiv1.PartitionView, r apiv1.ReplicaView, lo, hi int64) []laneCell {
	cells := make([]laneCell, 0, hi-lo)
	for o := lo; o < hi; o++ {
		cells = append(cells, laneCell{Offset: o, Committed: o < v.HighWatermark, HW: o == r.HW, LEO: o == r.LEO, LSO: r.LSO != nil && o == *r.LSO})
	}
	for i := range r.Records {
		if o := r.Records[i].Offset; o >= lo && o < hi {
			cells[o-lo].Rec = &r.Records[i]
		}
	}
	for i := range r.Truncated {
		if o := r.Truncated[i].Offset; o >= lo && o < hi {
			cells[o-lo].Ghost = &r.Truncated[i]
		}
	}
	return cells
}

func hasGhosts(cells []laneCell) bool {
	for _, c := range cells {
		if c.Ghost != nil {
			return true
		}
	}
	return false
}

// cellLabel describes a cell for screen readers and tooltips.
func (p Page) cellLabel(c laneCell) string {
	if c.Rec == nil {
		return p.t("ui.lane.empty", c.Offset)
	}
	// The label is written twice per cell (tooltip and screen-reader
	// text) for each replica: a 1 MB value made the page 4 MB a record.
	v := clip.Bytes(c.Rec.Value, maxLabelValue)
	if c.Rec.Control != "" {
		return p.t("panel.lane.marker", c.Offset, p.t("panel.lane."+c.Rec.Control), c.Rec.ProducerID)
	}
	label := p.t("ui.lane.rec.uncommitted", c.Offset, c.Rec.LeaderEpoch, v)
	if c.Committed {
		label = p.t("ui.lane.rec.committed", c.Offset, c.Rec.LeaderEpoch, v)
	}
	if c.Rec.Aborted {
		label += " — " + p.t("panel.lane.aborted")
	}
	return label
}

// cellEpoch is what a cell writes under its offset: its leader epoch, a
// transaction marker's flag and ✓ or ✗, ⊘ after an aborted record's
// epoch (as the live lanes draw them).
func cellEpoch(r *apiv1.RecordView) string {
	switch {
	case r.Control == events.ControlCommit:
		return "⚑✓"
	case r.Control != "":
		return "⚑✗"
	case r.Aborted:
		return "e" + id32(r.LeaderEpoch) + " ⊘"
	}
	return "e" + id32(r.LeaderEpoch)
}

// hasTxn reports whether the partition's lanes show transactions: a
// replica with an LSO, a marker or an aborted record.
func (d PartitionPage) hasTxn() bool {
	for _, r := range d.View.ReplicaLogs {
		if r.LSO != nil {
			return true
		}
		for _, rec := range r.Records {
			if rec.Control != "" || rec.Aborted {
				return true
			}
		}
	}
	return false
}

func cellClass(c laneCell) string {
	cls := "cell"
	if c.Rec != nil {
		cls += " rec " + epochClass(c.Rec.LeaderEpoch)
		if c.Committed {
			cls += " committed"
		} else {
			cls += " uncommitted"
		}
		if c.Rec.Control != "" {
			cls += " control " + c.Rec.Control
		} else if c.Rec.Aborted {
			cls += " aborted"
		}
	}
	if c.LSO {
		cls += " at-lso"
	}
	if c.HW {
		cls += " at-hw"
	}
	if c.LEO {
		cls += " at-leo"
	}
	return cls
}

// PartitionPage is what the partition view shows: the API's partition view,
// the snapshot (for the controls) and the topic's configs.
type PartitionPage struct {
	View apiv1.PartitionView
	Snap events.Snapshot
}

// protocol is the topic's replication.protocol: isr when it sets none.
func (d PartitionPage) protocol() string {
	if t := d.Snap.Topic(d.View.Topic); t != nil && t.Configs["replication.protocol"] != "" {
		return t.Configs["replication.protocol"]
	}
	return "isr"
}

// SegmentsPage is what the segment explorer shows: the replica's files, and
// the lookup of Offset when one was asked for (Lookup, or LookupError).
type SegmentsPage struct {
	Segments    apiv1.SegmentsResponse
	Offset      string
	Lookup      *apiv1.LookupView
	LookupError string
}
