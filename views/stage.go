package views

import (
	"tidemark/events"
	"tidemark/wasm/panel"
)

// stageCatalog is the panel's catalogue in the page's language, so the
// server draws the stage with the same words the panel will.
func (p Page) stageCatalog() panel.Catalog { return panel.Catalog(PanelCatalog(p.lang())) }

// stageLinks, stageNodes and stageLinkMenus draw the stage as the panel
// does (package panel), so it is complete without JavaScript.
func (p Page) stageLinks(s events.Snapshot) string { return panel.StageLinksSVG(&s, p.stageCatalog()) }
func (p Page) stageNodes(s events.Snapshot, menus bool) string {
	return panel.StageNodesHTML(&s, p.stageCatalog(), p.path(), menus)
}
func (p Page) stageLinkMenus(s events.Snapshot, menus bool) string {
	return panel.StageLinkMenusHTML(&s, p.stageCatalog(), p.path(), menus)
}

// legendShape is the shape the stage draws a message of kind k in.
func legendShape(k string) string { return panel.Shape(events.Kind(k)) }

// rateLabel is a clock rate as the stage shows it (¼×, 1×, 4×).
func (p Page) rateLabel(rate float64) string { return panel.RateLabel(p.stageCatalog(), rate) }

// clockState is the stage's status line for the clock, as the panel
// writes it.
func (p Page) clockState(s events.Snapshot) string {
	return panel.ClockStateText(p.stageCatalog(), s.Paused, s.ClockRate())
}
