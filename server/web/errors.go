package web

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"
	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/i18n"
	"tidemark/internal/kafkaname"
	"tidemark/server/kafkaerr"
)

// Error is an API error: an HTTP status, a code (Kafka's error name where one
// fits, such as UNKNOWN_TOPIC_OR_PARTITION) and a message for people. Handlers
// return it; the error handler writes it as {"error":{"code":…,"message":…}}.
type Error struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
	// Key and Args, when set, are the i18n key (limits.…) and arguments of
	// the lab's own text for this error, so that pages can show it in the
	// learner's language; Message is its English detail.
	Key  string   `json:"key,omitempty"`
	Args []string `json:"args,omitempty"`
	// Attempts, for a produce, is every request the API sent before
	// giving up: which broker answered what.
	Attempts []ProduceAttempt `json:"attempts,omitempty"`
}

// messageKeyer is an error that carries its own translated text, such as
// the controller's budget refusals.
type messageKeyer interface {
	MessageKey() (key string, args []string)
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// withKey gives e the i18n key and arguments of its text in the learner's
// language (Key, Args) and returns it.
func (e *Error) withKey(key string, args ...string) *Error {
	e.Key, e.Args = key, args
	return e
}

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
	CodeNotImplemented   = "NOT_IMPLEMENTED"
)

// kafkaStatus is the HTTP status of each Kafka error the lab returns; a
// retriable error not listed is a 503, anything else a 500.
var kafkaStatus = map[*kerr.Error]int{
	kerr.UnknownTopicOrPartition:      http.StatusNotFound,
	kerr.TopicAlreadyExists:           http.StatusConflict,
	kerr.InvalidTopicException:        http.StatusBadRequest,
	kerr.InvalidPartitions:            http.StatusBadRequest,
	kerr.InvalidReplicationFactor:     http.StatusBadRequest,
	kerr.InvalidConfig:                http.StatusBadRequest,
	kerr.PolicyViolation:              http.StatusBadRequest,
	kerr.InvalidRequest:               http.StatusBadRequest,
	kerr.InvalidRequiredAcks:          http.StatusBadRequest,
	kerr.InvalidRecord:                http.StatusBadRequest,
	kerr.CorruptMessage:               http.StatusBadRequest,
	kerr.OffsetOutOfRange:             http.StatusBadRequest,
	kerr.MessageTooLarge:              http.StatusRequestEntityTooLarge,
	kerr.RecordListTooLarge:           http.StatusRequestEntityTooLarge,
	kerr.NotEnoughReplicas:            http.StatusServiceUnavailable,
	kerr.NotEnoughReplicasAfterAppend: http.StatusServiceUnavailable,
	kerr.LeaderNotAvailable:           http.StatusServiceUnavailable,
	kerr.NotLeaderForPartition:        http.StatusServiceUnavailable,
	kerr.BrokerNotAvailable:           http.StatusServiceUnavailable,
	kerr.FencedLeaderEpoch:            http.StatusServiceUnavailable,
	kerr.RequestTimedOut:              http.StatusGatewayTimeout,
	kerr.UnknownServerError:           http.StatusInternalServerError,
	kerr.KafkaStorageError:            http.StatusServiceUnavailable,
}

// kafkaErrorOf is the Kafka error err carries (a context deadline is
// REQUEST_TIMED_OUT), or nil.
func kafkaErrorOf(err error) *kerr.Error {
	var ke *kerr.Error
	switch {
	case errors.As(err, &ke):
		return ke
	case errors.Is(err, context.DeadlineExceeded):
		return kerr.RequestTimedOut
	}
	return nil
}

// LabError turns an error from a lab control into an *Error: a Kafka error
// (found with errors.As, so wrapped ones count) keeps its name, with
// NOT_LEADER_OR_FOLLOWER for code 6, and gets the status kafkaStatus gives
// it; a context deadline is REQUEST_TIMED_OUT (504). The message is the
// error's detail with Kafka's long descriptions cut out, or the short
// English text of errors.<CODE> when there is none. Any other error (and
// nil) is returned as it is: the error handler logs it and answers a 500
// that does not show it.
func LabError(err error) error {
	var e *Error
	if err == nil || errors.As(err, &e) {
		return err
	}
	ke := kafkaErrorOf(err)
	if ke == nil {
		return err
	}
	status, ok := kafkaStatus[ke]
	if !ok {
		status = http.StatusInternalServerError
		if ke.Retriable {
			status = http.StatusServiceUnavailable
		}
	}
	code := kafkaname.Of(ke)
	out := &Error{Status: status, Code: code, Message: kafkaerr.Detail(err.Error())}
	if key := "errors." + code; out.Message == "" {
		// A script reading the API gets Kafka's description for a code
		// the lab has no text of its own for; learners never see it.
		out.Message = ke.Description
		if i18n.T(i18n.Default, key) != key {
			out.Message = i18n.T(i18n.Default, key)
		}
	}
	var mk messageKeyer
	if errors.As(err, &mk) {
		out.Key, out.Args = mk.MessageKey()
	}
	return out
}

// labFull is THROTTLING_QUOTA_EXCEEDED for a lab whose private cluster
// slots (lessons, chaos runs, comparisons) are all taken, with the lab's own
// text so that pages say it in the learner's language.
func labFull(err error) *Error {
	e := KafkaError(http.StatusTooManyRequests, kerr.ThrottlingQuotaExceeded, kafkaerr.Detail(err.Error()))
	var mk messageKeyer // a *labs.FullError: what this learner can do about it
	if errors.As(err, &mk) {
		e.Key, e.Args = mk.MessageKey()
	}
	return e
}

// descriptions holds every Kafka error's description, for learnerText.
var descriptions = func() map[string]bool {
	ds := map[string]bool{}
	for _, ke := range kafkaerr.All {
		ds[ke.Description] = true
	}
	return ds
}()

// learnerText is what a page shows for e in lang: the lab's own text when
// e carries one (Key), else the short text for its Kafka code — on English
// pages the lab's detail instead, which says more. Kafka's long English
// descriptions are never shown (LabError cut them); the code is shown
// apart, as Kafka's name.
func learnerText(lang i18n.Lang, e *Error) string {
	if e.Key != "" {
		args := make([]any, len(e.Args))
		for i, a := range e.Args {
			args[i] = a
		}
		return i18n.T(lang, e.Key, args...)
	}
	if lang == i18n.Default && e.Message != "" && !descriptions[e.Message] {
		return e.Message
	}
	if key := "errors." + e.Code; i18n.T(lang, key) != key {
		return i18n.T(lang, key)
	}
	return i18n.T(lang, "errors.other")
}

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
	if mayHaveBody(c.Request()) {
		defer dropBody(c.Response())()
	}
	if c.Request().Method == http.MethodGet && isPage(c.Request()) {
		err = s.renderErrorPage(c, e)
	} else if c.Request().Method == http.MethodHead {
		err = c.NoContent(e.Status)
	} else {
		err = c.JSON(e.Status, errorBody{e})
	}
	if err != nil {
		s.opts.Logger.Warn("web: writing error response", "err", err)
	}
}

// mayHaveBody reports whether r announced a body (a Content-Length other
// than 0, or chunked).
func mayHaveBody(r *http.Request) bool {
	return r.ContentLength != 0 || len(r.TransferEncoding) > 0
}

// dropBody makes the answer being written the connection's last and
// abandons what is left of the request's body: the body may be unread (a
// refusal before the handler: Host, Origin, a read-only lab, /ws), and
// net/http would otherwise read the rest of it, before answering or after,
// which a client that announces a Content-Length and never sends the
// bytes makes last until the read deadline. It sets Connection: close, so
// call it before the answer is written, and the func it returns after (the
// read deadline that one sets does not touch writes).
func dropBody(w http.ResponseWriter) func() {
	w.Header().Set("Connection", "close")
	return func() {
		// An error means a writer without deadlines (a test recorder).
		_ = http.NewResponseController(w).SetReadDeadline(time.Now())
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
