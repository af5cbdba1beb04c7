package web

import (
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"tidemark/i18n"
	"tidemark/server/observe"
	"tidemark/views"
)

// Observed is a Lab that shows a real Kafka cluster (observe mode,
// *observe.Observer): the web serves it read-only — every request that
// would change something is refused with READ_ONLY, the pages show no
// controls — and the overview and GET /api/v1/observe add what the poll
// saw besides the Snapshot.
type Observed interface {
	Info() observe.Info
}

// CodeReadOnly is the code of a request observe mode refuses: it would
// change the observed cluster or the lab.
const CodeReadOnly = "READ_ONLY"

// readOnly refuses every method but GET and HEAD in observe mode, before
// routing, so no mutating route can be reached by a new path.
func (s *Server) readOnly(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.observed != nil {
			if m := c.Request().Method; m != http.MethodGet && m != http.MethodHead {
				return &Error{Status: http.StatusForbidden, Code: CodeReadOnly,
					Message: i18n.T(Lang(c), "limits.readonly", s.observedSeeds())}
			}
		}
		return next(c)
	}
}

func (s *Server) observedSeeds() string {
	return strings.Join(s.observed.Info().Seeds, ",")
}

// getObserve answers the observed cluster's Info (501 for the lab).
func (s *Server) getObserve(c echo.Context) error {
	if s.observed == nil {
		if s.opts.Class != nil {
			return observeOff("class.observe-off")
		}
		return observeOff("observe.off")
	}
	return c.JSON(http.StatusOK, s.observed.Info())
}

// observeOff is GET /api/v1/observe in a lab that observes no Kafka
// cluster: 501 NOT_IMPLEMENTED with the text of key (observe.off; in class
// mode, where --observe cannot be given, class.observe-off), which says
// why and where the lab's own cluster's state is.
func observeOff(key string) *Error {
	return (&Error{Status: http.StatusNotImplemented, Code: CodeNotImplemented, Message: i18n.T(i18n.English, key)}).withKey(key)
}

// observeView is the overview's observe section; nil for the lab.
func (s *Server) observeView() *views.ObserveView {
	if s.observed == nil {
		return nil
	}
	in := s.observed.Info()
	v := &views.ObserveView{ClusterID: in.ClusterID, Polled: in.Polled.UTC().Format(time.RFC3339), Unavailable: in.Unavailable}
	for _, d := range in.LogDirs {
		v.LogDirs = append(v.LogDirs, views.ObserveLogDir(d))
	}
	for _, g := range in.Groups {
		vg := views.ObserveGroup{Group: g.Group, State: g.State, Members: g.Members, TotalLag: g.TotalLag, Error: g.Error}
		for _, l := range g.Lag {
			vg.Lag = append(vg.Lag, views.ObserveLag(l))
		}
		v.Groups = append(v.Groups, vg)
	}
	return v
}
