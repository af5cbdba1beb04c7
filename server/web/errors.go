package web

import (
	"bytes"
	"errors"
	"net/http"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Error is an API error: an HTTP status, a code (Kafka's error name where one
// fits, such as UNKNOWN_TOPIC_OR_PARTITION) and a message for people. Handlers
// return it; the error handler writes it as {"error":{"code":…,"message":…}}.
type Error struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// KafkaError returns an Error with the HTTP status and the name of the Kafka
// error ke as its code.
func KafkaError(status int, ke *kerr.Error, msg string) *Error {
	return &Error{Status: status, Code: ke.Message, Message: msg}
}

// Codes for HTTP-level errors Kafka has no name for.
const (
	CodeNotFound         = "NOT_FOUND"
	CodeMethodNotAllowed = "METHOD_NOT_ALLOWED"
	CodeForbiddenOrigin  = "FORBIDDEN_ORIGIN"
)

// errorBody is the JSON shape of every error response.
type errorBody struct {
	Error *Error `json:"error"`
}

// toError maps any handler error to an *Error: ours as is, Echo's by status
// (404, 405, 400 …), anything else as UNKNOWN_SERVER_ERROR.
func toError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		msg := http.StatusText(he.Code)
		if m, ok := he.Message.(string); ok && m != "" {
			msg = m
		}
		switch he.Code {
		case http.StatusNotFound:
			return &Error{Status: he.Code, Code: CodeNotFound, Message: "no such route"}
		case http.StatusMethodNotAllowed:
			return &Error{Status: he.Code, Code: CodeMethodNotAllowed, Message: msg}
		}
		if he.Code >= 400 && he.Code < 500 {
			return KafkaError(he.Code, kerr.InvalidRequest, msg)
		}
		return KafkaError(he.Code, kerr.UnknownServerError, msg)
	}
	return KafkaError(http.StatusInternalServerError, kerr.UnknownServerError, "internal error")
}

// handleError is Echo's HTTPErrorHandler: every error becomes the JSON body.
// Unexpected (5xx) errors are logged with their cause, which clients never see.
func (s *Server) handleError(err error, c echo.Context) {
	e := toError(err)
	if e.Status == http.StatusInternalServerError {
		s.opts.Logger.Error("web: request failed", "method", c.Request().Method, "path", c.Request().URL.Path, "err", err)
	}
	if c.Response().Committed {
		return
	}
	if c.Request().Method == http.MethodHead {
		err = c.NoContent(e.Status)
	} else {
		err = c.JSON(e.Status, errorBody{e})
	}
	if err != nil {
		s.opts.Logger.Warn("web: writing error response", "err", err)
	}
}

// Render renders component into a buffer and, only if that succeeded, sends it
// as HTML with status. A render error is returned (and becomes a 500), never
// dropped, and never leaves half a page on the wire.
func Render(c echo.Context, status int, component templ.Component) error {
	var buf bytes.Buffer
	if err := component.Render(c.Request().Context(), &buf); err != nil {
		return err
	}
	return c.HTMLBlob(status, buf.Bytes())
}
