package broker

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"tidemark/server/controller"
	"tidemark/storage"
)

// steppedClock is paused (the brokers' loops idle) and moved by the test.
type steppedClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *steppedClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}
func (*steppedClock) Paused() bool                       { return true }
func (*steppedClock) Real(d time.Duration) time.Duration { return d }
func (*steppedClock) RateChanged() <-chan struct{}       { return nil }
func (*steppedClock) Resumed() <-chan struct{}           { return nil }
func (c *steppedClock) set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// TestTickScheduledByDeadlines: a broker's next tick is the earliest thing
// due, not a fixed period: the next retention check (on the whole second
// of lab time) while nothing waits, the moment a follower behind the LEO
// passes replica.lag.time.max.ms after an append, and flush.ms after it;
// the tick at each shrinks the ISR and then schedules the next.
func TestTickScheduledByDeadlines(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := &steppedClock{t: t0}
	ctl := openTestController(t, dir, clk)
	brokers := map[int32]*Broker{1: startTestBroker(t, dir, ctl, 1, clk, nil), 2: startTestBroker(t, dir, ctl, 2, clk, nil)}
	_, leader, follower := leaderAndFollower(t, ctl, brokers, map[string]string{"replica.lag.time.max.ms": "500", "flush.ms": "1700"})
	if err := follower.FetchRound(context.Background()); err != nil { // caught up at t0
		t.Fatal(err)
	}
	isr := func() []int32 {
		md := ctl.Metadata()
		return md.Topic("t").Partitions[0].ISR
	}
	ms := func(d time.Duration) int64 { return t0.Add(d).UnixMilli() }
	next := func(want time.Duration, when string) {
		t.Helper()
		if got := leader.nextTickMs.Load(); got != ms(want) {
			t.Fatalf("%s: next tick at t0%+dms, want t0%+dms", when, got-t0.UnixMilli(), want.Milliseconds())
		}
	}

	leader.Tick()
	next(time.Second, "idle") // the next retention check
	if res := leader.Produce(context.Background(), "t", 0, 1, storage.NewBatch([]storage.Record{{Value: []byte("m1")}}), time.Second); res.Err != nil {
		t.Fatal(res.Err)
	}
	next(501*time.Millisecond, "after an append the follower has not fetched")

	clk.set(t0.Add(500 * time.Millisecond))
	leader.Tick()
	if isr := isr(); len(isr) != 2 {
		t.Fatalf("ISR %v at 500 ms, before the follower's lag passed 500 ms", isr)
	}
	clk.set(t0.Add(501 * time.Millisecond))
	leader.Tick()
	if isr := isr(); !slices.Equal(isr, []int32{leader.ID()}) {
		t.Fatalf("ISR %v at 501 ms, want [%d]", isr, leader.ID())
	}
	next(1000*time.Millisecond, "ISR shrunk") // retention, on the whole second; flush.ms is due at 1700

	clk.set(t0.Add(1000 * time.Millisecond))
	leader.Tick()
	next(1700*time.Millisecond, "flush.ms pending")
	clk.set(t0.Add(1700 * time.Millisecond))
	leader.Tick()
	next(2000*time.Millisecond, "flushed")
}

// TestPeriodicDeadlinesShareAGrid: brokers started at different moments
// still tick, heartbeat and end their followers' idle long polls at the
// same instants of lab time (nextOnGrid), so an idle lab wakes once for
// all of them: two brokers ticking 130 ms and 770 ms into a second both
// tick next on the whole second; a tick that ran late keeps to the 50 ms
// grid; heartbeats and a 500 ms long poll end on the half second.
func TestPeriodicDeadlinesShareAGrid(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := &steppedClock{t: t0}
	ctl := openTestController(t, dir, clk)
	var next []int64
	for id, at := range map[int32]time.Duration{1: 130 * time.Millisecond, 2: 770 * time.Millisecond} {
		clk.set(t0.Add(at))
		b := startTestBroker(t, dir, ctl, id, clk, nil)
		b.Tick()
		next = append(next, b.nextTickMs.Load()-t0.UnixMilli())
	}
	if !slices.Equal(next, []int64{1000, 1000}) {
		t.Errorf("next ticks at t0+%v ms, want both on the whole second, t0+1000", next)
	}
	// A tick that ran 30 ms late waits for the next slot, 20 ms on, not
	// a whole TickInterval after its late start; an early deadline waits
	// for that slot; the whole second bounds every wait.
	ms := t0.UnixMilli()
	for _, c := range []struct {
		now, next, ticked int64 // ms from t0
		want              time.Duration
	}{
		{30, 50, 0, 20 * time.Millisecond},
		{30, 40, 0, 20 * time.Millisecond},
		{30, 5000, 0, 970 * time.Millisecond},
	} {
		if got := tickWait(t0.Add(time.Duration(c.now)*time.Millisecond), ms+c.next, ms+c.ticked, 50*time.Millisecond); got != c.want {
			t.Errorf("tickWait at t0+%dms, next t0+%dms, ticked in slot t0+%dms: %v, want %v", c.now, c.next, c.ticked, got, c.want)
		}
	}
	if got := slotMs(ms+130, 50*time.Millisecond) - ms; got != 100 {
		t.Errorf("slotMs(t0+130ms) = t0+%dms, want the 50 ms slot t0+100ms (Raft ticks and retention count from it)", got)
	}
	for _, c := range []struct {
		at, d, want time.Duration
	}{
		{130 * time.Millisecond, 500 * time.Millisecond, 370 * time.Millisecond}, // a heartbeat, or a long poll arriving then
		{770 * time.Millisecond, 500 * time.Millisecond, 230 * time.Millisecond},
		{500 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond}, // on the grid: a whole interval
		{999 * time.Millisecond, time.Second, 1001 * time.Millisecond},           // within gridSlack of a point: the next one
		{998 * time.Millisecond, time.Second, 2 * time.Millisecond},
	} {
		if got := untilGrid(t0.Add(c.at), c.d); got != c.want {
			t.Errorf("untilGrid(t0+%v, %v) = %v, want %v", c.at, c.d, got, c.want)
		}
	}
}

// TestLongPollOfSeveralPartitionsWakes: a consumer's Fetch of two
// partitions that finds nothing waits (MaxWait 20 s) and is answered as soon
// as one of them gets a record; it leaves no watcher behind.
func TestLongPollOfSeveralPartitionsWakes(t *testing.T) {
	b, tc, cl := consumerOfTopic(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(fetchVersion)
	req.ReplicaState.ID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.SessionEpoch = -1, 20_000, 1, 1<<20, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.TopicID = tc.ID
	for p := range int32(2) {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.LastFetchedEpoch, rp.PartitionMaxBytes = p, -1, -1, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	type answer struct {
		resp kmsg.Response
		err  error
	}
	answered := make(chan answer, 1)
	go func() {
		resp, err := cl.Request(ctx, req)
		answered <- answer{resp, err}
	}()
	// Produce once the fetch is waiting on both partitions.
	for watching := false; !watching; {
		select {
		case a := <-answered:
			t.Fatalf("answered before any record: %v", a.err)
		case <-ctx.Done():
			t.Fatal("the fetch never waited on both partitions")
		case <-time.After(time.Millisecond):
		}
		watching = true
		for p := range int32(2) {
			r := b.replicaFor("t", p)
			r.mu.Lock()
			watching = watching && len(r.watchers) == 1
			r.mu.Unlock()
		}
	}
	if res := b.Produce(ctx, "t", 1, 1, storage.NewBatch([]storage.Record{{Value: []byte("m1")}}), time.Second); res.Err != nil {
		t.Fatal(res.Err)
	}
	a := <-answered // ctx bounds it at 10 s, half the fetch's MaxWait
	if a.err != nil {
		t.Fatal(a.err)
	}
	parts := a.resp.(*kmsg.FetchResponse).Topics[0].Partitions
	if len(parts) != 2 || len(parts[1].RecordBatches) == 0 {
		t.Fatalf("answer %+v, want partition 1's record", parts)
	}
	for p := range int32(2) {
		r := b.replicaFor("t", p)
		r.mu.Lock()
		n := len(r.watchers)
		r.mu.Unlock()
		if n != 0 {
			t.Errorf("partition %d keeps %d watchers after the fetch", p, n)
		}
	}
}

// askedClock is paused at t (the brokers' own loops idle) and records the
// lab durations it is asked to turn into real waits.
type askedClock struct {
	t     time.Time
	mu    sync.Mutex
	asked []time.Duration
}

func (c *askedClock) Now() time.Time { return c.t }
func (*askedClock) Paused() bool     { return true }
func (c *askedClock) Real(d time.Duration) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked = append(c.asked, d)
	return d
}
func (*askedClock) RateChanged() <-chan struct{} { return nil }
func (*askedClock) Resumed() <-chan struct{}     { return nil }

// TestFollowerLongPollEndsOnTheGrid: a follower's idle fetch that reaches
// its leader 130 ms into a second waits until the half second (370 ms),
// not replica.fetch.wait.max.ms from its arrival, so every idle follower's
// fetch ends in the same wake-up as the heartbeats.
func TestFollowerLongPollEndsOnTheGrid(t *testing.T) {
	dir := t.TempDir()
	clk := &askedClock{t: time.Date(2024, 1, 1, 0, 0, 0, 130e6, time.UTC)}
	ctl := openTestController(t, dir, clk)
	// Heartbeats every 2 s, so their loop asks for 1870 ms, not 370.
	slow := func(c *Config) { c.HeartbeatInterval = 2 * time.Second }
	brokers := map[int32]*Broker{1: startTestBroker(t, dir, ctl, 1, clk, slow), 2: startTestBroker(t, dir, ctl, 2, clk, slow)}
	_, leaderB, follower := leaderAndFollower(t, ctl, brokers, nil)
	leader := leaderB.cfg.ID
	if err := follower.FetchRound(context.Background()); err != nil { // caught up: the next fetch finds nothing
		t.Fatal(err)
	}
	follower.mu.Lock()
	f := follower.fetchers[leader]
	follower.mu.Unlock()
	if _, err := f.round(context.Background(), 500*time.Millisecond, false, nil); err != nil {
		t.Fatal(err)
	}
	clk.mu.Lock()
	defer clk.mu.Unlock()
	if !slices.Contains(clk.asked, 370*time.Millisecond) || slices.Contains(clk.asked, 500*time.Millisecond) {
		t.Fatalf("the clock was asked for %v; want the long poll's 370 ms to the half second, and no 500 ms wait", clk.asked)
	}
}

// openTestController opens a controller in dir on clk's time, closed when
// the test ends.
func openTestController(t *testing.T, dir string, clk Clock) *controller.Controller {
	t.Helper()
	ctl, err := controller.Open(filepath.Join(dir, "meta"), controller.Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctl.Close() })
	return ctl
}

// startTestBroker starts broker id in dir on clk with ctl as its
// controller (set, if given, changes the rest of its Config), heartbeats it
// once, and crashes it when the test ends.
func startTestBroker(t *testing.T, dir string, ctl *controller.Controller, id int32, clk Clock, set func(*Config)) *Broker {
	t.Helper()
	cfg := Config{ID: id, LogDir: LogDirPath(dir, id), ListenAddr: "127.0.0.1:0",
		Controller: directController{ctl}, Network: openNetwork{}, Clock: clk}
	if set != nil {
		set(&cfg)
	}
	b, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Crash() })
	b.Heartbeat()
	return b
}
