package web

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"

	"github.com/a-h/templ"
	"github.com/gorilla/websocket"
	"github.com/labstack/echo/v4"

	"tidemark/views"
)

// The live class (GET /class/live, a websocket, teacher only): the
// dashboard's seat rows (?view=seats, the default) or the per-question
// page's content (?view=questions), rendered on the server in the page's
// language and sent again whenever the roster changes (a join, progress,
// an answer, a check, a seat coming online) and every liveRefresh (seats
// going offline). static/class-live.js puts each into the page; without
// a script the page is current when loaded. One writer per connection (this
// handler) and nothing queued: a change that lands while a message is
// being written is folded into the next, so a slow teacher's screen costs
// the class nothing.

// Live timing: at most one message per liveEvery, so a class answering at
// once costs one rendering per interval, and one every liveRefresh at the
// least.
const (
	liveEvery   = 200 * time.Millisecond
	liveRefresh = 5 * time.Second
)

// LiveMessage is one message of /class/live: replace the content of the
// element with id Target by HTML.
type LiveMessage struct {
	Target string `json:"target"`
	HTML   string `json:"html"`
}

func (s *Server) classLive(c echo.Context) error {
	if err := refuseHandshakeBody(c.Request()); err != nil {
		return err
	}
	view := c.QueryParam("view")
	if view != "" && view != "seats" && view != "questions" {
		return &Error{Status: http.StatusBadRequest, Code: "INVALID_REQUEST", Message: "view must be seats or questions"}
	}
	lesson, ls, err := questionsLessons(c) // view=questions: every lesson, or ?lesson=
	if err != nil {
		return err
	}
	conn, release, err := s.upgradeWS(c)
	if conn == nil {
		return err
	}
	defer release()
	readerDone := make(chan struct{})
	go s.readWS(conn, readerDone)

	r := c.Request()
	lang := Lang(c)
	p := views.Page{Lang: lang, Path: r.URL.RequestURI()}
	render := func() (LiveMessage, error) {
		var comp templ.Component
		target := "seat-rows"
		if view == "questions" {
			target, comp = "questions", views.QuestionsBody(p, questionsView(s.opts.Class.Name(), lesson, s.questions(lang, ls)))
		} else {
			comp = views.SeatRows(p, s.classView(r, lang))
		}
		var b bytes.Buffer
		err := comp.Render(r.Context(), &b)
		return LiveMessage{Target: target, HTML: b.String()}, err
	}
	send := func() error {
		m, err := render()
		if err != nil {
			return err
		}
		b, _ := json.Marshal(m)
		conn.SetWriteDeadline(time.Now().Add(s.opts.WriteWait))
		return conn.WriteMessage(websocket.TextMessage, b)
	}
	ping := time.NewTicker(s.opts.PingInterval)
	defer ping.Stop()
	refresh := time.NewTicker(liveRefresh)
	defer refresh.Stop()
	for {
		changed := s.opts.Class.Changes() // before rendering: a change during it wakes the next round
		if err := send(); err != nil {
			return nil
		}
		wait := time.NewTimer(liveEvery)
	waiting:
		for {
			select {
			case <-changed:
				<-wait.C // at most one message per liveEvery
				break waiting
			case <-refresh.C:
				wait.Stop()
				break waiting
			case <-ping.C:
				if err := conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(s.opts.WriteWait)); err != nil {
					wait.Stop()
					return nil
				}
			case <-readerDone:
				wait.Stop()
				return nil
			case <-s.ctx.Done():
				wait.Stop()
				msg := websocket.FormatCloseMessage(websocket.CloseGoingAway, "server shutting down")
				conn.WriteControl(websocket.CloseMessage, msg, time.Now().Add(s.opts.WriteWait))
				return nil
			}
		}
	}
}
