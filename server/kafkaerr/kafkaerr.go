// Package kafkaerr turns an error that wraps franz-go's kerr errors into
// the text a person reads. A wrapped kerr error reads "CODE: description:
// detail", sometimes nested; the code travels in its own field (an API
// error's code, a Kafka response's error code) and the description is
// written for client authors, so the broker's responses and the web API
// both show the lab's detail alone.
package kafkaerr

import (
	"errors"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/internal/clip"
)

// All is every error kerr knows, by code.
var All = func() []*kerr.Error {
	var out []*kerr.Error
	for code := int16(-1); code < 200; code++ {
		var ke *kerr.Error
		if errors.As(kerr.ErrorForCode(code), &ke) && ke.Code == code {
			out = append(out, ke)
		}
	}
	return out
}()

// Detail cuts every "CODE: description" of a Kafka error out of msg, and
// a bare "CODE: " it starts with (as storage's range errors do); what is
// left is the detail, "" if there is none. The lines of joined errors
// become one line, separated by "; ".
func Detail(msg string) string {
	for i := 0; ; i++ {
		before := msg
		for _, ke := range All {
			if !strings.Contains(msg, ke.Message) {
				continue
			}
			msg = strings.ReplaceAll(msg, ke.Error()+": ", "")
			msg = strings.ReplaceAll(msg, ke.Error(), "")
			msg = strings.ReplaceAll(msg, ke.Description+": ", "")
			msg = strings.TrimPrefix(msg, ke.Message+": ")
		}
		if msg == before || i == 3 {
			// Joined errors (errors.Join) are one line each: a person
			// reads them as one sentence.
			lines := strings.Split(msg, "\n")
			out := lines[:0]
			for _, l := range lines {
				if l = strings.Trim(strings.TrimSpace(l), ": "); l != "" {
					out = append(out, l)
				}
			}
			return strings.Join(out, "; ")
		}
	}
}

// Quote quotes a value a request sent, cut to 40 bytes at a character
// boundary: an error message says what was sent without echoing a whole
// body back.
func Quote(s string) string {
	return strconv.Quote(clip.Bytes(s, 40))
}

// Keyed is an error that also says itself in the learner's language: Key
// and Args are the i18n key and arguments of the same text (the web API
// sends them beside its English message; pages show that text). It unwraps
// to the error it says, so errors.Is and errors.As find its Kafka error.
type Keyed struct {
	Key  string
	Args []string
	Err  error
}

// WithKey returns err saying itself with the i18n key and args.
func WithKey(err error, key string, args ...string) error {
	return &Keyed{Key: key, Args: args, Err: err}
}

func (e *Keyed) Error() string { return e.Err.Error() }

// Unwrap returns the error e says.
func (e *Keyed) Unwrap() error { return e.Err }

// MessageKey returns the i18n key and arguments of e.
func (e *Keyed) MessageKey() (string, []string) { return e.Key, e.Args }
