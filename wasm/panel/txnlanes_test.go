package panel

import (
	"strings"
	"testing"

	"tidemark/events"
)

// TestTxnAndCleanerLanes: a transactional partition's lanes draw its
// markers as their own cells (commit and abort, with their producer in the
// tooltip), the aborted records as such, and the LSO marker at the open
// transaction's first offset; a compacted replica's lane has a row with
// its clean and dirty sections and the dirty ratio; the legend names what
// the figure shows, and only that.
func TestTxnAndCleanerLanes(t *testing.T) {
	snap := snapshot(0)
	p := &snap.Topics[0].Partitions[0]
	recs := []events.Record{
		{Offset: 0, Value: "a", Txn: true, ProducerID: 4},
		{Offset: 1, Txn: true, ProducerID: 4, Control: events.ControlAbort},
		{Offset: 2, Value: "c", Txn: true, ProducerID: 4},
		{Offset: 3, Txn: true, ProducerID: 4, Control: events.ControlCommit},
		{Offset: 4, Value: "open", Txn: true, ProducerID: 4},
	}
	events.MarkAborted(recs)
	p.ReplicaLogs[0] = events.Replica{Broker: 1, LEO: 5, HW: 5, Records: recs, Txn: &events.Txn{LSO: 4}}
	p.ReplicaLogs[1] = events.Replica{Broker: 2, LEO: 5, HW: 5, LogStartOffset: 0, Records: []events.Record{{Offset: 3, Key: "k", Value: "x"}, {Offset: 4, Key: "k", Value: "y"}},
		Cleaner: &events.Cleaner{FirstDirty: 4, DirtyRatio: 0.625}}
	f := LaneFigures(snap, Motion{}, en, "demo", 0)[0]

	l := f.Lanes[0]
	var states []uint8
	var classes []string
	for _, c := range l.Cells {
		states, classes = append(states, c.State), append(classes, c.Class)
	}
	if want := []uint8{cellAborted, cellControl, cellCommitted, cellControl, cellCommitted}; string(states) != string(want) {
		t.Errorf("cell states %v, want %v (%q)", states, want, classes)
	}
	if l.Cells[1].Val != markAbort || l.Cells[3].Val != markCommit || !strings.Contains(l.Cells[3].Title, "commit marker of producer 4") {
		t.Errorf("markers %q %q, tooltip %q", l.Cells[1].Val, l.Cells[3].Val, l.Cells[3].Title)
	}
	if !strings.Contains(l.Cells[0].Title, "aborted") || !strings.HasSuffix(l.Cells[0].Ep, "⊘") || !strings.Contains(l.Cells[0].Class, "aborted") {
		t.Errorf("aborted record: %+v", l.Cells[0])
	}
	if !strings.Contains(l.Nums, "LSO 4") || !strings.Contains(l.Extra, `class="marker lso" transform="`+MarkAt(xOf(4, 0))+`"`) {
		t.Errorf("the LSO: nums %q, marks %q", l.Nums, l.Extra)
	}
	if strings.Contains(l.Extra, "cleaner") || f.Lanes[1].Cleaner == false || l.Cleaner {
		t.Errorf("the cleaner's row on the wrong lane: %q", l.Extra)
	}
	c := f.Lanes[1].Extra
	for _, want := range []string{`class="clean-section" x="171" y="3" width="158"`, `class="dirty-section" x="331" y="3" width="38"`, "dirty ratio 0.63", "clean section [0, 4)",
		`class="compacted-gap" x="171"`, `class="compacted-gap" x="251"`, "offset 2: removed by the log cleaner"} {
		if !strings.Contains(c, want) {
			t.Errorf("the cleaner's row lacks %s: %s", want, c)
		}
	}
	if f.H != topPad+laneHeight(false)*2+cleanerRowH {
		t.Errorf("figure %d high, want the cleaner's row counted", f.H)
	}
	if n := strings.Count(c, "compacted-gap"); n != 3 {
		t.Errorf("%d emptied offsets drawn, want 3 (0, 1, 2)", n)
	}
	for _, want := range []string{"lg-lso", "lg-commit", "lg-abort", "lg-aborted", "lg-gap", "lg-clean", "lg-dirty"} {
		if !strings.Contains(f.Legend, `class="`+want+`"`) || !strings.Contains(f.HTML(), f.Legend) {
			t.Errorf("the legend lacks %s: %s", want, f.Legend)
		}
	}
	// A plain partition has none of it.
	plain := LaneFigures(streamSnapshot(30), Motion{}, en, "demo", 0)[0]
	if plain.Legend != "" || strings.Contains(plain.HTML(), "lso") {
		t.Errorf("a partition without transactions or a cleaner shows %q", plain.Legend)
	}
	for v, want := range map[float64]string{0: "0.00", 0.625: "0.63", 0.05: "0.05", 1: "1.00", 0.999: "1.00"} {
		if got := Ratio2(v); got != want {
			t.Errorf("Ratio2(%v) = %s, want %s", v, got, want)
		}
	}
}
