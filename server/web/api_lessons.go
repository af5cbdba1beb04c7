package web

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/i18n"
	"tidemark/internal/clip"
	"tidemark/lessons"
	"tidemark/server/kafkaerr"
	"tidemark/server/labs"
	"tidemark/views"
)

// The lesson routes: the JSON API under /api/v1/lessons and the lesson
// pages under /lessons. Each run has its own cluster; the websocket stream
// follows one with /ws?run=<id>. Without Options.Lessons every lesson route
// answers 501 NOT_IMPLEMENTED.

func (s *Server) lessonRoutes(e *echo.Echo) {
	e.GET("/api/v1/lessons", s.listLessons)
	e.GET("/api/v1/lessons/:id", s.getLesson)
	e.POST("/api/v1/lessons/:id/runs", s.startRun, sameOrigin)
	e.GET("/api/v1/lessons/runs", s.openRuns)
	e.GET("/api/v1/lessons/runs/:run", s.getRun)
	e.DELETE("/api/v1/lessons/runs/:run", s.stopRun, sameOrigin)
	e.POST("/api/v1/lessons/runs/:run/next", s.runControl((*lessons.Run).Next), sameOrigin)
	e.POST("/api/v1/lessons/runs/:run/back", s.runControl((*lessons.Run).Back), sameOrigin)
	e.POST("/api/v1/lessons/runs/:run/replay", s.runControl((*lessons.Run).Replay), sameOrigin)
	e.POST("/api/v1/lessons/runs/:run/predict", s.predict, sameOrigin)
	e.POST("/api/v1/lessons/runs/:run/speed", s.setSpeed, sameOrigin)

	e.GET("/lessons", s.lessonsPage)
	e.POST("/lessons/:id/start", s.startRunForm, sameOrigin)
	e.GET("/lessons/runs/:run", s.runPage)
	e.GET("/lessons/runs/:run/pointers.css", s.runPointers)
	e.POST("/lessons/runs/:run/:action", s.runForm, sameOrigin)
}

// LessonSummary is one lesson in GET /api/v1/lessons: its id, position,
// and title and summary in every language.
type LessonSummary struct {
	ID     string `json:"id"`
	Number int    `json:"number"`
	// Part is the learning path's section; BuildsOn the earlier lessons
	// this one needs.
	Part     string       `json:"part"`
	BuildsOn []string     `json:"builds_on"`
	Title    lessons.Text `json:"title"`
	Summary  lessons.Text `json:"summary"`
	Concepts []string     `json:"concepts"`
	Brokers  int          `json:"brokers"`
	Steps    int          `json:"steps"`
}

// LessonDetail is GET /api/v1/lessons/{id}: the summary and every step's
// texts and prediction.
type LessonDetail struct {
	LessonSummary
	StepList []LessonStep `json:"step_list"`
}

// LessonStep is one step of a LessonDetail.
type LessonStep struct {
	Title      lessons.Text             `json:"title"`
	Explain    lessons.Text             `json:"explain"`
	Prediction *lessons.PredictionState `json:"prediction,omitempty"`
}

func lessonSummary(l *lessons.Lesson) LessonSummary {
	return LessonSummary{ID: l.ID, Number: l.Number, Part: l.Part, BuildsOn: append([]string{}, l.BuildsOn...), Title: l.Title,
		Summary: l.Summary, Concepts: l.Concepts, Brokers: l.Brokers, Steps: len(l.Steps)}
}

func (s *Server) lessonService() (*lessons.Service, error) {
	if s.opts.Lessons == nil {
		return nil, notImplemented("run lessons")
	}
	return s.opts.Lessons, nil
}

func (s *Server) listLessons(c echo.Context) error {
	out := []LessonSummary{}
	for _, l := range lessons.All() {
		out = append(out, lessonSummary(l))
	}
	return c.JSON(http.StatusOK, out)
}

func findLesson(id string) (*lessons.Lesson, error) {
	if l := lessons.ByID(id); l != nil {
		return l, nil
	}
	return nil, &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: "no lesson " + strconv.Quote(clip.Bytes(id, 60)) + "; GET /api/v1/lessons lists them"}
}

func (s *Server) getLesson(c echo.Context) error {
	l, err := findLesson(c.Param("id"))
	if err != nil {
		return err
	}
	d := LessonDetail{LessonSummary: lessonSummary(l), StepList: []LessonStep{}}
	for _, st := range l.Steps {
		ls := LessonStep{Title: st.Title, Explain: st.Explain}
		if st.Predict != nil {
			p := &lessons.PredictionState{Question: st.Predict.Question}
			for _, ch := range st.Predict.Choices {
				p.Choices = append(p.Choices, lessons.ChoiceState{ID: ch.ID, Text: ch.Text})
			}
			ls.Prediction = p
		}
		d.StepList = append(d.StepList, ls)
	}
	return c.JSON(http.StatusOK, d)
}

// StartRunRequest is the optional body of POST /api/v1/lessons/{id}/runs.
type StartRunRequest struct {
	Speed lessons.Speed `json:"speed"`
}

// PredictRequest is the body of POST /api/v1/lessons/runs/{run}/predict.
type PredictRequest struct {
	Choice string `json:"choice"`
}

// SpeedRequest is the body of POST /api/v1/lessons/runs/{run}/speed.
type SpeedRequest struct {
	Speed lessons.Speed `json:"speed"`
}

// lessonRefusals are a run's refusals of a learner's step: each one's HTTP
// status and the i18n key of the text that says what to do instead.
var lessonRefusals = []struct {
	err    error
	status int
	key    string
}{
	{lessons.ErrPredictFirst, http.StatusConflict, "lesson.refused.predict-first"},
	{lessons.ErrNoPrediction, http.StatusConflict, "lesson.refused.no-prediction"},
	{lessons.ErrAtEnd, http.StatusConflict, "lesson.refused.at-end"},
	{lessons.ErrAtStart, http.StatusConflict, "lesson.refused.at-start"},
	{lessons.ErrUnknownChoice, http.StatusBadRequest, "lesson.refused.choice"},
	{lessons.ErrBadSpeed, http.StatusBadRequest, "lesson.refused.speed"},
}

// lessonError maps a lesson or labs error to the API's: unknown lessons and
// runs are 404, controls that do not fit the run's position 409, a full
// lab 429 THROTTLING_QUOTA_EXCEEDED, a broken run 500 with its reason.
func lessonError(err error) error {
	if err == nil {
		return nil
	}
	// The lessons' errors wrap Kafka's (INVALID_REQUEST…): the code goes in
	// its own field, and its description for client authors not at all.
	msg := kafkaerr.Detail(err.Error())
	switch {
	case errors.Is(err, lessons.ErrUnknownLesson):
		return &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: msg, Key: "lesson.unknown"}
	case errors.Is(err, lessons.ErrUnknownRun):
		return &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: msg, Key: "lesson.run-gone"}
	case errors.Is(err, labs.ErrFull):
		return labFull(err)
	}
	for _, r := range lessonRefusals {
		if errors.Is(err, r.err) {
			return KafkaError(r.status, kerr.InvalidRequest, msg).withKey(r.key)
		}
	}
	if errors.Is(err, lessons.ErrFailed) {
		return &Error{Status: http.StatusInternalServerError, Code: kerr.UnknownServerError.Message, Message: msg}
	}
	return LabError(err)
}

func (s *Server) startRun(c echo.Context) error {
	svc, err := s.lessonService()
	if err != nil {
		return err
	}
	if _, err := findLesson(c.Param("id")); err != nil {
		return err
	}
	var req StartRunRequest
	if err := decodeOptionalJSON(c, &req); err != nil {
		return err
	}
	owner, started := s.starter(c)
	r, err := svc.Start(owner, c.Param("id"), req.Speed)
	if err != nil {
		return lessonError(err)
	}
	started()
	return c.JSON(http.StatusCreated, r.State())
}

// openRuns is GET /api/v1/lessons/runs: the learner's open runs, the one
// used last first ([] for a browser that started none).
func (s *Server) openRuns(c echo.Context) error {
	svc, err := s.lessonService()
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, svc.Open(s.learner(c)))
}

func (s *Server) run(c echo.Context) (*lessons.Run, error) {
	svc, err := s.lessonService()
	if err != nil {
		return nil, err
	}
	r, err := svc.Get(c.Param("run"))
	return r, lessonError(err)
}

func (s *Server) getRun(c echo.Context) error {
	r, err := s.run(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, r.State())
}

func (s *Server) stopRun(c echo.Context) error {
	r, err := s.run(c)
	if err != nil {
		return err
	}
	if err := s.opts.Lessons.Stop(r.ID); err != nil {
		return lessonError(err)
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) runControl(op func(*lessons.Run) error) echo.HandlerFunc {
	return func(c echo.Context) error {
		r, err := s.run(c)
		if err != nil {
			return err
		}
		if err := op(r); err != nil {
			return lessonError(err)
		}
		return c.JSON(http.StatusOK, r.State())
	}
}

func (s *Server) predict(c echo.Context) error {
	r, err := s.run(c)
	if err != nil {
		return err
	}
	var req PredictRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if err := r.Predict(req.Choice); err != nil {
		return lessonError(err)
	}
	return c.JSON(http.StatusOK, r.State())
}

func (s *Server) setSpeed(c echo.Context) error {
	r, err := s.run(c)
	if err != nil {
		return err
	}
	var req SpeedRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if err := r.SetSpeed(req.Speed); err != nil {
		return lessonError(err)
	}
	return c.JSON(http.StatusOK, r.State())
}

// wsLab is the lab /ws streams: the main one, with ?run=<id> a lesson
// run's cluster (its lanes at the run's cursor), or with ?chaos=<id> or
// ?compare=<id> a finished run's recording.
func (s *Server) wsLab(c echo.Context) (Lab, error) {
	if id := c.QueryParam("experiment"); id != "" { // a finished experiment run's recording
		return s.experimentRecording(id, c.QueryParam("exp_run"))
	}
	for _, q := range []string{"chaos", "compare"} { // a finished run's recording
		if id := c.QueryParam(q); id != "" {
			return s.recordedRun(id)
		}
	}
	id := c.QueryParam("run")
	if id == "" {
		return s.opts.Lab, nil
	}
	svc, err := s.lessonService()
	if err != nil {
		return nil, err
	}
	r, err := svc.Get(id) // a query parameter here, not the path's :run
	if err != nil {
		return nil, lessonError(err)
	}
	return r, nil
}

// --- pages ---

func (s *Server) lessonsPage(c echo.Context) error {
	lang := Lang(c)
	p := s.page(c, i18n.T(lang, "lesson.list.title"))
	var parts []views.LessonPart
	for _, key := range lessons.Parts {
		part := views.LessonPart{Key: key}
		for _, l := range lessons.All() {
			if l.Part != key {
				continue
			}
			it := views.LessonItem{ID: l.ID, Number: l.Number, Part: l.Part, Title: l.Title.In(lang), Summary: l.Summary.In(lang), Steps: len(l.Steps)}
			for _, b := range l.BuildsOn {
				if d := lessons.ByID(b); d != nil {
					it.BuildsOn = append(it.BuildsOn, views.LessonRef{ID: d.ID, Name: fmt.Sprintf("%02d · %s", d.Number, d.Title.In(lang))})
				}
			}
			part.Items = append(part.Items, it)
		}
		if len(part.Items) > 0 {
			parts = append(parts, part)
		}
	}
	var runs []views.OpenRunView
	if svc := s.opts.Lessons; svc != nil {
		for _, r := range svc.Open(s.learner(c)) {
			title := r.Title.In(lang)
			if l := lessons.ByID(r.Lesson); l != nil {
				title = fmt.Sprintf("%02d · %s", l.Number, title)
			}
			runs = append(runs, views.OpenRunView{ID: r.ID, Title: title, Cursor: r.Cursor, Total: r.Total,
				Finished: r.Finished, Idle: time.Duration(r.IdleSeconds) * time.Second})
		}
	}
	return Render(c, http.StatusOK, views.LessonList(p, parts, runs))
}

// flash sets the outcome shown on the next page.
func flash(c echo.Context, ok bool, text string) {
	flag := "0"
	if ok {
		flag = "1"
	}
	c.SetCookie(&http.Cookie{Name: flashCookie, Value: base64.RawURLEncoding.EncodeToString([]byte(flag + clip.Bytes(text, 600))),
		Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode})
}

func (s *Server) startRunForm(c echo.Context) error {
	svc, err := s.lessonService()
	if err != nil {
		return err
	}
	if _, err := findLesson(c.Param("id")); err != nil {
		return err
	}
	owner, started := s.starter(c)
	r, err := svc.Start(owner, c.Param("id"), lessons.Speed(c.FormValue("speed")))
	if err != nil {
		flash(c, false, errText(Lang(c), toError(lessonError(err))))
		return c.Redirect(http.StatusSeeOther, "/lessons")
	}
	started()
	return c.Redirect(http.StatusSeeOther, "/lessons/runs/"+url.PathEscape(r.ID))
}

func (s *Server) runPage(c echo.Context) error {
	r, err := s.run(c)
	if err != nil {
		return err
	}
	lang := Lang(c)
	st := r.State()
	p := s.page(c, st.Title.In(lang))
	p.Recent = r.Recent(recentEvents) // the event list opens with them, as the overview's does
	// The stream plays the shown step back, listing its events again: the
	// page's copies of them go once the panel is live.
	base, _ := r.StepReplay()
	p.ReplayAfter = base.Seq
	v := newLessonRunView(lang, st)
	v.Ask = c.QueryParam("ask") != "" // Next from an answer: the next step's text and question
	return Render(c, http.StatusOK, views.LessonRun(p, v))
}

// runPointers is the stylesheet that points the shown step's "look at"
// list at the stage (views.PointerCSS); empty before the first step.
func (s *Server) runPointers(c echo.Context) error {
	r, err := s.run(c)
	if err != nil {
		return err
	}
	v := newLessonRunView(Lang(c), r.State())
	css := ""
	if v.Last != nil {
		css = views.PointerCSS(v.Last.Pointers)
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.Blob(http.StatusOK, "text/css; charset=utf-8", []byte(css))
}

func (s *Server) runForm(c echo.Context) error {
	svc, err := s.lessonService()
	if err != nil {
		return err
	}
	r, err := svc.Get(c.Param("run"))
	if errors.Is(err, lessons.ErrUnknownRun) {
		switch c.Param("action") {
		case "stop": // ended already (idle, or to make room): what End asked
			return c.Redirect(http.StatusSeeOther, "/lessons")
		case "leave":
			return c.NoContent(http.StatusNoContent)
		}
	}
	if err != nil {
		return lessonError(err)
	}
	switch c.Param("action") {
	case "next":
		err = r.Next()
	case "back":
		err = r.Back()
	case "replay":
		err = r.Replay()
	case "predict":
		err = r.Predict(c.FormValue("choice"))
	case "speed":
		err = r.SetSpeed(lessons.Speed(c.FormValue("speed")))
	case "stop":
		if err := svc.Stop(r.ID); err != nil {
			return lessonError(err)
		}
		return c.Redirect(http.StatusSeeOther, "/lessons")
	case "leave":
		// The page's navigator.sendBeacon on pagehide: a run left when it
		// is finished ends now rather than at the learner's next start.
		if r.Finished() && r.Owner == s.learner(c) {
			if err := svc.Stop(r.ID); err != nil {
				return lessonError(err)
			}
		}
		return c.NoContent(http.StatusNoContent)
	default:
		return &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: "no lesson control " + strconv.Quote(clip.Bytes(c.Param("action"), 40))}
	}
	if err != nil {
		flash(c, false, errText(Lang(c), toError(lessonError(err))))
	}
	// The page is one screen: it opens on the card, with no anchor to jump to.
	return c.Redirect(http.StatusSeeOther, "/lessons/runs/"+url.PathEscape(r.ID))
}
