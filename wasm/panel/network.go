package panel

import "tidemark/events"

// NetworkCutsHTML returns the markup of the network controls' list of cut
// links in s (a paragraph saying every link is up when none is cut). The
// server draws the controls with it and the panel redraws them with it from
// the live snapshot after every change, so the controls never show a cut
// that was healed, or miss one made since the page loaded.
func NetworkCutsHTML(s *events.Snapshot, c Catalog) string {
	if len(s.Cuts) == 0 {
		return `<p>` + esc(c.T("panel.network.none")) + `</p>`
	}
	b := `<ul class="cuts">`
	for _, f := range s.Cuts {
		if f.OneWay {
			// A one-way cut names the direction still open: a learner
			// reads which messages get through.
			b += `<li>` + esc(c.T("panel.network.cut1", f.From, f.To, f.To, f.From)) + `</li>`
		} else {
			b += `<li>` + esc(c.T("panel.network.cut2", f.From, f.To)) + `</li>`
		}
	}
	return b + `</ul>`
}
