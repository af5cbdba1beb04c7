package web

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// learnerCookie names a browser's learner outside a class seat: a random
// id, set by the browser's first start of a lesson run, chaos run or
// comparison. It is no account: it says which runs are this browser's, so
// that /lessons lists them and a start on a full lab ends one of the
// learner's own before anyone else's (labs.Open). A class seat's runs are
// the seat's (Options.Owner) instead.
const learnerCookie = "tidemark_learner"

// learnerIDLen is the length of a learner id: 16 random bytes in hex.
const learnerIDLen = 32

// learner returns whose runs c's request lists: Options.Owner on a class
// seat's Server, else the learner cookie's id; "" (nobody's) for a browser
// that never started a run.
func (s *Server) learner(c echo.Context) string {
	if s.opts.Owner != "" {
		return s.opts.Owner
	}
	if id := cookie(c.Request(), learnerCookie); validLearnerID(id) {
		return id
	}
	return ""
}

// starter returns whose run c starts, as learner does, and started, to
// call once the run started: a browser without a learner id gets one then
// (a refused start sets no cookie).
func (s *Server) starter(c echo.Context) (owner string, started func()) {
	if owner = s.learner(c); owner != "" {
		return owner, func() {}
	}
	var b [learnerIDLen / 2]byte
	rand.Read(b[:])
	owner = "learner-" + hex.EncodeToString(b[:])
	return owner, func() {
		// Lax, not Strict: a learner following a link to the lab from
		// elsewhere still sees their runs on /lessons.
		c.SetCookie(&http.Cookie{Name: learnerCookie, Value: owner, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode,
			Secure: c.Request().TLS != nil, MaxAge: 30 * 24 * 3600})
	}
}

// validLearnerID reports whether id is one learner made: a cookie with
// anything else in it is ignored, so an owner is never a chosen string
// such as a seat's.
func validLearnerID(id string) bool {
	hexPart, ok := strings.CutPrefix(id, "learner-")
	if !ok || len(hexPart) != learnerIDLen {
		return false
	}
	_, err := hex.DecodeString(hexPart)
	return err == nil
}
