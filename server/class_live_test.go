package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"tidemark/server/web"
)

// dialLive opens /class/live?view=view with token.
func (l classLab) dialLive(t *testing.T, token, view string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	h := http.Header{}
	h.Set("Authorization", "Bearer "+token)
	return websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(l.url, "http")+"class/live?view="+view, h)
}

// nextLive reads messages of conn until one's HTML holds want, within 1 s.
func nextLive(t *testing.T, conn *websocket.Conn, want string) web.LiveMessage {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	conn.SetReadDeadline(deadline)
	for {
		_, b, err := conn.ReadMessage()
		if err != nil {
			t.Fatalf("waiting 1 s for %q on /class/live: %v", want, err)
		}
		var m web.LiveMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(m.HTML, want) {
			return m
		}
	}
}

// TestClassLive: the teacher's /class/live sends the seat rows at once and
// again within a second of a learner joining, answering a prediction and
// checking an exercise; the per-question view follows the answer too. A
// seat's token is refused.
func TestClassLive(t *testing.T) {
	l, _ := startClass(t, t.TempDir(), "--seats", "2")
	seats, _, err := l.dialLive(t, l.teacher, "seats")
	if err != nil {
		t.Fatal(err)
	}
	defer seats.Close()
	questions, _, err := l.dialLive(t, l.teacher, "questions")
	if err != nil {
		t.Fatal(err)
	}
	defer questions.Close()
	if m := nextLive(t, seats, `data-testid="seat-2"`); m.Target != "seat-rows" {
		t.Fatalf("the first message's target: %q", m.Target)
	}
	ada := l.join(t, 1, "Ada")
	nextLive(t, seats, ">Ada<")
	_, choice := answerFirstPrediction(t, l, ada, "")
	nextLive(t, seats, `data-lesson="01-partitions"`)
	if m := nextLive(t, questions, `data-choice="`+choice+`" data-count="1"`); m.Target != "questions" {
		t.Fatalf("the questions view's target: %q", m.Target)
	}
	if status, _ := l.call(t, "POST", "/api/v1/exercises/find-offset/check", ada, ""); status != 200 {
		t.Fatal(status)
	}
	nextLive(t, seats, `data-exercise="find-offset" data-failed="1"`)

	if _, resp, err := l.dialLive(t, ada, "seats"); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a seat's token on /class/live: %v %v", resp, err)
	}
}

// TestProjectionFollowsReset: a seat reset while it is projected ends the
// projection's stream (a close frame, not silence on the stopped cluster),
// so the page's panel reconnects, and the new stream shows the fresh
// cluster: the topic the learner made before the reset is gone.
func TestProjectionFollowsReset(t *testing.T) {
	l, _ := startClass(t, t.TempDir(), "--seats", "1")
	ada := l.join(t, 1, "Ada")
	if status, body := l.call(t, "POST", "/api/v1/topics", ada, `{"name":"before","partitions":1,"replication_factor":1}`); status != http.StatusCreated {
		t.Fatalf("create topic: %d %s", status, body)
	}
	dial := func() *websocket.Conn {
		h := http.Header{}
		h.Set("Authorization", "Bearer "+l.teacher)
		conn, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(l.url, "http")+"class/seats/1/ws", h)
		if err != nil {
			t.Fatal(err)
		}
		return conn
	}
	first := func(conn *websocket.Conn) string {
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, b, err := conn.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	old := dial()
	defer old.Close()
	if snap := first(old); !strings.Contains(snap, `"before"`) {
		t.Fatalf("the projection's first snapshot lacks topic before: %.300s", snap)
	}
	if status, body := l.call(t, "POST", "/api/v1/class/seats/1/reset", l.teacher, `{"confirm":true}`); status != http.StatusOK {
		t.Fatalf("reset: %d %s", status, body)
	}
	old.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		_, _, err := old.ReadMessage()
		if err == nil {
			continue // events already on their way
		}
		if !websocket.IsCloseError(err, websocket.CloseGoingAway) {
			t.Fatalf("after the reset the stream ended with %v, want a going-away close", err)
		}
		break
	}
	fresh := dial()
	defer fresh.Close()
	if snap := first(fresh); strings.Contains(snap, `"before"`) {
		t.Fatalf("the new stream still shows the reset seat's topic: %.300s", snap)
	}
}
