package panel

import (
	"strings"

	"tidemark/events"
)

// What a transaction marker's cell shows: a flag (a control batch, not a
// record) and whether it commits or aborts.
const (
	markCommit = "⚑✓"
	markAbort  = "⚑✗"
)

// txnCleanerMarks returns the markup a lane draws after its HW, LEO and
// segment markers: the LSO marker (dash-dotted, its label under the cells
// left of its line, where neither the HW's label above nor the LEO's right
// of its line can be: LSO ≤ HW ≤ LEO) and, in the row under a compacted
// replica's lane, its clean section (compacted, a key once) and its dirty
// section (appended since the cleaner's last pass) with the dirty ratio
// that pass saw.
func txnCleanerMarks(r *events.Replica, ghosts bool, lo, hi int64, c Catalog) string {
	var b strings.Builder
	bottom := laneHeight(ghosts) - 18
	if r.Txn != nil && r.Txn.LSO >= lo && r.Txn.LSO <= hi+1 {
		b.WriteString(`<g class="marker lso" transform="` + MarkAt(xOf(r.Txn.LSO, lo)) + `"><title>` + esc(c.T("panel.lane.lso", r.Txn.LSO)) +
			`</title><line x1="0" y1="10" x2="0" y2="` + i64(bottom+2) + `"/><text x="-3" y="` + i64(bottom+12) + `" text-anchor="end">LSO</text></g>`)
	}
	if cl := r.Cleaner; cl != nil {
		// The offsets of the clean section the window shows without a
		// record: the cleaner removed them (a later record has the key).
		at := 0
		for o := max(lo, r.LogStartOffset); o < min(cl.FirstDirty, hi+1); o++ {
			for at < len(r.Records) && r.Records[at].Offset < o {
				at++
			}
			if at < len(r.Records) && r.Records[at].Offset == o {
				continue
			}
			b.WriteString(`<rect class="compacted-gap" x="` + i64(xOf(o, lo)+1) + `" y="14" width="38" height="40" rx="3"><title>` +
				esc(c.T("panel.lane.gap", o)) + `</title></rect>`)
		}
		y := laneHeight(ghosts)
		b.WriteString(`<g class="cleaner" transform="translate(0,` + i64(y) + `)"><text class="cleaner-ratio" x="4" y="12">` +
			esc(c.T("panel.lane.cleaner", Ratio2(cl.DirtyRatio))) + `</text>`)
		section := func(cls, key string, from, to int64) {
			a, z := max(from, lo), min(to, hi+1)
			if a >= z {
				return
			}
			b.WriteString(`<rect class="` + cls + `" x="` + i64(xOf(a, lo)+1) + `" y="3" width="` + i64((z-a)*cellW-2) + `" height="9"><title>` +
				esc(c.T(key, from, to)) + `</title></rect>`)
		}
		section("clean-section", "panel.lane.clean", r.LogStartOffset, cl.FirstDirty)
		section("dirty-section", "panel.lane.dirty", max(cl.FirstDirty, r.LogStartOffset), r.LEO)
		b.WriteString(`</g>`)
	}
	return b.String()
}

// Ratio2 formats a ratio in [0, 1] with two decimals, as
// strconv.FormatFloat(v, 'f', 2, 64) would (float formatting is too big
// for the panel).
func Ratio2(v float64) string {
	n := int64(v*100 + 0.5)
	if n < 0 {
		n = 0
	}
	frac := i64(n % 100)
	if len(frac) < 2 {
		frac = "0" + frac
	}
	return i64(n/100) + "." + frac
}

// The legend's parts, as bits.
const (
	legendLSO = 1 << iota
	legendMarkers
	legendAborted
	legendCleaner
)

// legendKinds returns which parts of the legend p's figure needs: the LSO
// once a replica's log holds transactions, markers and aborted records
// when the window shows some, the cleaner's sections once it ran.
func legendKinds(p *events.Partition, lo, hi int64) int {
	k := 0
	for ri := range p.ReplicaLogs {
		r := &p.ReplicaLogs[ri]
		if r.Txn != nil {
			k |= legendLSO
		}
		if r.Cleaner != nil {
			k |= legendCleaner
		}
		for i := range r.Records {
			if rec := &r.Records[i]; rec.Offset >= lo && rec.Offset <= hi {
				if rec.Control != "" {
					k |= legendMarkers
				}
				if rec.Aborted {
					k |= legendAborted
				}
			}
		}
	}
	return k
}

// legend returns the markup of the legend's parts in kinds: each a sample
// drawn as the lanes draw it and what it means, in the page's language.
func legend(kinds int, c Catalog) string {
	if kinds == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(`<ul class="lane-legend" data-testid="lane-legend">`)
	item := func(cls, sample, key string) {
		b.WriteString(`<li class="` + cls + `"><span class="lg-sample">` + sample + `</span> ` + esc(c.T(key)) + `</li>`)
	}
	if kinds&legendLSO != 0 {
		item("lg-lso", "LSO", "panel.legend.lso")
	}
	if kinds&legendMarkers != 0 {
		item("lg-commit", markCommit, "panel.legend.commit")
		item("lg-abort", markAbort, "panel.legend.abort")
	}
	if kinds&legendAborted != 0 {
		item("lg-aborted", "⊘", "panel.legend.aborted")
	}
	if kinds&legendCleaner != 0 {
		item("lg-gap", "", "panel.legend.gap")
		item("lg-clean", "", "panel.legend.clean")
		item("lg-dirty", "", "panel.legend.dirty")
	}
	b.WriteString(`</ul>`)
	return b.String()
}
