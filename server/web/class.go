package web

import (
	"cmp"
	"encoding/csv"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/twmb/franz-go/pkg/kerr"
	"golang.org/x/time/rate"

	"tidemark/i18n"
	"tidemark/internal/clip"
	"tidemark/lessons"
	"tidemark/server/class"
	"tidemark/server/kafkaerr"
	"tidemark/views"
)

// Class mode (Options.Class): the Server is the teacher's, and classGate
// sends every learner's request to their seat's own Server. Who is who
// comes from a token: Authorization: Bearer for scripts, else the
// HttpOnly, SameSite=Strict cookie the join (or the teacher link) set.
//
//   - public: the join page and POST /api/v1/join (rate-limited per IP),
//     static files, the language switch and the OpenAPI document;
//   - a seat token: every other page and /api/v1 route, served by the
//     seat's Server on the seat's own cluster and runs; the teacher's
//     routes (/class…, /api/v1/class…, /metrics) are 403, and
//     /api/v1/observe says a class observes no Kafka cluster;
//   - the teacher token: the class routes, and every other route on the
//     lab's main cluster (the teacher's own free play);
//   - none: pages go to /join, the API answers 401.

// Cookies of class mode.
const (
	seatCookie    = "tidemark_seat"
	teacherCookie = "tidemark_teacher"
)

// Join rate limit per peer address: a burst of joinBurst (a class behind
// one NAT joins at once), then five a second. Guessing one of 2^50 codes
// at that rate takes millions of years.
const (
	joinEvery = 200 * time.Millisecond
	joinBurst = 60
)

// classRoutes adds the join and teacher routes; outside class mode they
// answer 404 NOT_FOUND.
func (s *Server) classRoutes(e *echo.Echo) {
	limit := middleware.RateLimiterWithConfig(middleware.RateLimiterConfig{
		Store: middleware.NewRateLimiterMemoryStoreWithConfig(middleware.RateLimiterMemoryStoreConfig{
			Rate: rate.Every(joinEvery), Burst: joinBurst, ExpiresIn: 10 * time.Minute}),
		// The peer's address: X-Forwarded-For would let a guesser pick a
		// new identity per request.
		IdentifierExtractor: func(c echo.Context) (string, error) { return echo.ExtractIPDirect()(c.Request()), nil },
		ErrorHandler: func(c echo.Context, err error) error {
			return KafkaError(http.StatusForbidden, kerr.InvalidRequest, "no client address")
		},
		DenyHandler: func(c echo.Context, _ string, _ error) error {
			return &Error{Status: http.StatusTooManyRequests, Code: kerr.ThrottlingQuotaExceeded.Message,
				Message: "too many joins from this address; wait a few seconds", Key: "class.join.throttled"}
		},
	})
	route := func(method, path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) {
		e.Add(method, path, func(c echo.Context) error {
			if s.opts.Class == nil {
				return &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: "the lab runs no class (--class)"}
			}
			return h(c)
		}, m...)
	}
	route("GET", "/join", s.joinPage)
	route("POST", "/join", s.joinForm, sameOrigin, limit)
	route("POST", "/api/v1/join", s.joinAPI, sameOrigin, limit)

	route("GET", "/api/v1/class", s.getClass)
	route("POST", "/api/v1/class/seats", s.addSeats, sameOrigin)
	route("POST", "/api/v1/class/seats/:seat/reset", s.resetSeat, sameOrigin)
	route("POST", "/api/v1/class/seats/:seat/code", s.newSeatCode, sameOrigin)
	route("GET", "/api/v1/class/export", s.exportClass)
	route("GET", "/api/v1/class/teacher-tokens", s.listTeacherTokens)
	route("DELETE", "/api/v1/class/teacher-tokens/:id", s.revokeTeacherToken, sameOrigin)
	route("GET", "/api/v1/class/questions", s.getQuestions)
	route("GET", "/class/questions", s.questionsPage)
	route("GET", "/class/live", s.classLive)
	route("GET", "/class", s.classPage)
	route("POST", "/class/seats", s.addSeatsForm, sameOrigin)
	route("POST", "/class/seats/:seat/reset", s.resetSeatForm, sameOrigin)
	route("POST", "/class/seats/:seat/code", s.newSeatCodeForm, sameOrigin)
	route("GET", "/class/seats/:seat", s.seatProjection)
	route("GET", "/class/seats/:seat/ws", s.seatStream)
	route("GET", "/class/projector", s.projector)
	s.exerciseRoutes(route)
	s.classLessonRoutes(route)
}

// publicPath reports whether path is served without a token in class mode.
func publicPath(path string) bool {
	return path == "/join" || path == "/api/v1/join" || path == "/ui/lang" || path == "/api/v1/openapi.json" ||
		strings.HasPrefix(path, "/static/")
}

// teacherPath reports whether path is one of the teacher's routes;
// /metrics is one: in class mode it reports every seat's cluster.
func teacherPath(path string) bool {
	return path == "/class" || strings.HasPrefix(path, "/class/") ||
		path == "/api/v1/class" || strings.HasPrefix(path, "/api/v1/class/") || path == "/metrics"
}

// seatRefusal is what seat gets from a route its lab does not serve in
// class mode, nil for any other: /metrics is the teacher's (it reports the
// seat's cluster as seat-<n>, beside every other seat's), and no lab of a
// class observes a Kafka cluster (--class and --observe do not go
// together). Both say where the seat's own cluster's state is.
func seatRefusal(path string, seat int) *Error {
	switch path {
	case "/metrics":
		n := strconv.Itoa(seat)
		return (&Error{Status: http.StatusForbidden, Code: kerr.ClusterAuthorizationFailed.Message,
			Message: i18n.T(i18n.English, "class.metrics.teacher-only", n)}).withKey("class.metrics.teacher-only", n)
	case "/api/v1/observe":
		return observeOff("class.observe-off")
	}
	return nil
}

// machinePath reports whether path is read by programs (the API, the
// websocket, /metrics), which get the JSON error rather than a page.
func machinePath(path string) bool {
	return strings.HasPrefix(path, "/api/") || path == "/ws" || path == "/metrics"
}

// bearer returns the request's Authorization: Bearer token, "" without one.
func bearer(r *http.Request) string {
	if v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return strings.TrimSpace(v)
	}
	return ""
}

func cookie(r *http.Request, name string) string {
	if ck, err := r.Cookie(name); err == nil {
		return ck.Value
	}
	return ""
}

// classGate routes a class-mode request by its token (see the top of this
// file). It runs before routing, after the Host check.
func (s *Server) classGate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		path := r.URL.Path
		if publicPath(path) {
			return next(c)
		}
		cls := s.opts.Class
		if tok := r.URL.Query().Get("token"); path == "/class" && r.Method == http.MethodGet && cls.Teacher(tok) {
			// The teacher link printed at start: keep the token in a
			// cookie and drop it from the address bar.
			c.SetCookie(secretCookie(r, teacherCookie, tok))
			return c.Redirect(http.StatusSeeOther, "/class")
		}
		tok := bearer(r)
		if tok == "" {
			// A browser holding both cookies (the teacher trying a seat)
			// is the teacher on the class pages and the learner elsewhere.
			if tok = cookie(r, seatCookie); tok == "" || teacherPath(path) {
				tok = cookie(r, teacherCookie)
			}
		}
		if cls.Teacher(tok) {
			c.SetRequest(r.WithContext(views.WithClassRole(r.Context(), views.Teacher)))
			return next(c)
		}
		r = r.WithContext(views.WithClassRole(r.Context(), views.Learner))
		c.SetRequest(r)
		if seat, ok := cls.SeatOf(tok); ok {
			if e := seatRefusal(path, seat); e != nil {
				return e
			}
			if teacherPath(path) {
				return &Error{Status: http.StatusForbidden, Code: kerr.ClusterAuthorizationFailed.Message,
					Message: "only the teacher may use this", Key: "class.teacher-only"}
			}
			if exercisePath(path) {
				c.Set(seatKey, seat)
				return next(c)
			}
			if err := cls.Serve(seat, c.Response().Writer, r); err != nil {
				return s.classError(c, err)
			}
			return nil
		}
		if r.Method == http.MethodGet && !machinePath(path) {
			return c.Redirect(http.StatusSeeOther, "/join")
		}
		return &Error{Status: http.StatusUnauthorized, Code: kerr.SaslAuthenticationFailed.Message,
			Message: "join the class first (POST /api/v1/join) and send the seat token as Authorization: Bearer", Key: "class.auth-required"}
	}
}

// classError shows a seat that could not be served (the class is full):
// a page for a page, the JSON body for the API.
func (s *Server) classError(c echo.Context, err error) error {
	e := toError(classLabError(err))
	r := c.Request()
	if r.Method == http.MethodGet && !machinePath(r.URL.Path) {
		return s.renderErrorPage(c, e)
	}
	return e
}

// classLabError is LabError with a full class as 429 (too many seats at
// once, try again soon), as the lesson and chaos slots answer.
func classLabError(err error) error {
	out := LabError(err)
	var e *Error
	if errors.Is(err, class.ErrClassFull) && errors.As(out, &e) {
		e.Status = http.StatusTooManyRequests
	}
	return out
}

// secretCookie is how a seat or teacher token is kept in a browser: not
// readable by scripts, never sent by another site's request.
func secretCookie(r *http.Request, name, value string) *http.Cookie {
	return &http.Cookie{Name: name, Value: value, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil, MaxAge: 30 * 24 * 3600}
}

// JoinRequest is the body of POST /api/v1/join.
type JoinRequest struct {
	Code string `json:"code"`
	Name string `json:"name"`
}

// JoinResponse is the answer of POST /api/v1/join: the seat and its token
// (also set as an HttpOnly cookie).
type JoinResponse struct {
	Seat  int    `json:"seat"`
	Token string `json:"token"`
}

// join joins the class and sets the seat cookie.
func (s *Server) join(c echo.Context, code, name string) (JoinResponse, error) {
	seat, tok, err := s.opts.Class.Join(code, name)
	switch {
	case errors.Is(err, class.ErrBadCode):
		return JoinResponse{}, &Error{Status: http.StatusUnauthorized, Code: kerr.SaslAuthenticationFailed.Message,
			Message: "no seat has this join code", Key: "class.join.bad-code"}
	case errors.Is(err, class.ErrSeatTaken):
		// 403 GROUP_AUTHORIZATION_FAILED (see class.ErrSeatTaken): the code
		// is real but spent; the seat keeps its learner, and only the
		// teacher opens it again. The text names nobody.
		return JoinResponse{}, &Error{Status: http.StatusForbidden, Code: kerr.GroupAuthorizationFailed.Message,
			Message: "this seat is taken: its code has been used; ask your teacher for a new code", Key: "class.join.taken"}
	case errors.Is(err, class.ErrBadName):
		return JoinResponse{}, &Error{Status: http.StatusBadRequest, Code: kerr.InvalidRequest.Message,
			Message: kafkaerr.Detail(err.Error()), Key: "class.join.bad-name", Args: []string{strconv.Itoa(class.MaxNameRunes)}}
	case err != nil:
		return JoinResponse{}, err
	}
	c.SetCookie(secretCookie(c.Request(), seatCookie, tok))
	return JoinResponse{Seat: seat, Token: tok}, nil
}

func (s *Server) joinAPI(c echo.Context) error {
	var req JoinRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	res, err := s.join(c, req.Code, req.Name)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, res)
}

func (s *Server) joinPage(c echo.Context) error {
	lang := Lang(c)
	v := views.JoinView{Class: s.opts.Class.Name(), Code: clip.Bytes(c.QueryParam("code"), 20)}
	return Render(c, http.StatusOK, views.Join(s.page(c, i18n.T(lang, "class.join.title", v.Class)), v))
}

func (s *Server) joinForm(c echo.Context) error {
	r := c.Request()
	r.Body = http.MaxBytesReader(c.Response(), r.Body, maxFormBytes)
	code, name := c.FormValue("code"), c.FormValue("name")
	if _, err := s.join(c, code, name); err != nil {
		lang := Lang(c)
		e := toError(err)
		v := views.JoinView{Class: s.opts.Class.Name(), Code: clip.Bytes(code, 20), Name: clip.Bytes(name, 40), Error: learnerText(lang, e)}
		return Render(c, e.Status, views.Join(s.page(c, i18n.T(lang, "class.join.title", v.Class)), v))
	}
	return c.Redirect(http.StatusSeeOther, "/")
}

// ClassResponse is GET /api/v1/class: the class, its limits and every seat.
type ClassResponse struct {
	Name     string         `json:"name"`
	MaxAwake int            `json:"max_awake"`
	Seats    []SeatResponse `json:"seats"`
}

// SeatResponse is one seat: its join code and link, learner, presence,
// whether its cluster runs, and its progress per lesson.
type SeatResponse struct {
	Seat    int        `json:"seat"`
	Code    string     `json:"code"`
	JoinURL string     `json:"join_url"`
	Name    string     `json:"name"`
	Joined  *time.Time `json:"joined,omitempty"`
	// Claimed: the seat's code has been used; a join with it is refused
	// until the teacher gives the seat a new code.
	Claimed bool                   `json:"claimed"`
	Online  bool                   `json:"online"`
	Awake   bool                   `json:"awake"`
	Lessons []class.LessonProgress `json:"lessons"`
	// Exercises is the seat's standing in every exercise.
	Exercises []class.ExerciseResult `json:"exercises"`
}

// joinURL is the link that opens the join page with code filled in, on the
// address the teacher reached the lab at.
func joinURL(r *http.Request, code string) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + "/join?code=" + url.QueryEscape(code)
}

func (s *Server) seatResponse(r *http.Request, st class.Seat) SeatResponse {
	out := SeatResponse{Seat: st.ID, Code: st.Code, JoinURL: joinURL(r, st.Code), Name: st.Name, Claimed: st.Claimed(),
		Online: s.opts.Class.Online(st.ID), Awake: s.opts.Class.Awake(st.ID), Lessons: []class.LessonProgress{}}
	if !st.Joined.IsZero() {
		out.Joined = &st.Joined
	}
	s.opts.Class.Grade(st.ID)
	for _, id := range class.Exercises {
		r, _ := s.opts.Class.Result(st.ID, id)
		out.Exercises = append(out.Exercises, r)
	}
	for _, id := range slices.Sorted(func(yield func(string) bool) {
		for k := range st.Lessons {
			if !yield(k) {
				return
			}
		}
	}) {
		out.Lessons = append(out.Lessons, st.Lessons[id])
	}
	return out
}

func (s *Server) classState(r *http.Request) ClassResponse {
	cls := s.opts.Class
	out := ClassResponse{Name: cls.Name(), MaxAwake: cls.MaxAwake(), Seats: []SeatResponse{}}
	for _, st := range cls.Seats() {
		out.Seats = append(out.Seats, s.seatResponse(r, st))
	}
	return out
}

func (s *Server) getClass(c echo.Context) error {
	return c.JSON(http.StatusOK, s.classState(c.Request()))
}

// TeacherTokensResponse lists the valid teacher tokens (GET
// /api/v1/class/teacher-tokens), oldest first; Current marks the one the
// request came with.
type TeacherTokensResponse struct {
	Tokens []TeacherTokenJSON `json:"tokens"`
}

// TeacherTokenJSON is one valid teacher token, by ID (never the token).
type TeacherTokenJSON struct {
	ID      string     `json:"id"`
	Created *time.Time `json:"created"` // null: minted before creation times were kept
	Current bool       `json:"current"`
}

// teacherToken returns the teacher token the request came with.
func teacherToken(r *http.Request) string {
	if tok := bearer(r); tok != "" {
		return tok
	}
	return cookie(r, teacherCookie)
}

func (s *Server) listTeacherTokens(c echo.Context) error {
	current := class.TeacherTokenID(teacherToken(c.Request()))
	out := TeacherTokensResponse{Tokens: []TeacherTokenJSON{}}
	for _, t := range s.opts.Class.TeacherTokens() {
		j := TeacherTokenJSON{ID: t.ID, Current: t.ID == current}
		if !t.Created.IsZero() {
			created := t.Created.UTC()
			j.Created = &created
		}
		out.Tokens = append(out.Tokens, j)
	}
	return c.JSON(http.StatusOK, out)
}

// revokeTeacherToken makes a teacher token invalid: the links printed at
// earlier starts stay valid (the last 8) until the teacher revokes them.
func (s *Server) revokeTeacherToken(c echo.Context) error {
	ok, err := s.opts.Class.RevokeTeacher(c.Param("id"))
	if err != nil {
		return LabError(err)
	}
	if !ok {
		return &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: "no valid teacher token has id " + strconv.Quote(clip.Bytes(c.Param("id"), 20))}
	}
	return c.NoContent(http.StatusNoContent)
}

// AddSeatsRequest is the body of POST /api/v1/class/seats.
type AddSeatsRequest struct {
	Count int `json:"count"`
}

// AddSeatsResponse lists the seats POST /api/v1/class/seats added.
type AddSeatsResponse struct {
	Seats []SeatResponse `json:"seats"`
}

func (s *Server) addSeatsN(r *http.Request, n int) (AddSeatsResponse, error) {
	added, err := s.opts.Class.AddSeats(n)
	if err != nil {
		return AddSeatsResponse{}, LabError(err)
	}
	out := AddSeatsResponse{Seats: []SeatResponse{}}
	for _, st := range added {
		out.Seats = append(out.Seats, s.seatResponse(r, st))
	}
	return out, nil
}

func (s *Server) addSeats(c echo.Context) error {
	var req AddSeatsRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	out, err := s.addSeatsN(c.Request(), req.Count)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, out)
}

// seatParam reads {seat}: a seat number of this class, else 404.
func (s *Server) seatParam(c echo.Context) (int, error) {
	n, err := strconv.Atoi(c.Param("seat"))
	if err != nil || n < 1 || n > s.opts.Class.Len() {
		return 0, &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: "no seat " + clip.Bytes(c.Param("seat"), 20)}
	}
	return n, nil
}

// ResetRequest is the body of POST /api/v1/class/seats/{seat}/reset: a
// reset wipes a learner's work, so it must be confirmed.
type ResetRequest struct {
	Confirm bool `json:"confirm"`
}

// resetUnconfirmed is the refusal of a reset without {"confirm": true}: it
// says what a reset wipes, and what keeps the progress instead.
func resetUnconfirmed(seat int) *Error {
	n := strconv.Itoa(seat)
	return (&Error{Status: http.StatusBadRequest, Code: kerr.InvalidRequest.Message,
		Message: i18n.T(i18n.English, "class.seat.reset-confirm", n) + ` (send {"confirm": true} to reset; POST /api/v1/class/seats/` + n + `/code gives a new code and keeps everything)`}).
		withKey("class.seat.reset-confirm", n)
}

func (s *Server) resetSeatN(c echo.Context, confirmed bool) (SeatResponse, error) {
	n, err := s.seatParam(c)
	if err != nil {
		return SeatResponse{}, err
	}
	if !confirmed {
		return SeatResponse{}, resetUnconfirmed(n)
	}
	st, err := s.opts.Class.ResetSeat(n)
	if err != nil {
		return SeatResponse{}, LabError(err)
	}
	return s.seatResponse(c.Request(), st), nil
}

func (s *Server) resetSeat(c echo.Context) error {
	var req ResetRequest
	if err := decodeOptionalJSON(c, &req); err != nil {
		return err
	}
	out, err := s.resetSeatN(c, req.Confirm)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// The gradebook export (GET /api/v1/class/export?format=csv|json): one
// row per attempt — a prediction answered (seat, name, lesson, step, the
// choice's text, right or not) or an exercise checked (its answer or why it
// failed, passed or not) — with its time in RFC 3339, and one summary row
// per seat. Texts are in the request's language.

// ExportAttempt is one attempt row.
type ExportAttempt struct {
	Seat     int    `json:"seat"`
	Name     string `json:"name"`
	Kind     string `json:"kind"` // prediction or exercise
	Lesson   string `json:"lesson,omitempty"`
	Exercise string `json:"exercise,omitempty"`
	Title    string `json:"title"`          // the lesson's or exercise's title
	Step     int    `json:"step,omitempty"` // 1-based; predictions only
	Choice   string `json:"choice"`         // the choice's text, or the exercise's answer or outcome
	Right    bool   `json:"right"`
	At       string `json:"at"` // RFC 3339
}

// ExportSeat is one seat's summary row.
type ExportSeat struct {
	Seat            int    `json:"seat"`
	Name            string `json:"name"`
	Joined          string `json:"joined,omitempty"` // RFC 3339
	LessonsStarted  int    `json:"lessons_started"`
	LessonsDone     int    `json:"lessons_done"`
	Predictions     int    `json:"predictions"` // steps answered
	RightFirst      int    `json:"right_first"`
	ExercisesPassed int    `json:"exercises_passed"`
	Checks          int    `json:"checks"`
	FailedChecks    int    `json:"failed_checks"`
}

// ExportResponse is the JSON export.
type ExportResponse struct {
	Class    string          `json:"class"`
	Exported string          `json:"exported"` // RFC 3339
	Attempts []ExportAttempt `json:"attempts"`
	Seats    []ExportSeat    `json:"seats"`
}

func rfc3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func (s *Server) gradebook(lang i18n.Lang) ExportResponse {
	cls := s.opts.Class
	for _, st := range cls.Seats() {
		cls.Grade(st.ID)
	}
	out := ExportResponse{Class: cls.Name(), Exported: rfc3339(time.Now()), Attempts: []ExportAttempt{}, Seats: []ExportSeat{}}
	for _, st := range cls.Seats() {
		sum := ExportSeat{Seat: st.ID, Name: st.Name, Joined: rfc3339(st.Joined), LessonsStarted: len(st.Lessons), ExercisesPassed: len(st.Passed)}
		for _, l := range st.Lessons {
			if l.Done {
				sum.LessonsDone++
			}
			for _, p := range l.Predictions {
				sum.Predictions++
				if p.RightFirst {
					sum.RightFirst++
				}
			}
		}
		for _, t := range st.Tries {
			sum.Checks += t.Checks
			sum.FailedChecks += t.Failed
		}
		out.Seats = append(out.Seats, sum)
		for _, a := range st.Attempts {
			row := ExportAttempt{Seat: st.ID, Name: st.Name, Right: a.Right, At: rfc3339(a.At)}
			if a.Exercise != "" {
				row.Kind, row.Exercise, row.Title = "exercise", a.Exercise, i18n.T(lang, "exercise."+a.Exercise+".title")
				f := &class.FailedCheck{Key: a.Key, Args: a.Args, Answer: a.Answer}
				row.Choice = failedText(lang, f)
				if a.Answer != nil && a.Key != "" { // the answer and why it failed
					row.Choice += " — " + learnerText(lang, &Error{Key: a.Key, Args: a.Args})
				}
			} else {
				lesson := lessons.ByID(a.Lesson)
				row.Kind, row.Lesson, row.Title = "prediction", a.Lesson, lessonTitle(lesson, a.Lesson, lang)
				row.Step, row.Choice = a.Step+1, choiceText(lesson, a.Step, a.Choice, lang)
			}
			out.Attempts = append(out.Attempts, row)
		}
	}
	return out
}

// exportClass writes the gradebook as JSON (ExportResponse) or CSV: one
// table, its first column saying whether a row is an attempt or a seat's
// summary.
func (s *Server) exportClass(c echo.Context) error {
	format := c.QueryParam("format")
	if format != "" && format != "json" && format != "csv" {
		return KafkaError(http.StatusBadRequest, kerr.InvalidRequest, "format must be csv or json")
	}
	book := s.gradebook(Lang(c))
	if format != "csv" {
		c.Response().Header().Set(echo.HeaderContentDisposition, `attachment; filename="class.json"`)
		return c.JSON(http.StatusOK, book)
	}
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, "text/csv; charset=utf-8")
	h.Set(echo.HeaderContentDisposition, `attachment; filename="class.csv"`)
	c.Response().WriteHeader(http.StatusOK)
	w := csv.NewWriter(c.Response())
	w.Write([]string{"row", "seat", "name", "kind", "lesson", "exercise", "title", "step", "choice", "right", "at",
		"joined", "lessons_started", "lessons_done", "predictions", "right_first", "exercises_passed", "checks", "failed_checks"})
	for _, a := range book.Attempts {
		step := ""
		if a.Step > 0 {
			step = strconv.Itoa(a.Step)
		}
		w.Write([]string{"attempt", strconv.Itoa(a.Seat), csvCell(a.Name), a.Kind, a.Lesson, a.Exercise, csvCell(a.Title), step,
			csvCell(a.Choice), strconv.FormatBool(a.Right), a.At, "", "", "", "", "", "", "", ""})
	}
	for _, st := range book.Seats {
		w.Write([]string{"summary", strconv.Itoa(st.Seat), csvCell(st.Name), "", "", "", "", "", "", "", "", st.Joined,
			strconv.Itoa(st.LessonsStarted), strconv.Itoa(st.LessonsDone), strconv.Itoa(st.Predictions), strconv.Itoa(st.RightFirst),
			strconv.Itoa(st.ExercisesPassed), strconv.Itoa(st.Checks), strconv.Itoa(st.FailedChecks)})
	}
	w.Flush()
	return w.Error()
}

// csvCell keeps a learner's text from being read as a formula by a
// spreadsheet (=, +, -, @ at the start).
func csvCell(v string) string {
	if v != "" && strings.ContainsRune("=+-@\t\r", rune(v[0])) {
		return "'" + v
	}
	return v
}

// exerciseRow is r on the dashboard, its last failed answer and reason in
// lang.
func exerciseRow(lang i18n.Lang, r class.ExerciseResult) views.ExerciseRow {
	x := views.ExerciseRow{ID: r.Exercise, Passed: r.Passed, Checks: r.Tries.Checks, Failed: r.Tries.Failed}
	if f := r.Tries.LastFailed; f != nil {
		x.LastReason = learnerText(lang, &Error{Key: f.Key, Args: f.Args})
		if a := f.Answer; a != nil && a.HW != nil {
			x.LastAnswer = "HW " + strconv.FormatInt(*a.HW, 10)
		} else if a != nil && a.Timestamp != nil {
			off := "—"
			if a.Offset != nil {
				off = strconv.FormatInt(*a.Offset, 10)
			}
			x.LastAnswer = i18n.T(lang, "class.exercise.answer-timestamp", strconv.FormatInt(*a.Timestamp, 10), off)
		} else if a != nil && slices.Contains(class.LeaveCauses, a.Cause) {
			x.LastAnswer = i18n.T(lang, "exercise.isr-rejoin.cause."+string(a.Cause))
		} else if a != nil && a.Cause != "" {
			x.LastAnswer = string(a.Cause)
		} else if a != nil {
			pos := "—"
			if a.Position != nil {
				pos = strconv.FormatInt(*a.Position, 10)
			}
			x.LastAnswer = i18n.T(lang, "class.exercise.answer", cmp.Or(a.Segment, "—"), pos)
		}
	}
	return x
}

func (s *Server) classView(r *http.Request, lang i18n.Lang) views.ClassView {
	state := s.classState(r)
	v := views.ClassView{Name: state.Name, MaxAwake: state.MaxAwake}
	if n, err := strconv.Atoi(r.URL.Query().Get("reset")); err == nil && n >= 1 && n <= len(state.Seats) {
		v.ConfirmReset = n
	}
	for _, st := range state.Seats {
		row := views.SeatRow{Seat: st.Seat, Code: st.Code, JoinURL: st.JoinURL, Name: st.Name, Online: st.Online, Awake: st.Awake, Claimed: st.Claimed}
		for _, r := range st.Exercises {
			if r.Passed || r.Tries.Checks > 0 {
				row.Exercises = append(row.Exercises, exerciseRow(lang, r))
			}
		}
		var latest time.Time
		for _, l := range st.Lessons {
			lesson := lessons.ByID(l.Lesson)
			lr := views.LessonRow{Lesson: l.Lesson, Title: lessonTitle(lesson, l.Lesson, lang), Executed: l.Executed, Total: l.Total, Done: l.Done}
			for _, p := range l.Predictions {
				lr.Predictions = append(lr.Predictions, views.PredictionRow{Step: p.Step, Chosen: choiceText(lesson, p.Step, p.Chosen, lang), Right: p.Right})
			}
			row.Lessons = append(row.Lessons, lr)
			if l.Updated.After(latest) { // the lesson the learner is at: the one they used last
				latest = l.Updated
				switch {
				case l.Done:
					row.Current = i18n.T(lang, "class.current.done", lr.Title)
				default:
					row.Current = i18n.T(lang, "class.current.step", lr.Title, min(l.Executed+1, l.Total), l.Total)
				}
			}
		}
		v.Seats = append(v.Seats, row)
	}
	return v
}

// lessonTitle is lesson's title in lang; id when the lesson is gone.
func lessonTitle(l *lessons.Lesson, id string, lang i18n.Lang) string {
	if l == nil {
		return id
	}
	return l.Title.In(lang)
}

// choiceText is the text of choice id of a lesson's step in lang; id when
// the lesson or the choice is gone.
func choiceText(l *lessons.Lesson, step int, id string, lang i18n.Lang) string {
	if l == nil || step < 0 || step >= len(l.Steps) || l.Steps[step].Predict == nil {
		return id
	}
	for _, c := range l.Steps[step].Predict.Choices {
		if c.ID == id {
			return c.Text.In(lang)
		}
	}
	return id
}

func (s *Server) classPage(c echo.Context) error {
	v := s.classView(c.Request(), Lang(c))
	return Render(c, http.StatusOK, views.ClassDashboard(s.page(c, i18n.T(Lang(c), "class.dashboard.title", v.Name)), v))
}

// classFlash comes back to the dashboard with the outcome of a form.
func classFlash(c echo.Context, ok bool, text string) error {
	flash(c, ok, text)
	return c.Redirect(http.StatusSeeOther, "/class")
}

func (s *Server) addSeatsForm(c echo.Context) error {
	lang := Lang(c)
	c.Request().Body = http.MaxBytesReader(c.Response(), c.Request().Body, maxFormBytes)
	n, err := strconv.Atoi(c.FormValue("count"))
	if err != nil { // not a number: INVALID_REQUEST, not an internal error
		err = KafkaError(http.StatusBadRequest, kerr.InvalidRequest, "count must be a number of seats").
			withKey("class.add.count", strconv.Itoa(class.MaxSeats-s.opts.Class.Len()))
	} else {
		_, err = s.addSeatsN(c.Request(), n)
	}
	if err != nil {
		return classFlash(c, false, errText(lang, toError(LabError(err))))
	}
	return classFlash(c, true, i18n.T(lang, "class.add.done", n))
}

// resetSeatForm resets a seat from the dashboard's confirmation form
// (confirm=yes); the row's Reset is a link to that confirmation
// (/class?reset={seat}), so a reset takes two clicks without a script.
func (s *Server) resetSeatForm(c echo.Context) error {
	lang := Lang(c)
	c.Request().Body = http.MaxBytesReader(c.Response(), c.Request().Body, maxFormBytes)
	st, err := s.resetSeatN(c, c.FormValue("confirm") == "yes")
	if err != nil {
		flash(c, false, errText(lang, toError(err)))
		if n, perr := s.seatParam(c); perr == nil {
			return c.Redirect(http.StatusSeeOther, "/class?reset="+strconv.Itoa(n)+"#reset")
		}
		return c.Redirect(http.StatusSeeOther, "/class")
	}
	return classFlash(c, true, i18n.T(lang, "class.seat.reset-done", st.Seat, st.Code))
}

// NewCodeRequest is the optional body of POST
// /api/v1/class/seats/{seat}/code: release also signs out every device
// signed in to the seat.
type NewCodeRequest struct {
	Release bool `json:"release"`
}

func (s *Server) newSeatCodeN(c echo.Context, release bool) (SeatResponse, error) {
	n, err := s.seatParam(c)
	if err != nil {
		return SeatResponse{}, err
	}
	st, err := s.opts.Class.NewCode(n, release)
	if err != nil {
		return SeatResponse{}, LabError(err)
	}
	return s.seatResponse(c.Request(), st), nil
}

// newSeatCode gives a seat a new join code that claims it once more,
// keeping its cluster and progress (POST /api/v1/class/seats/{seat}/code).
func (s *Server) newSeatCode(c echo.Context) error {
	var req NewCodeRequest
	if err := decodeOptionalJSON(c, &req); err != nil {
		return err
	}
	out, err := s.newSeatCodeN(c, req.Release)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) newSeatCodeForm(c echo.Context) error {
	lang := Lang(c)
	c.Request().Body = http.MaxBytesReader(c.Response(), c.Request().Body, maxFormBytes)
	release := c.FormValue("release") == "yes"
	st, err := s.newSeatCodeN(c, release)
	if err != nil {
		return classFlash(c, false, errText(lang, toError(err)))
	}
	key := "class.seat.code-done"
	if release {
		key = "class.seat.release-done"
	}
	return classFlash(c, true, i18n.T(lang, key, st.Seat, st.Code))
}

// seatProjection is the classroom screen of a seat: its cluster's live
// stage (the panel over /class/seats/{seat}/ws), read-only and in large
// type. It wakes a hibernating seat, as the learner's own next request
// would, without making the seat online.
func (s *Server) seatProjection(c echo.Context) error {
	n, err := s.seatParam(c)
	if err != nil {
		return err
	}
	cl, _, done, err := s.opts.Class.Watch(n)
	if err != nil {
		return s.classError(c, err)
	}
	snap, recent := cl.Snapshot(), recentOn(cl.Bus())
	done()
	name := s.opts.Class.Seats()[n-1].Name
	p := s.page(c, i18n.T(Lang(c), "class.projection.title", n))
	p.Recent = recent
	return Render(c, http.StatusOK, views.Projector(p, views.ProjectorView{Seat: n, Name: name,
		WS: "/class/seats/" + strconv.Itoa(n) + "/ws"}, snap))
}

// seatStream streams a seat's cluster to its projection; the seat stays
// awake while it is projected.
func (s *Server) seatStream(c echo.Context) error {
	if err := refuseHandshakeBody(c.Request()); err != nil {
		return err
	}
	n, err := s.seatParam(c)
	if err != nil {
		return err
	}
	cl, gone, done, err := s.opts.Class.Watch(n)
	if err != nil {
		return classLabError(err)
	}
	defer done()
	return s.streamWSUntil(c, cl, gone)
}

// projector is the classroom screen of the teacher's own lab: the live
// stage in large type, with the teacher's controls (the clock, the fault
// menus) and nothing else.
func (s *Server) projector(c echo.Context) error {
	p := s.page(c, i18n.T(Lang(c), "class.projector.title"))
	p.Recent = s.recent()
	return Render(c, http.StatusOK, views.Projector(p, views.ProjectorView{}, s.opts.Lab.Snapshot()))
}
