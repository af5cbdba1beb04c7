package web

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"tidemark/events"
	"tidemark/i18n"
	"tidemark/internal/clip"
	"tidemark/server/class"
	"tidemark/views"
)

// The exercises of class mode (class.Exercises): a learner lists them and
// checks one on their seat's cluster (/api/v1/exercises, /exercises); the
// teacher, or an external autograder with the teacher token, checks any
// seat's (/api/v1/class/seats/{seat}/exercises/{id}/check). classGate puts
// the learner's seat in the request (seatKey); the teacher has none.

// seatKey is the echo.Context key of the seat classGate found.
const seatKey = "class.seat"

func (s *Server) exerciseRoutes(route func(string, string, echo.HandlerFunc, ...echo.MiddlewareFunc)) {
	route("GET", "/api/v1/exercises", s.listExercises)
	route("POST", "/api/v1/exercises/:id/check", s.checkExercise, sameOrigin)
	route("GET", "/exercises", s.exercisesPage)
	route("POST", "/exercises/:id/check", s.checkExerciseForm, sameOrigin)
	route("POST", "/api/v1/class/seats/:seat/exercises/:id/check", s.checkSeatExercise, sameOrigin)
}

// exercisePath reports whether path is a learner's exercise route, served
// by the class's Server rather than the seat's.
func exercisePath(path string) bool {
	return path == "/api/v1/exercises" || path == "/exercises" ||
		strings.HasPrefix(path, "/api/v1/exercises/") || strings.HasPrefix(path, "/exercises/")
}

// ExerciseResponse is one exercise: its task in every language and the
// seat's standing (Text in the request's language).
type ExerciseResponse struct {
	ID    string            `json:"id"`
	Title map[string]string `json:"title"`
	Task  map[string]string `json:"task"`
	class.ExerciseResult
	Text string `json:"text"`
	// Question is the seat's own question, for the exercises that ask one
	// (predict-hw: LEOs by broker and the ISR; the answer is {"hw": n}).
	Question *class.HWQuestion `json:"question,omitempty"`
}

// CheckRequest is the optional body of an exercise check: the answer for
// the exercises that ask for one (find-offset).
type CheckRequest = class.Answer

func (s *Server) learnerSeat(c echo.Context) (int, error) {
	if n, ok := c.Get(seatKey).(int); ok {
		return n, nil
	}
	return 0, &Error{Status: http.StatusNotFound, Code: CodeNotFound,
		Message: "exercises belong to a seat; the teacher checks one with POST /api/v1/class/seats/{seat}/exercises/{id}/check"}
}

func inLanguages(key string) map[string]string {
	out := map[string]string{}
	for _, l := range i18n.Languages() {
		out[string(l)] = i18n.T(l, key)
	}
	return out
}

// resultText is a check's outcome in lang.
func resultText(lang i18n.Lang, r class.ExerciseResult) string {
	return learnerText(lang, &Error{Key: r.Key, Args: r.Args})
}

func (s *Server) exerciseResponse(lang i18n.Lang, seat int, r class.ExerciseResult) ExerciseResponse {
	out := ExerciseResponse{ID: r.Exercise, Title: inLanguages("exercise." + r.Exercise + ".title"),
		Task: inLanguages("exercise." + r.Exercise + ".task"), ExerciseResult: r, Text: resultText(lang, r)}
	if r.Exercise == class.ExercisePredictHW {
		if q, err := class.QuestionHW(seat); err == nil {
			out.Question = &q
		}
	}
	return out
}

// hwQuestionText is seat's predict-hw question in lang.
func hwQuestionText(lang i18n.Lang, seat int) string {
	q, err := class.QuestionHW(seat)
	if err != nil {
		return ""
	}
	return i18n.T(lang, "exercise.predict-hw.question", q.LEO[1], q.LEO[2], q.LEO[3])
}

func (s *Server) listExercises(c echo.Context) error {
	seat, err := s.learnerSeat(c)
	if err != nil {
		return err
	}
	s.opts.Class.Grade(seat)
	out := []ExerciseResponse{}
	for _, id := range class.Exercises {
		r, _ := s.opts.Class.Result(seat, id)
		out = append(out, s.exerciseResponse(Lang(c), seat, r))
	}
	return c.JSON(http.StatusOK, out)
}

// grade is how a check is graded: class.Class.Try for the learner's own
// checks (kept as their tries), class.Class.Check for the teacher's.
type grade func(seat int, id string, answer class.Answer) (class.ExerciseResult, error)

// check grades exercise {id} for seat with the request's answer.
func (s *Server) check(c echo.Context, seat int, answer class.Answer, by grade) (class.ExerciseResult, error) {
	r, err := by(seat, c.Param("id"), answer)
	if errors.Is(err, class.ErrUnknownExercise) {
		return r, &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: "no exercise " + strconv.Quote(clip.Bytes(c.Param("id"), 40)) + "; GET /api/v1/exercises lists them"}
	}
	return r, classLabError(err)
}

// checkAnswer reads the optional JSON answer of an API check.
func checkAnswer(c echo.Context) (class.Answer, error) {
	var a CheckRequest
	return a, decodeOptionalJSON(c, &a)
}

// answerCheck grades exercise {id} for seat with the request's JSON answer.
func (s *Server) answerCheck(c echo.Context, seat int, by grade, err error) error {
	if err != nil {
		return err
	}
	a, err := checkAnswer(c)
	if err != nil {
		return err
	}
	r, err := s.check(c, seat, a, by)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s.exerciseResponse(Lang(c), seat, r))
}

func (s *Server) checkExercise(c echo.Context) error {
	seat, err := s.learnerSeat(c)
	return s.answerCheck(c, seat, s.opts.Class.Try, err)
}

func (s *Server) checkSeatExercise(c echo.Context) error {
	seat, err := s.seatParam(c)
	return s.answerCheck(c, seat, s.opts.Class.Check, err)
}

func (s *Server) exercisesPage(c echo.Context) error {
	seat, err := s.learnerSeat(c)
	if err != nil {
		return err
	}
	lang := Lang(c)
	s.opts.Class.Grade(seat)
	var list []views.ExerciseView
	for _, id := range class.Exercises {
		r, _ := s.opts.Class.Result(seat, id)
		v := views.ExerciseView{ID: id, Passed: r.Passed, AsksAnswer: id == class.ExerciseFindOffset, AsksTimestamp: id == class.ExerciseFindTimestamp}
		if id == class.ExercisePredictHW {
			v.Question = hwQuestionText(lang, seat)
		}
		if id == class.ExerciseISRRejoin {
			for _, cause := range class.LeaveCauses {
				v.Causes = append(v.Causes, [2]string{string(cause), i18n.T(lang, "exercise.isr-rejoin.cause."+string(cause))})
			}
		}
		list = append(list, v)
	}
	return Render(c, http.StatusOK, views.Exercises(s.page(c, i18n.T(lang, "exercise.title")), list))
}

func (s *Server) checkExerciseForm(c echo.Context) error {
	seat, err := s.learnerSeat(c)
	if err != nil {
		return err
	}
	lang := Lang(c)
	c.Request().Body = http.MaxBytesReader(c.Response(), c.Request().Body, maxFormBytes)
	a := class.Answer{Segment: clip.Bytes(c.FormValue("segment"), 40), Cause: events.ISRCause(clip.Bytes(c.FormValue("cause"), 40))}
	for name, to := range map[string]**int64{"timestamp": &a.Timestamp, "offset": &a.Offset, "hw": &a.HW} {
		if v, err := strconv.ParseInt(c.FormValue(name), 10, 64); err == nil {
			*to = &v
		}
	}
	if v := c.FormValue("position"); v != "" {
		if p, err := strconv.ParseInt(v, 10, 64); err == nil {
			a.Position = &p
		}
	}
	r, err := s.check(c, seat, a, s.opts.Class.Try)
	if err != nil {
		flash(c, false, errText(lang, toError(err)))
	} else {
		flash(c, r.Passed, i18n.T(lang, "exercise."+r.Exercise+".title")+": "+resultText(lang, r))
	}
	return c.Redirect(http.StatusSeeOther, "/exercises#exercise-"+clip.Bytes(c.Param("id"), 40))
}
