// Package web is Tidemark's HTTP face: an Echo app serving the templ pages, the
// JSON API under /api/v1, the websocket state stream at /ws and the embedded
// static files (including the WASM panel, gzip-compressed once at startup).
//
// Handlers translate HTTP into calls on the Lab and back; they hold no lab logic.
package web

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"tidemark/events"
	"tidemark/lessons"
	"tidemark/server/chaos"
	"tidemark/server/class"
	"tidemark/server/experiment"
	"tidemark/static"
)

// Lab is what the web UI needs from the running lab to show it. The controls
// (TopicAdmin, Producer, Consumer, Faults, LabClock, Inspector) are further
// small interfaces the same value may implement; New looks them up.
type Lab interface {
	// Snapshot returns a copy of the whole visible state that the caller owns.
	// Its Seq is the Seq of the last event published on Bus whose change it
	// includes: the lab changes its state and publishes under one lock.
	Snapshot() events.Snapshot
	// Bus returns the bus the lab publishes every state change on.
	Bus() *events.Bus
}

// Options configures a Server. Only Lab is required.
type Options struct {
	Lab Lab
	// Static is the tree served under /static/ (default static.FS).
	Static fs.FS
	// Logger receives errors that cannot be sent to a client (default slog.Default()).
	Logger *slog.Logger
	// PingInterval is how often /ws pings a client (default 20s).
	PingInterval time.Duration
	// PongWait is how long /ws waits for any frame (pongs included) before it
	// drops a client (default 3 × PingInterval).
	PongWait time.Duration
	// WriteWait bounds every websocket write; a client that cannot take a frame
	// in that time is dropped (default 10s).
	WriteWait time.Duration
	// MaxBatch is the most events /ws puts in one frame (default 256).
	MaxBatch int
	// Linger is the least time between two messages of events on /ws
	// (default 5ms, Kafka's default linger.ms; negative: no least time).
	// An event after a quiet spell goes at once; the events that follow a
	// message within Linger wait and go together in the next, as a Kafka
	// producer batches what arrives while it is busy. A page draws once
	// per animation frame anyway, while every websocket message costs its
	// main thread a task: at 1,000 records/s the lab publishes ~2,000
	// events/s, which went out in ~770 messages/s written at once and in
	// at most 200 with Linger (docs/benchmark-notes.md).
	Linger time.Duration
	// Lessons runs the guided lessons (api_lessons.go); nil: the lesson
	// routes answer 501.
	Lessons *lessons.Service
	// Chaos runs the durability checker's chaos runs (api_chaos.go); nil:
	// the chaos routes answer 501.
	Chaos *chaos.Service
	// Experiments runs experiment files (api_experiments.go); nil: the
	// experiment routes answer 501.
	Experiments *experiment.Service
	// AllowedHosts are Host names besides loopback ones (localhost,
	// 127.0.0.1, [::1] at the served port) that the lab answers to: "name"
	// for any port, "name:port" for one. Every other Host gets 421 (see
	// hosts.go: DNS rebinding). Default none.
	AllowedHosts []string
	// Class turns on class mode (class.go): this Server is the teacher's
	// and each learner's request goes to their seat's own Server. nil:
	// one lab, no accounts.
	Class *class.Class
	// StaticFrom, when set, serves the static files that Server loaded
	// instead of loading Static again (a class's seats share one copy).
	StaticFrom *Server
	// Owner, when set, owns every run this Server starts and lists: a
	// class seat's ("seat-<n>"). "": each browser is its own learner,
	// named by a cookie (learner.go).
	Owner string
	// Metrics serves GET /metrics (Prometheus text format, package
	// server/metrics); nil: /metrics answers 501.
	Metrics http.Handler
}

func (o *Options) setDefaults() error {
	if o.Lab == nil {
		return errors.New("web: Options.Lab is required")
	}
	if o.Static == nil {
		o.Static = static.FS
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.PingInterval <= 0 {
		o.PingInterval = 20 * time.Second
	}
	if o.PongWait <= 0 {
		o.PongWait = 3 * o.PingInterval
	}
	if o.PongWait <= o.PingInterval {
		return fmt.Errorf("web: PongWait %v must exceed PingInterval %v", o.PongWait, o.PingInterval)
	}
	if o.WriteWait <= 0 {
		o.WriteWait = 10 * time.Second
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 256
	}
	if o.Linger == 0 {
		o.Linger = 5 * time.Millisecond
	}
	return nil
}

// Server is the web UI. Serve it with Handler; Close ends its websockets.
type Server struct {
	opts   Options
	topics TopicAdmin // nil when the Lab cannot; so are the ones below
	prod   Producer
	cons   Consumer
	faults Faults
	clock  LabClock
	// retryClock times the API's produce retries (nil: real time).
	retryClock retryClock
	insp       Inspector
	// observed is set in observe mode (observe.go): read-only.
	observed Observed
	// charts follows the lab for the stage's charts.
	charts *chartsFeed
	echo   *echo.Echo
	hosts  hostPolicy
	files  map[string]*staticFile
	ctx    context.Context // cancelled by Close: websocket writers say goodbye
	cancel context.CancelFunc
	// timeouts are the request deadlines in force when New ran (a test
	// shortens them for one server without racing another's requests).
	timeouts httpTimeouts

	mu     sync.Mutex // guards closed and conns.Add, so no Add races Close's Wait
	closed bool
	conns  sync.WaitGroup
}

// New builds the Echo app and its routes and loads (and compresses) the static
// files. It fails on contradictory options or an unreadable static tree.
func New(opts Options) (*Server, error) {
	err := opts.setDefaults()
	if err != nil {
		return nil, err
	}
	var files map[string]*staticFile
	if opts.StaticFrom != nil {
		files = opts.StaticFrom.files
	} else if files, err = loadStatic(opts.Static); err != nil {
		return nil, err
	}
	hosts, err := newHostPolicy(opts.AllowedHosts)
	if err != nil {
		return nil, err
	}
	s := &Server{opts: opts, files: files, hosts: hosts, timeouts: timeouts}
	s.topics, _ = opts.Lab.(TopicAdmin)
	s.prod, _ = opts.Lab.(Producer)
	s.cons, _ = opts.Lab.(Consumer)
	s.faults, _ = opts.Lab.(Faults)
	s.clock, _ = opts.Lab.(LabClock)
	s.insp, _ = opts.Lab.(Inspector)
	s.observed, _ = opts.Lab.(Observed)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.followCharts()

	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.handleError
	e.Pre(s.checkHost)
	e.Pre(s.readOnly)
	e.Pre(s.deadlines)
	if opts.Class != nil {
		e.Pre(s.classGate)
	}
	e.Use(middleware.RecoverWithConfig(middleware.RecoverConfig{DisableStackAll: true, DisablePrintStack: true}))
	e.Use(securityHeaders)

	s.pageRoutes(e)
	e.GET("/ui/charts", s.getCharts)
	e.GET("/api/v1/cluster", s.getCluster)
	e.GET("/api/v1/events", s.getEvents)
	e.GET("/api/v1/history", s.getHistory)
	e.GET("/api/v1/history/snapshot", s.getHistorySnapshot)
	e.GET("/api/v1/openapi.json", s.getOpenAPI)
	s.apiRoutes(e)
	s.lessonRoutes(e)
	s.fencingRoutes(e)
	s.chaosRoutes(e)
	s.compareRoutes(e)
	s.experimentRoutes(e)
	s.classRoutes(e)
	s.exportRoutes(e)
	e.GET("/metrics", s.serveMetrics)
	e.GET("/api/v1/observe", s.getObserve)
	e.GET("/ws", s.serveWS)
	e.GET("/static/*", s.serveStatic)
	s.echo = e
	return s, nil
}

// Handler returns the http.Handler serving every route.
func (s *Server) Handler() http.Handler { return s.echo }

// Echo returns the underlying Echo app (for its route table).
func (s *Server) Echo() *echo.Echo { return s.echo }

// Close sends every websocket client a close frame and waits for their
// connections to end. Call it after http.Server.Shutdown, which does not know
// about hijacked connections. It is safe to call more than once.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.conns.Wait()
}

// addConn counts a new websocket connection unless the Server is closed.
func (s *Server) addConn() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns.Add(1)
	return true
}

// securityHeaders keeps browsers to what the pages need: same-origin scripts,
// WebAssembly compilation, same-origin fetches and websockets.
func securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
		return next(c)
	}
}

// serveMetrics hands /metrics to Options.Metrics.
func (s *Server) serveMetrics(c echo.Context) error {
	if s.opts.Metrics == nil {
		return notImplemented("serve metrics")
	}
	s.opts.Metrics.ServeHTTP(c.Response(), c.Request())
	return nil
}
