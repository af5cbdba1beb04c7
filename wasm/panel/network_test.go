package panel

import (
	"strings"
	"testing"

	"tidemark/events"
	"tidemark/i18n"
)

// TestNetworkCutsHTML: the network controls list each cut with its
// direction (a one-way cut names the way still open), and say every link
// is up when none is cut, in the reader's language.
func TestNetworkCutsHTML(t *testing.T) {
	hans := Catalog(i18n.Catalog(i18n.SimplifiedChinese))
	s := &events.Snapshot{}
	if got := NetworkCutsHTML(s, en); got != "<p>All links are up.</p>" {
		t.Errorf("no cuts: %q", got)
	}
	s.Cuts = []events.Fault{{Kind: events.FaultCut, From: 2, To: 3, OneWay: true}, {Kind: events.FaultCut, From: 0, To: 1}}
	got := NetworkCutsHTML(s, en)
	for _, want := range []string{"<li>link 2 → 3 cut (3 → 2 still works)</li>", "<li>link 0 ↔ 1 cut both ways</li>"} {
		if !strings.Contains(got, want) {
			t.Errorf("cuts %q lack %q", got, want)
		}
	}
	if got := NetworkCutsHTML(s, hans); !strings.Contains(got, "链路 2 → 3 已切断（3 → 2 仍然畅通）") {
		t.Errorf("zh-Hans: %q", got)
	}
}
