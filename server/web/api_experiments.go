package web

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/websocket"
	"github.com/labstack/echo/v4"
	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/events"
	"tidemark/i18n"
	"tidemark/lessons"
	"tidemark/server/experiment"
	"tidemark/views"
)

// The experiment routes: POST /api/v1/experiments runs an experiment file
// (a built-in study by name, or the file's text) in the background, GET
// /api/v1/experiments/{id} shows its progress, each run as it finishes
// and, once done, its summary, checks and findings; GET
// /api/v1/experiments/{id}/files/{name} downloads results.csv,
// summary.csv, the plots and report.md. GET /api/v1/studies lists the
// built-in studies. The page /experiments starts them and shows them; a
// finished run plays on the stage (/ws?experiment=<id>&exp_run=<n>).
// Without Options.Experiments they answer 501 NOT_IMPLEMENTED.

func (s *Server) experimentRoutes(e *echo.Echo) {
	e.POST("/api/v1/experiments", s.startExperiment, sameOrigin)
	e.GET("/api/v1/experiments", s.listExperiments)
	e.GET("/api/v1/experiments/:id", s.getExperiment)
	e.GET("/api/v1/experiments/:id/files/:name", s.experimentFile)
	e.GET("/api/v1/experiments/:id/ws", s.experimentStream)
	e.GET("/api/v1/studies", s.listStudies)
	e.GET("/experiments", s.experimentsPage)
	e.POST("/experiments/start", s.startExperimentForm, sameOrigin)
	e.GET("/experiments/:id", s.experimentPage)
	e.GET("/experiments/:id/runs/:run", s.experimentRunPage)
	e.GET("/experiments/:id/files/:name", s.experimentFile)
}

// ExperimentRequest is the body of POST /api/v1/experiments: a built-in
// study's name, or an experiment file's text (Name names it in errors);
// Seeds > 0 runs only its first seeds.
type ExperimentRequest struct {
	Study  string `json:"study,omitempty"`
	Name   string `json:"name,omitempty"`
	Source string `json:"source,omitempty"`
	Seeds  int    `json:"seeds,omitempty"`
}

// Study is a built-in study as GET /api/v1/studies lists it.
type Study struct {
	Name   string `json:"name"`
	File   string `json:"file"`
	Title  string `json:"title"`
	Runs   int    `json:"runs"`
	Source string `json:"source"`
}

func (s *Server) experimentService() (*experiment.Service, error) {
	if s.opts.Experiments == nil {
		return nil, notImplemented("run experiments")
	}
	return s.opts.Experiments, nil
}

// experimentError maps the service's errors: unknown ids and files 404, a
// refused file 400 INVALID_REQUEST naming the line, its key and args
// (class.lesson.refused) saying what is wrong in lang.
func experimentError(lang i18n.Lang, err error) error {
	var pe *lessons.ParseError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, experiment.ErrUnknown):
		return &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: err.Error()}
	case errors.Is(err, experiment.ErrQueueFull):
		return KafkaError(http.StatusTooManyRequests, kerr.ThrottlingQuotaExceeded, err.Error())
	case errors.As(err, &pe):
		key, args := refusalKey(lang, pe)
		return KafkaError(http.StatusBadRequest, kerr.InvalidRequest, err.Error()).withKey(key, args...)
	}
	return KafkaError(http.StatusBadRequest, kerr.InvalidRequest, err.Error())
}

// experimentSource is the file a request names: a study's or its own text.
func experimentSource(req ExperimentRequest) (string, []byte, error) {
	switch {
	case req.Study != "" && req.Source != "":
		return "", nil, KafkaError(http.StatusBadRequest, kerr.InvalidRequest, "give study or source, not both")
	case req.Study != "":
		file, src, ok := lessons.Study(req.Study)
		if !ok {
			return "", nil, &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: "no built-in study " + strconv.Quote(req.Study)}
		}
		return file, src, nil
	case req.Source == "":
		return "", nil, KafkaError(http.StatusBadRequest, kerr.InvalidRequest, "give a study's name or an experiment file's text (source)")
	}
	name := path.Base(req.Name)
	if req.Name == "" {
		name = "upload.experiment"
	}
	return name, []byte(req.Source), nil
}

func (s *Server) startExperiment(c echo.Context) error {
	svc, err := s.experimentService()
	if err != nil {
		return err
	}
	var req ExperimentRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	file, src, err := experimentSource(req)
	if err != nil {
		return err
	}
	st, err := svc.Start(file, src, req.Seeds)
	if err != nil {
		return experimentError(Lang(c), err)
	}
	return c.JSON(http.StatusCreated, st)
}

func (s *Server) listExperiments(c echo.Context) error {
	svc, err := s.experimentService()
	if err != nil {
		return err
	}
	list := svc.List()
	for i, st := range list {
		list[i] = svc.In(st, Lang(c))
	}
	return c.JSON(http.StatusOK, map[string]any{"experiments": list})
}

// experimentOf is the service and the state of the experiment the path's
// :id names.
func (s *Server) experimentOf(c echo.Context) (*experiment.Service, experiment.State, error) {
	svc, err := s.experimentService()
	if err != nil {
		return nil, experiment.State{}, err
	}
	st, err := svc.Get(c.Param("id"))
	if err != nil {
		return nil, experiment.State{}, experimentError(Lang(c), err)
	}
	return svc, st, nil
}

func (s *Server) getExperiment(c echo.Context) error {
	svc, st, err := s.experimentOf(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, svc.In(st, Lang(c)))
}

// experimentProgressEvery is the least time between two messages of an
// experiment's stream: a run's actions change its progress hundreds of
// times a second.
const experimentProgressEvery = 100 * time.Millisecond

// experimentStream is an experiment's progress over a websocket: its state
// (as GET /api/v1/experiments/{id} answers it) at once and at each change,
// at most every experimentProgressEvery, until it is done; then a normal
// close.
func (s *Server) experimentStream(c echo.Context) error {
	if err := refuseHandshakeBody(c.Request()); err != nil {
		return err
	}
	svc, err := s.experimentService()
	if err != nil {
		return err
	}
	id, lang := c.Param("id"), Lang(c)
	if _, _, err := svc.Watch(id); err != nil {
		return experimentError(lang, err)
	}
	conn, release, err := s.upgradeWS(c)
	if conn == nil {
		return err
	}
	defer release()
	readerDone := make(chan struct{})
	go s.readWS(conn, readerDone)
	ping := time.NewTicker(s.opts.PingInterval)
	defer ping.Stop()
	pace := time.NewTimer(0)
	defer pace.Stop()
	closeWith := func(code int, text string) {
		conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text), time.Now().Add(s.opts.WriteWait))
	}
	for {
		st, changed, err := svc.Watch(id)
		if err != nil { // forgotten meanwhile
			closeWith(websocket.CloseNormalClosure, "experiment forgotten")
			return nil
		}
		conn.SetWriteDeadline(time.Now().Add(s.opts.WriteWait))
		if err := conn.WriteJSON(svc.In(st, lang)); err != nil {
			return nil
		}
		if st.Done() {
			closeWith(websocket.CloseNormalClosure, st.Phase)
			return nil
		}
		pace.Reset(experimentProgressEvery)
		for paced, moved := false, false; !paced || !moved; {
			select {
			case <-pace.C:
				paced = true
			case <-changed:
				moved, changed = true, nil
			case <-ping.C:
				if err := conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(s.opts.WriteWait)); err != nil {
					return nil
				}
			case <-readerDone:
				return nil
			case <-s.ctx.Done():
				closeWith(websocket.CloseGoingAway, "server shutting down")
				return nil
			}
		}
	}
}

func (s *Server) experimentFile(c echo.Context) error {
	svc, err := s.experimentService()
	if err != nil {
		return err
	}
	name := c.Param("name")
	b, err := svc.File(c.Param("id"), name, Lang(c))
	if err != nil {
		return experimentError(Lang(c), err)
	}
	typ := mime.TypeByExtension(path.Ext(name))
	switch path.Ext(name) {
	case ".md":
		typ = "text/markdown; charset=utf-8"
	case ".csv":
		typ = "text/csv; charset=utf-8"
	case ".svg":
		// inline, so the page can show it as an image
		return c.Blob(http.StatusOK, "image/svg+xml", b)
	}
	if typ == "" {
		typ = echo.MIMEOctetStream
	}
	return download(c, name, typ, b)
}

func (s *Server) listStudies(c echo.Context) error {
	out := []Study{}
	for _, name := range lessons.Studies() {
		file, src, _ := lessons.Study(name)
		st := Study{Name: name, File: file, Source: string(src)}
		if x, err := lessons.ParseExperiment(file, src); err == nil {
			st.Title, st.Runs = x.Title.En, x.Runs()
		}
		out = append(out, st)
	}
	return c.JSON(http.StatusOK, map[string]any{"studies": out})
}

// experimentRecording is the lab /ws?experiment=<id>&exp_run=<n> streams:
// the run's recording; 404 when it has none.
func (s *Server) experimentRecording(id, run string) (Lab, error) {
	svc, err := s.experimentService()
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(run)
	rec, ok := svc.Recording(id, n)
	if err != nil || !ok {
		return nil, &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: "no recording of run " + strconv.Quote(run) + " of experiment " + strconv.Quote(id), Key: "chaos.no-recording"}
	}
	return recordedLab{rec: rec, bus: events.NewBus(events.BusOptions{History: 1, QueueLen: 1})}, nil
}

// --- pages ---

func (s *Server) experimentsPage(c echo.Context) error {
	svc, err := s.experimentService()
	if err != nil {
		return err
	}
	p := s.page(c, i18n.T(Lang(c), "exp.title"))
	var v views.ExperimentsListView
	for _, name := range lessons.Studies() {
		if x, err := lessons.ParseStudy(name); err == nil {
			v.Studies = append(v.Studies, views.StudyOption{Name: name, Title: x.Title.In(Lang(c)), Runs: x.Runs()})
		}
	}
	for _, st := range svc.List() {
		v.Items = append(v.Items, views.ExperimentItem{ID: st.ID, Name: st.Name, Phase: st.Phase, Done: st.Progress.Done, Total: st.Progress.Total})
	}
	return Render(c, http.StatusOK, views.Experiments(p, v))
}

// maxUpload bounds an uploaded experiment file.
const maxUpload = lessons.MaxScriptBytes

func (s *Server) startExperimentForm(c echo.Context) error {
	svc, err := s.experimentService()
	if err != nil {
		return err
	}
	back := func(err error) error {
		flash(c, false, errText(Lang(c), toError(err)))
		return c.Redirect(http.StatusSeeOther, "/experiments")
	}
	req := ExperimentRequest{Study: c.FormValue("study")}
	if n, err := strconv.Atoi(strings.TrimSpace(c.FormValue("seeds"))); err == nil {
		req.Seeds = n
	}
	if fh, err := c.FormFile("file"); err == nil && fh.Size > 0 {
		if fh.Size > maxUpload {
			return back(KafkaError(http.StatusRequestEntityTooLarge, kerr.MessageTooLarge, "the file is larger than "+strconv.Itoa(maxUpload)+" bytes"))
		}
		f, err := fh.Open()
		if err != nil {
			return back(KafkaError(http.StatusBadRequest, kerr.InvalidRequest, "unreadable upload"))
		}
		b, err := io.ReadAll(io.LimitReader(f, maxUpload+1))
		f.Close()
		if err != nil {
			return back(KafkaError(http.StatusBadRequest, kerr.InvalidRequest, "unreadable upload"))
		}
		req.Study, req.Name, req.Source = "", fh.Filename, string(b)
	}
	file, src, err := experimentSource(req)
	if err != nil {
		return back(err)
	}
	st, err := svc.Start(file, src, req.Seeds)
	if err != nil {
		return back(experimentError(Lang(c), err))
	}
	return c.Redirect(http.StatusSeeOther, "/experiments/"+url.PathEscape(st.ID))
}

func (s *Server) experimentPage(c echo.Context) error {
	svc, st, err := s.experimentOf(c)
	if err != nil {
		return err
	}
	p := s.page(c, st.Name)
	v := views.ExperimentView{ID: st.ID, Name: st.Name, Title: st.Title, Phase: st.Phase, Done: st.Progress.Done, Total: st.Progress.Total,
		Current: st.Progress.Current, Finished: st.Done(), Error: st.Error, Measures: lessons.Measures, Files: st.Files}
	if x, err := lessons.ParseStudy(st.Name); err == nil && x.File == st.File {
		v.Title = x.Title.In(Lang(c))
	}
	for _, rr := range st.Runs {
		row := views.ExperimentRunRow{Index: rr.Index, Topic: rr.Topic, Faults: rr.Faults, Workload: rr.Workload, Seed: rr.Seed, Error: rr.Error}
		_, row.Recorded = svc.Recording(st.ID, rr.Index)
		for _, m := range lessons.Measures {
			row.Values = append(row.Values, experiment.Num(rr.Values[m]))
		}
		v.Runs = append(v.Runs, row)
	}
	for _, sr := range st.Summary {
		row := views.ExperimentSummaryRow{Topic: sr.Topic, Faults: sr.Faults, Workload: sr.Workload}
		for _, m := range lessons.Measures {
			row.Values = append(row.Values, experiment.Num(sr.Mean[m]))
		}
		v.Summary = append(v.Summary, row)
	}
	lang := Lang(c)
	for _, cr := range st.Checks {
		got := cr.GotIn(lang)
		if got == "" {
			got = cr.Error
		}
		v.Checks = append(v.Checks, views.ExperimentCheckRow{Check: cr.Check, Got: got, Holds: cr.Holds})
	}
	if fs := svc.In(st, lang).Findings; len(fs) > len(st.Checks) {
		v.Findings = fs[len(st.Checks):] // the plots'; the checks' are the claims above
	}
	for _, f := range st.Files {
		if strings.HasSuffix(f, ".svg") {
			v.Plots = append(v.Plots, f)
		}
	}
	return Render(c, http.StatusOK, views.Experiment(p, v))
}

func (s *Server) experimentRunPage(c echo.Context) error {
	svc, st, err := s.experimentOf(c)
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(c.Param("run"))
	if err != nil || n < 0 || n >= len(st.Runs) {
		return &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: "no finished run " + strconv.Quote(c.Param("run")) + " of experiment " + st.ID}
	}
	rr := st.Runs[n]
	v := views.ExperimentRunView{ID: st.ID, Index: rr.Index, Label: rr.Label()}
	if rec, ok := svc.Recording(st.ID, rr.Index); ok && len(rec.Events) > 0 {
		v.RunPlayback = views.RunPlayback{Recorded: true, Stage: rec.Start, PlayTo: rec.Events[len(rec.Events)-1].Seq, Truncated: rec.Truncated, Events: len(rec.Events)}
	}
	p := s.page(c, i18n.T(Lang(c), "exp.run.title", rr.Index+1))
	return Render(c, http.StatusOK, views.ExperimentRun(p, v))
}
