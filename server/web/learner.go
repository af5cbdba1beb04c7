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

// learner returns whose runs c's request starts and lists: Options.Owner
// on a class seat's Server, else the learner cookie's id. A browser
// without one gets a new one when create is set (a start); else it is "",
// nobody's.
func (s *Server) learner(c echo.Context, create bool) string {
	if s.opts.Owner != "" {
		return s.opts.Owner
	}
	if id := cookie(c.Request(), learnerCookie); validLearnerID(id) {
		return id
	}
	if !create {
		return ""
	}
	var b [learnerIDLen / 2]byte
	rand.Read(b[:])
	id := "learner-" + hex.EncodeToString(b[:])
	// Lax, not Strict: a learner following a link to the lab from
	// elsewhere still sees their runs on /lessons.
	c.SetCookie(&http.Cookie{Name: learnerCookie, Value: id, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode,
		Secure: c.Request().TLS != nil, MaxAge: 30 * 24 * 3600})
	return id
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
