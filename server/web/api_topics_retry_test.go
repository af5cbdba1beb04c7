package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/events"
)

// failoverLab answers its first produces as a broker that is no longer
// the leader would, then as the new leader.
type failoverLab struct {
	*testLab
	mu       sync.Mutex
	fails    int
	err      error
	appended bool
	calls    int
}

func (l *failoverLab) Produce(context.Context, string, int32, int16, []Record, time.Duration) (ProduceResult, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls++
	if l.calls <= l.fails {
		res := ProduceResult{Leader: 1, BaseOffset: -1, LastOffset: -1}
		if l.appended {
			res.BaseOffset, res.LastOffset = 4, 4
		}
		return res, fmt.Errorf("produce to demo-0: %w", l.err)
	}
	return ProduceResult{Leader: 2, BaseOffset: 7, LastOffset: 7}, nil
}

// TestProduceRetriesLikeAProducer: a retriable error before anything was
// appended is sent again after a back-off within delivery_timeout_ms, and
// the answer lists every attempt; 0 gives the raw answer, naming the
// broker; an error after an append is not retried (the records would be
// written twice).
func TestProduceRetriesLikeAProducer(t *testing.T) {
	body := `{"partition":0,"acks":"all","records":[{"value":"v"}]%s}`
	t.Run("failover", func(t *testing.T) {
		lab := &failoverLab{testLab: newTestLab(events.BusOptions{}), fails: 2, err: kerr.NotLeaderForPartition}
		rec := send(t, newTestServer(t, lab, Options{}).Handler(), "POST", "/api/v1/topics/demo/records", fmt.Sprintf(body, ""))
		var res ProduceResponse
		if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &res) != nil {
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
		want := []ProduceAttempt{{1, "NOT_LEADER_OR_FOLLOWER"}, {1, "NOT_LEADER_OR_FOLLOWER"}, {2, ""}}
		if fmt.Sprint(res.Attempts) != fmt.Sprint(want) || res.Leader != 2 || res.BaseOffset != 7 {
			t.Fatalf("%+v, want attempts %v at offset 7 of broker 2", res, want)
		}
	})
	t.Run("raw", func(t *testing.T) {
		lab := &failoverLab{testLab: newTestLab(events.BusOptions{}), fails: 2, err: kerr.NotLeaderForPartition}
		rec := send(t, newTestServer(t, lab, Options{}).Handler(), "POST", "/api/v1/topics/demo/records", fmt.Sprintf(body, `,"delivery_timeout_ms":0`))
		wantError(t, rec, http.StatusServiceUnavailable, "NOT_LEADER_OR_FOLLOWER")
		var body struct{ Error Error }
		e := &body.Error
		if json.Unmarshal(rec.Body.Bytes(), &body) != nil || len(e.Attempts) != 1 || lab.calls != 1 || !strings.HasPrefix(e.Message, "broker 1:") {
			t.Fatalf("%s after %d calls: want one attempt, the broker named", rec.Body, lab.calls)
		}
	})
	t.Run("appended", func(t *testing.T) {
		lab := &failoverLab{testLab: newTestLab(events.BusOptions{}), fails: 1, err: kerr.RequestTimedOut, appended: true}
		rec := send(t, newTestServer(t, lab, Options{}).Handler(), "POST", "/api/v1/topics/demo/records", fmt.Sprintf(body, ""))
		if rec.Code == http.StatusOK || lab.calls != 1 {
			t.Fatalf("%d %s after %d calls: an appended produce was sent again", rec.Code, rec.Body, lab.calls)
		}
	})
	t.Run("gives up", func(t *testing.T) {
		lab := &failoverLab{testLab: newTestLab(events.BusOptions{}), fails: 1 << 30, err: kerr.NotEnoughReplicas}
		s := newTestServer(t, lab, Options{})
		s.retryClock = &stepClock{t: time.Unix(0, 0)}
		rec := send(t, s.Handler(), "POST", "/api/v1/topics/demo/records", fmt.Sprintf(body, `,"delivery_timeout_ms":350`))
		wantError(t, rec, http.StatusServiceUnavailable, "NOT_ENOUGH_REPLICAS")
		// 100 + 200 ms of back-off fit in 350 ms, the next 50 ms too: 4 sends.
		if lab.calls != 4 {
			t.Fatalf("%d sends in a 350 ms delivery timeout, want 4 (back-off 100, 200, 50)", lab.calls)
		}
	})
	wantError(t, send(t, newTestServer(t, &failoverLab{testLab: newTestLab(events.BusOptions{})}, Options{}).Handler(), "POST", "/api/v1/topics/demo/records",
		fmt.Sprintf(body, `,"delivery_timeout_ms":-1`)), http.StatusBadRequest, "INVALID_REQUEST")
}

// stepClock moves at once by what After waits.
type stepClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *stepClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	ch := make(chan time.Time, 1)
	ch <- c.t
	return ch
}
