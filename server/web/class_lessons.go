package web

import (
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"
	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/i18n"
	"tidemark/internal/clip"
	"tidemark/lessons"
	"tidemark/server/class"
)

// A teacher's own lessons (class.Class.AddLesson): a .lesson file posted
// from the dashboard (POST /class/lessons, a file) or the API (POST
// /api/v1/class/lessons, JSON) is checked by the lesson language, kept
// with the roster and offered to every seat at once.

// LessonUpload is the body of POST /api/v1/class/lessons: the lesson
// file's name (shown in errors; default upload.lesson) and its text.
type LessonUpload struct {
	Name   string `json:"name"`
	Source string `json:"source"`
}

// LessonAdded is a lesson the class was given: its id, number, title in the
// request's language and number of steps.
type LessonAdded struct {
	ID     string `json:"id"`
	Number int    `json:"number"`
	Title  string `json:"title"`
	Steps  int    `json:"steps"`
}

// LessonRefused is a lesson file refused (400 INVALID_REQUEST): the file,
// the line (0: the file as a whole) and what is wrong, in English
// (message) and in the request's language (text).
type LessonRefused struct {
	Code    string   `json:"code"`
	Message string   `json:"message"`
	Key     string   `json:"key"`
	Args    []string `json:"args"`
	File    string   `json:"file"`
	Line    int      `json:"line"`
	Text    string   `json:"text"`
}

func (s *Server) classLessonRoutes(route func(string, string, echo.HandlerFunc, ...echo.MiddlewareFunc)) {
	route("POST", "/api/v1/class/lessons", s.uploadLesson, sameOrigin)
	route("POST", "/class/lessons", s.uploadLessonForm, sameOrigin)
}

// uploadName is the name a lesson file is shown by: its base name,
// clipped; upload.lesson without one.
func uploadName(name string) string {
	name = filepath.Base(clip.Bytes(name, 80))
	if name == "." || name == "/" || name == "" {
		return "upload" + lessons.Ext
	}
	return name
}

// addLesson gives the class the lesson in src; a refusal is a
// *LessonRefused in lang.
func (s *Server) addLesson(lang i18n.Lang, name string, src []byte) (*lessons.Lesson, *LessonRefused, error) {
	l, err := s.opts.Class.AddLesson(uploadName(name), src)
	var pe *lessons.ParseError
	switch {
	case errors.As(err, &pe):
		r := &LessonRefused{Code: kerr.InvalidRequest.Message, Message: pe.Error(), Key: "class.lesson.refused",
			Args: []string{pe.File, strconv.Itoa(pe.Line), pe.Msg}, File: pe.File, Line: pe.Line}
		if pe.Line == 0 {
			r.Key, r.Args = "class.lesson.refused-file", []string{pe.File, pe.Msg}
		}
		r.Text = learnerText(lang, &Error{Key: r.Key, Args: lessonErrorArgs(lang, r.Args)})
		return nil, r, nil
	case errors.Is(err, class.ErrLessonTooBig):
		return nil, nil, KafkaError(http.StatusRequestEntityTooLarge, kerr.MessageTooLarge, err.Error()).
			withKey("class.lesson.too-big", strconv.Itoa(class.MaxLessonBytes>>10))
	case err != nil:
		return nil, nil, err
	}
	return l, nil, nil
}

// lessonErrorArgs translates the lesson language's own words in a
// refusal's last argument (what is wrong) where the catalog has them.
func lessonErrorArgs(lang i18n.Lang, args []string) []string {
	out := append([]string(nil), args...)
	out[len(out)-1] = lessonErrorText(lang, out[len(out)-1])
	return out
}

func (s *Server) uploadLesson(c echo.Context) error {
	var req LessonUpload
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	lang := Lang(c)
	l, refused, err := s.addLesson(lang, req.Name, []byte(req.Source))
	if err != nil {
		return err
	}
	if refused != nil {
		return c.JSON(http.StatusBadRequest, refused)
	}
	return c.JSON(http.StatusCreated, LessonAdded{ID: l.ID, Number: l.Number, Title: l.Title.In(lang), Steps: len(l.Steps)})
}

// uploadLessonForm takes the dashboard's file (field lesson) and comes
// back to the dashboard with the outcome.
func (s *Server) uploadLessonForm(c echo.Context) error {
	lang := Lang(c)
	r := c.Request()
	r.Body = http.MaxBytesReader(c.Response(), r.Body, class.MaxLessonBytes+maxFormBytes)
	fh, err := c.FormFile("lesson")
	if err != nil {
		return classFlash(c, false, i18n.T(lang, "class.lesson.no-file"))
	}
	f, err := fh.Open()
	if err != nil {
		return classFlash(c, false, i18n.T(lang, "class.lesson.no-file"))
	}
	defer f.Close()
	src, err := io.ReadAll(io.LimitReader(f, class.MaxLessonBytes+1))
	if err != nil {
		return classFlash(c, false, i18n.T(lang, "class.lesson.no-file"))
	}
	l, refused, err := s.addLesson(lang, fh.Filename, src)
	switch {
	case err != nil:
		return classFlash(c, false, errText(lang, toError(LabError(err))))
	case refused != nil:
		return classFlash(c, false, refused.Text)
	}
	return classFlash(c, true, i18n.T(lang, "class.lesson.added", l.Title.In(lang), l.ID))
}

// lessonErrorKeys are the lesson language's refusals the catalogs
// translate (lesson.error.*): the English text is the parser's own
// message with each argument as %s, so a refusal is matched against it and
// its arguments carried over; any other stays as the parser says it.
var lessonErrorKeys = []string{"unknown-keyword", "unknown-keyword-here", "no-text", "empty-text", "unknown-language",
	"needs-value", "bad-id", "no-lesson-line", "no-brokers", "no-steps", "no-part", "no-title", "no-summary",
	"unknown-action", "bad-brokers", "bad-part", "id-taken", "number-taken", "builds-on-missing", "builds-on-later",
	"scenario", "do-outside", "control-character", "setup-early", "step-early"}

var lessonErrorPatterns = sync.OnceValue(func() []*regexp.Regexp {
	out := make([]*regexp.Regexp, len(lessonErrorKeys))
	for i, k := range lessonErrorKeys {
		en := regexp.QuoteMeta(i18n.T(i18n.English, "lesson.error."+k))
		out[i] = regexp.MustCompile("^" + strings.ReplaceAll(en, "%s", "(.+?)") + "$")
	}
	return out
})

// lessonErrorText is msg, a lesson language's refusal, in lang.
func lessonErrorText(lang i18n.Lang, msg string) string {
	for i, re := range lessonErrorPatterns() {
		if m := re.FindStringSubmatch(msg); m != nil {
			args := make([]any, len(m)-1)
			for j, a := range m[1:] {
				args[j] = a
			}
			return i18n.T(lang, "lesson.error."+lessonErrorKeys[i], args...)
		}
	}
	return msg
}
