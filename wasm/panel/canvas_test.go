package panel

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"tidemark/events"
)

// contrast returns the WCAG contrast ratio of two #rrggbb colours.
func contrast(t *testing.T, a, b string) float64 {
	lum := func(c string) float64 {
		v, err := strconv.ParseUint(strings.TrimPrefix(c, "#"), 16, 32)
		if err != nil || len(c) != 7 {
			t.Fatalf("colour %q", c)
		}
		var l float64
		for i, w := range []float64{.2126, .7152, .0722} {
			x := float64(v>>(16-8*i)&0xff) / 255
			if x <= .03928 {
				x /= 12.92
			} else {
				x = math.Pow((x+.055)/1.055, 2.4)
			}
			l += w * x
		}
		return l
	}
	hi, lo := lum(a), lum(b)
	if hi < lo {
		hi, lo = lo, hi
	}
	return (hi + .05) / (lo + .05)
}

// TestCanvasContrast: every text the canvas draws on a cell meets WCAG AA
// (4.5:1) against the cell's fill, for every epoch colour and state: the
// canvas has no DOM text for the page's contrast test to read.
func TestCanvasContrast(t *testing.T) {
	for ep := range int32(8) {
		for _, state := range []uint8{cellCommitted, cellUncommitted, cellTruncated, cellControl, cellAborted} {
			c := Cell{Color: ep, State: state}
			text, fill := CellText(&c)
			if r := contrast(t, text, fill); r < 4.5 {
				t.Errorf("epoch %d, state %d: text %s on %s is %.2f:1", ep, state, text, fill, r)
			}
		}
	}
}

// TestPaint: a figure's drawing sizes its canvas to the SVG, then gives
// each cell its state, place, epoch colour and texts: a committed record,
// one not yet committed (its epoch line with a ?), a truncated one in its
// lane's second row.
func TestPaint(t *testing.T) {
	snap := snapshot(0)
	p := &snap.Topics[0].Partitions[0]
	p.ReplicaLogs[0] = events.Replica{Broker: 1, LEO: 3, HW: 2, Records: []events.Record{{Offset: 0}, {Offset: 1, Value: "hello world"}, {Offset: 2, LeaderEpoch: 1, Value: "x"}}}
	p.ReplicaLogs[1] = events.Replica{Broker: 2, LEO: 2, HW: 2, Records: []events.Record{{Offset: 0}, {Offset: 1}},
		Truncated: []events.TruncatedRecord{{Offset: 2, Value: "lost", Reason: "truncate-to (rule high-watermark): x"}}}
	f := LaneFigures(snap, Motion{}, en, "demo", 0)[0]
	var pt Painter
	pt.Paint(7, &f, 0, f.W)
	got := strings.ReplaceAll(string(pt.Buf), "\x00", "|")
	want := "C|7|" + i64(f.W) + "|" + i64(f.H) + "|" +
		"K|0|170|16|0|0||e0|K|0|210|16|0|1|hell…|e0|K|1|250|16|1|2|x|e1?|" + // lane 1 at y 16
		"K|0|170|88|0|0||e0|K|0|210|88|0|1||e0|K|2|250|88|0|2|lost|e0 ✕|" + // lane 2 under it
		"D|0|170|102|120|84|" // broker 2 crashed: its cells and truncated row dimmed
	if got != want {
		t.Errorf("drawing\n%s\nwant\n%s", got, want)
	}
	// Only the cells in view: offsets 1 and 2 (x 210 and 250).
	pt.Buf = pt.Buf[:0]
	pt.Paint(7, &f, 215, 260)
	if got := strings.Count(string(pt.Buf), "K\x00"); got != 4 {
		t.Errorf("%d cells drawn between x 215 and 260, want 4 (offsets 1 and 2 of two lanes)", got)
	}
	pt.Buf = pt.Buf[:0]
	pt.Palette()
	if n := strings.Count(string(pt.Buf), "#"); n != 13 {
		t.Errorf("palette of %d colours, the page reads 13", n)
	}
}
