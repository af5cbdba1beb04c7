package web

import (
	"net/http"
	"sync"

	"github.com/labstack/echo/v4"

	"tidemark/events"
	"tidemark/i18n"
	"tidemark/views"
	"tidemark/wasm/panel"
)

// chartsFeed keeps the stage's charts of a Server's lab: one goroutine
// follows the lab's bus from the Server's start, applies each event to its
// own snapshot and samples it (panel.Charts), so a page loaded at any time
// shows the last 60 s of lab time at once, and the panel, which only asks
// for the drawing (GET /ui/charts, static/panel.js), carries no charting
// code. mu guards snap and ch; the goroutine is the only writer.
type chartsFeed struct {
	mu   sync.Mutex
	snap events.Snapshot
	ch   panel.Charts
}

// followCharts starts the Server's charts feed on its lab; it ends with
// the Server (s.ctx), counted in s.conns so Close waits for it.
func (s *Server) followCharts() {
	f := &chartsFeed{}
	s.charts = f
	sub := s.opts.Lab.Bus().Subscribe()
	f.snap = s.opts.Lab.Snapshot() // after subscribing: nothing in between is missed
	s.conns.Add(1)
	go func() {
		defer s.conns.Done()
		defer sub.Close()
		for {
			select {
			case <-s.ctx.Done():
				return
			case <-sub.Ready():
			}
			evs, lagged := sub.Drain()
			var fresh *events.Snapshot
			if lagged { // its queue was dropped: start again from the lab's state (taken outside f.mu)
				snap := s.opts.Lab.Snapshot()
				fresh = &snap
			}
			f.mu.Lock()
			if fresh != nil {
				f.snap = *fresh
			}
			var seen []events.Event
			for _, e := range evs {
				if e.Seq > f.snap.Seq {
					f.snap.Apply(e)
					seen = append(seen, e)
				}
			}
			f.ch.Observe(&f.snap, seen)
			f.mu.Unlock()
		}
	}()
}

// html draws the charts in lang ("" before anything was sampled).
func (f *chartsFeed) html(lang i18n.Lang) string {
	if f == nil {
		return ""
	}
	cat := panel.Catalog(views.PanelCatalog(lang))
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ch.HTML(cat)
}

// getCharts is GET /ui/charts: the stage's charts of the lab, as the
// markup of #stage-charts' children in the page's language.
func (s *Server) getCharts(c echo.Context) error {
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.HTML(http.StatusOK, s.charts.html(Lang(c)))
}
