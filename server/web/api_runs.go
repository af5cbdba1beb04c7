package web

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"
	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/i18n"
	"tidemark/server/chaos"
	"tidemark/views"
)

// The chaos service plays two kinds of background run, chaos runs
// (api_chaos.go) and comparisons (api_compare.go), both through the
// experiment engine. A kind is served alike: POST /api/v1/{kind} starts
// one, GET /api/v1/{kind}/{id} shows it, GET /api/v1/{kind}/{id}/export
// downloads it once finished; the page /{kind} lists them and starts one
// from a form (POST /{kind}/start), /{kind}/runs/{id} shows one.

// runKind is one kind of run: its path's word and its own parts.
type runKind[T runState] struct {
	name string // "chaos" or "compare"
	get  func(svc *chaos.Service, id string) (T, error)
	// start answers POST /api/v1/{kind} (with startRun).
	start func(s *Server, c echo.Context) error
	// startForm starts a run from the page's form (seed and actions read).
	startForm func(c echo.Context, svc *chaos.Service, owner string, seed uint64, n int) (string, error)
	// export is a finished run's JSON download.
	export func(T) ([]byte, error)
	// list and page draw the pages.
	list func(p views.Page, svc *chaos.Service) templ.Component
	page func(p views.Page, lang i18n.Lang, st T, pb views.RunPlayback) templ.Component
}

// routes serves the kind.
func (k runKind[T]) routes(s *Server, e *echo.Echo) {
	api := "/api/v1/" + k.name
	e.POST(api, func(c echo.Context) error { return k.start(s, c) }, sameOrigin)
	e.GET(api+"/:id", k.serve(s))
	e.GET(api+"/:id/export", k.exportRun(s))
	e.GET("/"+k.name, k.listPage(s))
	e.POST("/"+k.name+"/start", k.startFormRun(s), sameOrigin)
	e.GET("/"+k.name+"/runs/:id", k.runPage(s))
}

// runState is a run's state: whether it has a result to export, and where
// it is.
type runState interface {
	Finished() bool
	Phase() chaos.Phase
}

// startRun starts a run of a kind for the request's owner (start does)
// and answers 201 with its state.
func startRun[T any](s *Server, c echo.Context, start func(svc *chaos.Service, owner string) (T, error)) error {
	svc, err := s.chaosService()
	if err != nil {
		return err
	}
	owner, started := s.starter(c)
	st, err := start(svc, owner)
	if err != nil {
		return chaosError(err)
	}
	started()
	return c.JSON(http.StatusCreated, st)
}

// run is the {id} run of the kind.
func (k runKind[T]) run(s *Server, c echo.Context) (T, error) {
	svc, err := s.chaosService()
	if err != nil {
		var none T
		return none, err
	}
	st, err := k.get(svc, c.Param("id"))
	return st, chaosError(err)
}

// serve answers GET /api/v1/{kind}/{id}.
func (k runKind[T]) serve(s *Server) echo.HandlerFunc {
	return func(c echo.Context) error {
		st, err := k.run(s, c)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, st)
	}
}

// finishedRun is the {id} run once finished (409 INVALID_REQUEST before).
func (k runKind[T]) finishedRun(s *Server, c echo.Context) (T, error) {
	st, err := k.run(s, c)
	if err == nil && !st.Finished() {
		err = KafkaError(http.StatusConflict, kerr.InvalidRequest, "run "+c.Param("id")+" has not finished: "+string(st.Phase()))
	}
	return st, err
}

// exportRun answers GET /api/v1/{kind}/{id}/export: the kind's export as
// {kind}-{id}.json once the run finished.
func (k runKind[T]) exportRun(s *Server) echo.HandlerFunc {
	return func(c echo.Context) error {
		st, err := k.finishedRun(s, c)
		if err != nil {
			return err
		}
		b, err := k.export(st)
		if err != nil {
			return err
		}
		return download(c, k.name+"-"+c.Param("id")+".json", echo.MIMEApplicationJSON, b)
	}
}

// startFormRun answers the page's form (POST /{kind}/start): the seed and
// the number of actions read, startForm starts the run and names it; then
// to its page, or back to /{kind} with the refusal flashed.
func (k runKind[T]) startFormRun(s *Server) echo.HandlerFunc {
	return func(c echo.Context) error {
		svc, err := s.chaosService()
		if err != nil {
			return err
		}
		back := "/" + k.name
		seed, err := strconv.ParseUint(strings.TrimSpace(c.FormValue("seed")), 10, 64)
		if err != nil {
			flash(c, false, errText(Lang(c), seedFormError(c.FormValue("seed"))))
			return c.Redirect(http.StatusSeeOther, back)
		}
		n, err := strconv.Atoi(strings.TrimSpace(c.FormValue("actions")))
		if err != nil {
			n = -1 // the service names the range
		}
		owner, started := s.starter(c)
		id, err := k.startForm(c, svc, owner, seed, n)
		if err != nil {
			flash(c, false, errText(Lang(c), toError(chaosError(err))))
			return c.Redirect(http.StatusSeeOther, back)
		}
		started()
		return c.Redirect(http.StatusSeeOther, back+"/runs/"+url.PathEscape(id))
	}
}

// runPage answers GET /{kind}/runs/{id}: the page the kind draws, titled by
// the catalog's {kind}.run.title, with its recording for the stage.
func (k runKind[T]) runPage(s *Server) echo.HandlerFunc {
	return func(c echo.Context) error {
		st, err := k.run(s, c)
		if err != nil {
			return err
		}
		lang, id := Lang(c), c.Param("id")
		p := s.page(c, i18n.T(lang, k.name+".run.title", id))
		return Render(c, http.StatusOK, k.page(p, lang, st, s.playback(id)))
	}
}

// listPage answers GET /{kind}: the page the kind draws, titled by the
// catalog's {kind}.title.
func (k runKind[T]) listPage(s *Server) echo.HandlerFunc {
	return func(c echo.Context) error {
		svc, err := s.chaosService()
		if err != nil {
			return err
		}
		return Render(c, http.StatusOK, k.list(s.page(c, i18n.T(Lang(c), k.name+".title")), svc))
	}
}
