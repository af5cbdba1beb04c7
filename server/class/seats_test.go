package class

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"tidemark/server/cluster"
	"tidemark/server/labs"
)

// clock is a clock the test moves by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// seatHandler answers with the topics of the seat's cluster, and blocks
// while hold is closed-over and open (a request in flight).
type seatHandler struct {
	env  Env
	hold chan struct{}
}

func (h seatHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/hold" {
		<-h.hold
	}
	for _, t := range h.env.Cluster.Snapshot().Topics {
		io.WriteString(w, t.Name+"\n")
	}
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }

func openClass(t *testing.T, dir string, maxAwake int, clk *clock, hold chan struct{}) *Class {
	t.Helper()
	return openClassWith(t, dir, maxAwake, clk, hold, nil)
}

// openClassWith is openClass with woke called with each seat's Env as it
// wakes.
func openClassWith(t *testing.T, dir string, maxAwake int, clk *clock, hold chan struct{}, woke func(Env)) *Class {
	t.Helper()
	runs, err := labs.New(labs.Options{Root: filepath.Join(dir, "lessons"), SweepInterval: -1, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { runs.Close() })
	c, _, err := Open(Options{Dir: filepath.Join(dir, "class"), Name: "test", Seats: 3,
		Cluster: cluster.Options{Brokers: 1, Paused: true, Logger: quiet()},
		Setup: func(cl *cluster.Cluster) error {
			if _, ok := cl.Controller().Topic("demo"); ok {
				return nil
			}
			_, err := cl.CreateTopic("demo", 1, 1, nil)
			return err
		},
		NewHandler: func(env Env) (http.Handler, io.Closer, error) {
			if woke != nil {
				woke(env)
			}
			return seatHandler{env, hold}, nopCloser{}, nil
		},
		Runs: runs, MaxAwake: maxAwake, IdleAfter: time.Minute, SweepInterval: -1, Now: clk.Now, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func serve(t *testing.T, c *Class, seat int, path string) (string, error) {
	t.Helper()
	rec := httptest.NewRecorder()
	err := c.Serve(seat, rec, httptest.NewRequest("GET", path, nil))
	return rec.Body.String(), err
}

// TestHibernateAndWake: an idle seat hibernates (its cluster closed, its
// directory kept) and wakes with its state on the next request; with
// MaxAwake seats awake the idlest one makes room, and when every awake
// seat has a request in flight the next seat gets a FullError (THROTTLING_
// QUOTA_EXCEEDED with the class.full text), not a raw Kafka error.
func TestHibernateAndWake(t *testing.T) {
	clk := &clock{now: time.Unix(1000, 0)}
	hold := make(chan struct{})
	c := openClass(t, t.TempDir(), 1, clk, hold)

	if body, err := serve(t, c, 1, "/"); err != nil || body != "demo\n" {
		t.Fatalf("seat 1: %q, %v", body, err)
	}
	cl, done, err := c.Cluster(1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.CreateTopic("mine", 1, 1, nil); err != nil {
		t.Fatal(err)
	}
	done()
	if !c.Awake(1) || !c.Online(1) {
		t.Fatal("seat 1 is not awake and online after a request")
	}
	clk.Add(59 * time.Second)
	if got := c.Sweep(); len(got) != 0 {
		t.Fatalf("Sweep before IdleAfter hibernated %v", got)
	}
	clk.Add(time.Second)
	if got := c.Sweep(); len(got) != 1 || got[0] != 1 || c.Awake(1) || c.Online(1) {
		t.Fatalf("Sweep after IdleAfter = %v, awake %v", got, c.Awake(1))
	}
	start := time.Now()
	if body, err := serve(t, c, 1, "/"); err != nil || body != "demo\nmine\n" {
		t.Fatalf("seat 1 after waking: %q, %v", body, err)
	}
	t.Logf("wake took %v", time.Since(start))

	// Seat 2 takes the only slot from idle seat 1.
	if body, err := serve(t, c, 2, "/"); err != nil || body != "demo\n" || c.Awake(1) {
		t.Fatalf("seat 2: %q, %v; seat 1 awake %v", body, err, c.Awake(1))
	}
	// While seat 2 has a request in flight, seat 3 cannot wake.
	held := make(chan error, 1)
	go func() {
		rec := httptest.NewRecorder()
		held <- c.Serve(2, rec, httptest.NewRequest("GET", "/hold", nil))
	}()
	deadline := time.Now().Add(10 * time.Second)
	for st, _ := c.run(2); st.inflight.Load() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the held request never started")
		}
		time.Sleep(time.Millisecond)
	}
	_, err = serve(t, c, 3, "/")
	var full *FullError
	if !errors.As(err, &full) || !errors.Is(err, ErrClassFull) {
		t.Fatalf("seat 3 with every slot busy: %v, want a FullError", err)
	}
	if key, args := full.MessageKey(); key != "class.full" || args[0] != "1" {
		t.Fatalf("FullError text = %s %v", key, args)
	}
	close(hold)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	if _, err := serve(t, c, 3, "/"); err != nil {
		t.Fatalf("seat 3 once seat 2 is idle: %v", err)
	}
}

// TestResetSeat: a reset seat's next wake starts a fresh cluster, and the
// roster gives it a new code.
func TestResetSeat(t *testing.T) {
	clk := &clock{now: time.Unix(1000, 0)}
	dir := t.TempDir()
	c := openClass(t, dir, 2, clk, nil)
	cl, done, err := c.Cluster(1)
	if err != nil {
		t.Fatal(err)
	}
	cl.CreateTopic("mine", 1, 1, nil)
	done()
	old := c.Seats()[0].Code
	s, err := c.ResetSeat(1)
	if err != nil || s.Code == old {
		t.Fatalf("ResetSeat = %+v, %v", s, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "class", "seats", "seat-1")); !os.IsNotExist(err) {
		t.Fatalf("seat 1's directory after reset: %v", err)
	}
	if body, err := serve(t, c, 1, "/"); err != nil || body != "demo\n" {
		t.Fatalf("seat 1 after reset: %q, %v", body, err)
	}
}

// TestResetSeatIsOffline: a reset seat is free, so the dashboard does not
// show it online from its last learner's requests.
func TestResetSeatIsOffline(t *testing.T) {
	c := openClass(t, t.TempDir(), 1, &clock{now: time.Unix(1000, 0)}, nil)
	if _, err := serve(t, c, 1, "/"); err != nil {
		t.Fatal(err)
	}
	if !c.Online(1) {
		t.Fatal("a seat that just served a request is not online")
	}
	if _, err := c.ResetSeat(1); err != nil {
		t.Fatal(err)
	}
	if c.Online(1) {
		t.Error("a reset seat is online")
	}
}
