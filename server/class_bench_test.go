package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/gorilla/websocket"

	"tidemark/events"
	"tidemark/server/web"
)

// BenchmarkClassPanelLatency is the loaded-class figure: 30 seats
// (3-broker clusters) each producing 100 records/s through the API with
// its own token (10 records every 100 ms, acks=1, partitions in turn),
// while seat 1's overview is open in headless Chromium. It reports seat
// 1's produce→panel latency (request sent → first panel render whose
// sequence includes the leader's append) and every seat's produce round
// trip; produces refused are counted. CLASS_BENCH_FOR sets how long the
// seats produce (default 10 s).
func BenchmarkClassPanelLatency(b *testing.B) {
	const seats, perTick, every = 30, 10, 100 * time.Millisecond
	runFor := 10 * time.Second
	if v := os.Getenv("CLASS_BENCH_FOR"); v != "" {
		runFor, _ = time.ParseDuration(v)
	}
	chromium := chromiumPath(b)
	static := buildStatic(b)
	l, _ := startClassWith(b, b.TempDir(), func(c *config) { c.static = os.DirFS(static) },
		"--seats", strconv.Itoa(seats), "--brokers", "3")
	tokens := make([]string, seats)
	for i := range seats {
		tokens[i] = l.join(b, i+1, "seat"+strconv.Itoa(i+1))
	}

	ctx, cancel := context.WithTimeout(context.Background(), browserTimeout)
	defer cancel()
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, chromeOptions(b, chromium, 1366, 900)...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()
	panel := &browserLab{t: b, url: l.url, ctx: bctx}
	// A second token for seat 1, the page's cookie: the used code claims
	// no more, so the teacher gives the seat a new one.
	if status, body := l.call(b, "POST", "/api/v1/class/seats/1/code", l.teacher, ""); status != 200 {
		b.Fatalf("a new code for seat 1: %d %s", status, body)
	} else {
		var seat web.SeatResponse
		json.Unmarshal([]byte(body), &seat)
		panel.joinClass(seat.Code, "seat1")
	}
	var renders []renderEntry
	readRenders := func() {
		got, err := chromedp.Run(bctx, chromedp.Evaluate[[]renderEntry](`window.tidemarkRenders()`))
		if err != nil {
			b.Fatal(err)
		}
		renders = append(renders, got...)
	}
	readRenders() // drop the page load's

	type sent struct {
		at        time.Time
		partition int32
		last      int64
	}
	var (
		mu     sync.Mutex
		mine   []sent          // seat 1's produces
		trips  []time.Duration // every seat's round trips
		failed int             // produces refused
	)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: seats * 2}}
	values := strings.TrimSuffix(strings.Repeat(`{"value":"v"},`, perTick), ",")
	produce := func(seat int, partition int32) {
		body := `{"partition":` + strconv.Itoa(int(partition)) + `,"acks":"1","records":[` + values + `]}`
		req, _ := http.NewRequest("POST", l.url+"api/v1/topics/demo/records", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tokens[seat])
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			b.Error(err)
			return
		}
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		var r web.ProduceResponse
		if err != nil || resp.StatusCode != 200 || json.Unmarshal(raw, &r) != nil {
			// Counted, not fatal: a client retries (under this load a
			// leader can lose its place before it acknowledges).
			mu.Lock()
			if failed++; failed <= 3 {
				b.Logf("seat %d produce: %d %v %s", seat+1, resp.StatusCode, err, raw)
			}
			mu.Unlock()
			return
		}
		mu.Lock()
		trips = append(trips, time.Since(start))
		if seat == 0 {
			mine = append(mine, sent{start, r.Partition, r.LastOffset})
		}
		mu.Unlock()
	}

	b.ResetTimer()
	begin := time.Now()
	var wg sync.WaitGroup
	for seat := range seats {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(every)
			defer tick.Stop()
			var inflight sync.WaitGroup
			for i := 0; time.Since(begin) < runFor; i++ {
				<-tick.C
				inflight.Add(1)
				go func() { defer inflight.Done(); produce(seat, int32(i%3)) }()
			}
			inflight.Wait()
		}()
	}
	wg.Wait()
	elapsed := time.Since(begin)
	b.StopTimer()

	// Seat 1's leader appends, from its own events: the first append of
	// each (partition, last offset) is the leader's.
	appendSeq := map[[2]int64]uint64{}
	var since uint64
	for {
		status, body := l.call(b, "GET", "/api/v1/events?limit=1000&since="+strconv.FormatUint(since, 10), tokens[0], "")
		var er web.EventsResponse
		if status != 200 || json.Unmarshal([]byte(body), &er) != nil {
			b.Fatalf("events: %d", status)
		}
		for _, e := range er.Events {
			if e.Kind == events.KindAppend && e.Topic == "demo" && e.Offsets != nil {
				k := [2]int64{int64(e.Partition), e.Offsets.Last}
				if _, ok := appendSeq[k]; !ok {
					appendSeq[k] = e.Seq
				}
			}
		}
		if len(er.Events) == 0 {
			break
		}
		since = er.Events[len(er.Events)-1].Seq
	}
	deadline := time.Now().Add(10 * time.Second)
	var lat []float64
	for {
		readRenders()
		lat = lat[:0]
		missing := 0
		for _, s := range mine {
			seq, ok := appendSeq[[2]int64{int64(s.partition), s.last}]
			i := slices.IndexFunc(renders, func(r renderEntry) bool { return uint64(r.Seq) >= seq })
			if !ok || i < 0 {
				missing++
				continue
			}
			lat = append(lat, renders[i].At-float64(s.at.UnixNano())/1e6)
		}
		if missing == 0 || time.Now().After(deadline) {
			if missing > 0 {
				b.Fatalf("%d of %d of seat 1's produces never reached its panel", missing, len(mine))
			}
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	slices.Sort(lat)
	slices.Sort(trips)
	pct := func(n int, q float64) int { return min(n-1, int(q*float64(n))) }
	b.ReportMetric(lat[pct(len(lat), 0.50)], "panel-p50-ms")
	b.ReportMetric(lat[pct(len(lat), 0.99)], "panel-p99-ms")
	b.ReportMetric(float64(trips[pct(len(trips), 0.50)].Microseconds())/1000, "produce-p50-ms")
	b.ReportMetric(float64(trips[pct(len(trips), 0.99)].Microseconds())/1000, "produce-p99-ms")
	b.ReportMetric(float64(len(trips)*perTick)/elapsed.Seconds(), "records/s")
	b.ReportMetric(float64(failed), "produces-refused")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkClassLiveAnswers is the live-class figure: 60 seats
// answer one prediction (lesson 01-partitions' first) within 10 s, each
// through the API with its own token, while four teacher screens follow
// /class/live over real websockets (three dashboards, view=seats, and
// the per-question page, view=questions). It reports, over every
// dashboard, the time from an answer's request to the first message whose
// seat row shows it (p50, p99; also from the answer's response), and the
// process's CPU (percent of one core) over CLASS_BENCH_IDLE (default 5 s)
// with the 60 seats hibernating, before any lesson: without a teacher
// screen (the baseline) and with the four open. Seat clusters have one
// broker: the figure is the class's, not the brokers'.
func BenchmarkClassLiveAnswers(b *testing.B) {
	const seats, screens, window = 60, 3, 10 * time.Second
	idleFor := 5 * time.Second
	if v := os.Getenv("CLASS_BENCH_IDLE"); v != "" {
		idleFor, _ = time.ParseDuration(v)
	}
	l, _ := startClassWith(b, b.TempDir(), nil, "--seats", strconv.Itoa(seats), "--brokers", "1",
		"--max-awake-seats", strconv.Itoa(seats), "--max-lesson-clusters", strconv.Itoa(seats))
	tokens := make([]string, seats)
	for i := range seats {
		tokens[i] = l.join(b, i+1, "seat"+strconv.Itoa(i+1))
	}
	cpu := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			b.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	idle := func() float64 {
		c0, t0 := cpu(), time.Now()
		time.Sleep(idleFor)
		return 100 * float64(cpu()-c0) / float64(time.Since(t0))
	}
	time.Sleep(time.Second) // the joins' writes settle
	idleBase := idle()

	// The teacher's screens: each reader notes when a seat's answer first
	// shows on its dashboard.
	var (
		mu       sync.Mutex
		sentAt   = make([]time.Time, seats)
		doneAt   = make([]time.Time, seats)
		fromSent []float64
		fromDone []float64
		seen     = make([][]bool, screens)
	)
	answered := regexp.MustCompile(`class="badge (?:ok|bad)">step \d+:`)
	dial := func(view string) *websocket.Conn {
		h := http.Header{}
		h.Set("Authorization", "Bearer "+l.teacher)
		conn, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(l.url, "http")+"class/live?view="+view, h)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { conn.Close() })
		return conn
	}
	var readers sync.WaitGroup
	for s := range screens {
		seen[s] = make([]bool, seats)
		conn := dial("seats")
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				_, raw, err := conn.ReadMessage()
				if err != nil {
					return
				}
				at := time.Now()
				var m web.LiveMessage
				if json.Unmarshal(raw, &m) != nil {
					continue
				}
				rows := strings.Split(m.HTML, `data-testid="seat-`)
				mu.Lock()
				for _, row := range rows[1:] {
					n, err := strconv.Atoi(row[:strings.IndexByte(row, '"')])
					if err != nil || n < 1 || n > seats || seen[s][n-1] || sentAt[n-1].IsZero() || !answered.MatchString(row) {
						continue
					}
					seen[s][n-1] = true
					fromSent = append(fromSent, float64(at.Sub(sentAt[n-1]).Microseconds())/1000)
					if !doneAt[n-1].IsZero() {
						fromDone = append(fromDone, float64(at.Sub(doneAt[n-1]).Microseconds())/1000)
					}
				}
				mu.Unlock()
			}
		}()
	}
	questions := dial("questions")
	go func() {
		for {
			if _, _, err := questions.ReadMessage(); err != nil {
				return
			}
		}
	}()
	time.Sleep(time.Second) // the first messages
	idleLive := idle()

	// Each seat runs the lesson to its first prediction, four at a time.
	type prepared struct{ run, choice string }
	preps := make([]prepared, seats)
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for i := range seats {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			status, body := l.call(b, "POST", "/api/v1/lessons/01-partitions/runs", tokens[i], `{"speed":"instant"}`)
			var run struct{ ID string }
			if status != http.StatusCreated || json.Unmarshal([]byte(body), &run) != nil {
				b.Errorf("seat %d starting the lesson: %d %s", i+1, status, body)
				return
			}
			for range 20 {
				status, body = l.call(b, "GET", "/api/v1/lessons/runs/"+run.ID, tokens[i], "")
				var st struct {
					Steps []struct {
						Current    bool
						Prediction *struct{ Choices []struct{ ID string } }
					}
				}
				if status != 200 || json.Unmarshal([]byte(body), &st) != nil {
					b.Errorf("seat %d's run: %d %s", i+1, status, body)
					return
				}
				for _, s := range st.Steps {
					if s.Current && s.Prediction != nil && len(s.Prediction.Choices) > 0 {
						preps[i] = prepared{run.ID, s.Prediction.Choices[0].ID}
						return
					}
				}
				l.call(b, "POST", "/api/v1/lessons/runs/"+run.ID+"/next", tokens[i], "")
			}
			b.Errorf("seat %d: no prediction in 01-partitions", i+1)
		}()
	}
	wg.Wait()
	if b.Failed() {
		return
	}

	b.ResetTimer()
	begin := time.Now()
	for i := range seats {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Until(begin.Add(window * time.Duration(i) / seats)))
			mu.Lock()
			sentAt[i] = time.Now()
			mu.Unlock()
			status, body := l.call(b, "POST", "/api/v1/lessons/runs/"+preps[i].run+"/predict", tokens[i], `{"choice":"`+preps[i].choice+`"}`)
			mu.Lock()
			doneAt[i] = time.Now()
			mu.Unlock()
			if status != 200 {
				b.Errorf("seat %d answering: %d %s", i+1, status, body)
			}
		}()
	}
	wg.Wait()
	answeredIn := time.Since(begin)
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(fromSent)
		mu.Unlock()
		if n == seats*screens {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d answers reached the dashboards", n, seats*screens)
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.StopTimer()
	slices.Sort(fromSent)
	slices.Sort(fromDone)
	pct := func(v []float64, q float64) float64 { return v[min(len(v)-1, int(q*float64(len(v))))] }
	b.ReportMetric(pct(fromSent, 0.50), "update-p50-ms")
	b.ReportMetric(pct(fromSent, 0.99), "update-p99-ms")
	b.ReportMetric(pct(fromDone, 0.99), "update-after-answer-p99-ms")
	b.ReportMetric(answeredIn.Seconds(), "answering-s")
	b.ReportMetric(idleBase, "idle-cpu-%")
	b.ReportMetric(idleLive, "idle-cpu-live-%")
	b.ReportMetric(0, "ns/op")
}
