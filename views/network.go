package views

import (
	"tidemark/events"
	"tidemark/wasm/panel"
)

// networkCuts is the network controls' list of cut links, drawn as the
// panel redraws it (#network-cuts) from the live snapshot.
func (p Page) networkCuts(s events.Snapshot) string {
	return panel.NetworkCutsHTML(&s, p.stageCatalog())
}
