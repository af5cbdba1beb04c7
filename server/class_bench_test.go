package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

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
