package web

import (
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strconv"

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
		r := &LessonRefused{Code: kerr.InvalidRequest.Message, Message: pe.Error(), File: pe.File, Line: pe.Line}
		r.Key, r.Args = refusalKey(i18n.English, pe)
		_, args := refusalKey(lang, pe)
		r.Text = learnerText(lang, &Error{Key: r.Key, Args: args})
		return nil, r, nil
	case errors.Is(err, class.ErrLessonTooBig):
		return nil, nil, KafkaError(http.StatusRequestEntityTooLarge, kerr.MessageTooLarge, err.Error()).
			withKey("class.lesson.too-big", strconv.Itoa(class.MaxLessonBytes>>10))
	case err != nil:
		return nil, nil, err
	}
	return l, nil, nil
}

// refusalKey is the catalog key and args of a refused file: its name,
// the line (none for the file as a whole) and what is wrong in lang, from
// the parser's own key and arguments (lesson.error.*).
func refusalKey(lang i18n.Lang, pe *lessons.ParseError) (string, []string) {
	if pe.Line == 0 {
		return "class.lesson.refused-file", []string{pe.File, pe.Text(lang)}
	}
	return "class.lesson.refused", []string{pe.File, strconv.Itoa(pe.Line), pe.Text(lang)}
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
