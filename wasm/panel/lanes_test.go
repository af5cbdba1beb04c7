package panel

import (
	"strconv"
	"strings"
	"testing"

	"tidemark/events"
	"tidemark/i18n"
)

// streamSnapshot returns the demo topic as a stream of records leaves it
// at LEO leo: 3 partitions × 3 replicas, each holding the newest
// events.RecordWindow records, the HW a few records behind.
func streamSnapshot(leo int64) *events.Snapshot {
	s := &events.Snapshot{Controller: 0}
	for id := int32(1); id <= 3; id++ {
		s.Brokers = append(s.Brokers, events.Broker{ID: id, State: events.BrokerUp})
	}
	t := events.Topic{Name: "demo"}
	for p := range int32(3) {
		part := events.Partition{Partition: p, Leader: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}}
		for id := int32(1); id <= 3; id++ {
			r := events.Replica{Broker: id, LEO: leo, HW: leo - 5}
			for o := max(0, leo-events.RecordWindow); o < leo; o++ {
				r.Records = append(r.Records, events.Record{Offset: o, Value: "v" + strconv.FormatInt(o%7, 10)})
			}
			part.ReplicaLogs = append(part.ReplicaLogs, r)
		}
		t.Partitions = append(t.Partitions, part)
	}
	s.Topics = []events.Topic{t}
	return s
}

// BenchmarkLaneFigures draws the lanes of the demo topic frame after frame
// while a stream moves every LEO by a whole window (every cell changes, as
// at 1,000 records/s): what the panel computes per frame before writing
// to the page.
func BenchmarkLaneFigures(b *testing.B) {
	c := Catalog(i18n.Catalog(i18n.Languages()[0]))
	var snaps []*events.Snapshot
	for i := range 16 {
		snaps = append(snaps, streamSnapshot(int64(100+i*LaneCells)))
	}
	var lz Lanes
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		lz.Figures(snaps[i%len(snaps)], Motion{}, c, "", -1)
		i++
	}
}

// TestLanesReuse: figures drawn after others (their cells in reused
// buffers, their texts remembered) are the figures drawn afresh.
func TestLanesReuse(t *testing.T) {
	c := Catalog(i18n.Catalog(i18n.Languages()[0]))
	var lz Lanes
	for _, leo := range []int64{3, 30, 31, 90, 12} {
		s := streamSnapshot(leo)
		got, want := lz.Figures(s, Motion{}, c, "", -1), LaneFigures(s, Motion{}, c, "", -1)
		if len(got) != len(want) {
			t.Fatalf("LEO %d: %d figures, want %d", leo, len(got), len(want))
		}
		for i := range got {
			if g, w := got[i].HTML(), want[i].HTML(); g != w {
				t.Fatalf("LEO %d: figure %d is\n%s\nwant\n%s", leo, i, g, w)
			}
		}
	}
}

// TestLaneGeometry: the coordinates the markup writes out are the
// geometry's.
func TestLaneGeometry(t *testing.T) {
	if cellW != 40 || cellH != 40 || ghostY != 58 {
		t.Fatal("the lane geometry changed: update the coordinates written out in lanes.go")
	}
}

// TestSegmentMarks: a replica's segment boundaries after its first segment
// are marked on its lane where the next segment starts, named by its base
// offset; one out of the window is not, and a lane without segments
// reported has none.
func TestSegmentMarks(t *testing.T) {
	c := Catalog{"panel.segment": "segment %d"}
	s := streamSnapshot(12)
	s.Topics[0].Partitions[0].ReplicaLogs[0].Segments = []int64{0, 4, 9, 5000}
	var lz Lanes
	figs := lz.Figures(s, Motion{}, c, "demo", 0)
	segs := figs[0].Lanes[0].Segs
	if len(segs) != 2 || segs[0].Label != "segment 4" || segs[1].Label != "segment 9" || segs[1].X-segs[0].X != 5*cellW {
		t.Fatalf("segment marks %+v", segs)
	}
	if marks := figs[0].Lanes[0].Marks(); !strings.Contains(marks, `class="seg-mark"`) || !strings.Contains(marks, "segment 9") {
		t.Errorf("the lane's marks lack the boundaries: %s", marks)
	}
	if other := figs[0].Lanes[1].Segs; len(other) != 0 {
		t.Errorf("a lane with no segments reported has marks %+v", other)
	}
	if SameSegs(segs, segs[:1]) || !SameSegs(segs, append([]SegMark(nil), segs...)) {
		t.Error("SameSegs")
	}
}
