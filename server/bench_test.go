package server

import (
	"context"
	"encoding/json"
	"fmt"
	"math/bits"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/performance"
	"github.com/chromedp/cdproto/tracing"
	"github.com/chromedp/chromedp"
	"github.com/gorilla/websocket"

	"tidemark/events"
	"tidemark/server/web"
)

// BenchmarkPanelLatency measures produce→panel latency with the browser
// open: each iteration produces 1000 records in one second (5 records every
// 5 ms, acks=1, over the three partitions of demo) through the HTTP API,
// and for each produce takes the time from sending the request to the
// panel's first render that includes the leader's append event (the panel
// logs [seq, time] per render; the test reads the log back with chromedp).
// It reports p50-ms, p99-ms and max-ms over every produce, and records/s.
//
//	go test -run '^$' -bench PanelLatency -benchtime 5x ./server/
func BenchmarkPanelLatency(b *testing.B) {
	lab := startBrowserLab(b, false)
	lab.open("/", true)
	// Live is said when the snapshot arrives, before the frame that shows
	// it: produce once the page has shown the lab as it is, as a learner
	// would, not while it builds its first lanes.
	lab.poll(`+document.getElementById("panel").dataset.seq >= `+strconv.FormatUint(lab.cl.Bus().LastSeq(), 10), "the panel to show the lab")
	lab.frames()

	// Every append event of a leader, by partition and last offset.
	type key struct {
		partition int32
		last      int64
	}
	var (
		mu       sync.Mutex
		appendAt = map[key]uint64{}
		pubAt    = map[key]time.Time{}
	)
	// Leaders are read once: there are no elections here, and cloning the
	// snapshot at every drain would steal the CPU being measured.
	leaders := map[int32]int32{}
	snap0 := lab.cl.Snapshot()
	if t := snap0.Topic("demo"); t != nil {
		for _, p := range t.Partitions {
			leaders[p.Partition] = p.Leader
		}
	}
	// Events carry lab time, which starts on a whole second (NewClock):
	// at 1× it is real time less a constant, taken out of publish times.
	skew := lab.cl.Clock().Now().Sub(time.Now())
	sub := lab.cl.Bus().Subscribe()
	stopSub := make(chan struct{})
	subDone := make(chan struct{})
	go func() {
		defer close(subDone)
		for {
			select {
			case <-stopSub:
				return
			case <-sub.Ready():
			}
			evs, _ := sub.Drain()
			mu.Lock()
			for _, e := range evs {
				if e.Kind == events.KindAppend && e.Topic == "demo" && e.Offsets != nil {
					if leaders[e.Partition] == e.Broker {
						appendAt[key{e.Partition, e.Offsets.Last}] = e.Seq
						pubAt[key{e.Partition, e.Offsets.Last}] = e.Time.Add(-skew)
					}
				}
			}
			mu.Unlock()
		}
	}()
	defer func() { close(stopSub); <-subDone; sub.Close() }()
	// A Go client of /ws beside the page: when each event left the
	// server's websocket writer (its linger included), which splits
	// publish→render into the server's share and the browser's.
	wsAt := map[uint64]time.Time{}
	var wsMsgs int // messages /ws sent, as many as the page gets: each a task on its main thread
	wsURL := "ws" + strings.TrimPrefix(lab.url, "http") + "ws"
	wsConn, _, err := websocket.DefaultDialer.Dial(wsURL, nil)
	if err != nil {
		b.Fatal(err)
	}
	wsDone := make(chan struct{})
	go func() {
		defer close(wsDone)
		for {
			_, data, err := wsConn.ReadMessage()
			if err != nil {
				return
			}
			at := time.Now()
			m, err := events.DecodeMessage(string(data))
			if err != nil {
				continue
			}
			mu.Lock()
			wsMsgs++
			for _, e := range m.Events {
				if e.Kind == events.KindAppend {
					wsAt[e.Seq] = at
				}
			}
			mu.Unlock()
		}
	}()
	defer func() { wsConn.Close(); <-wsDone }()

	type sent struct {
		at  time.Time
		key key
	}
	var (
		sentMu sync.Mutex
		all    []sent
	)
	var renders []renderEntry
	readRenders := func() {
		got, err := chromedp.Run(lab.ctx, chromedp.Evaluate[[]renderEntry](`window.tidemarkRenders()`))
		if err != nil {
			b.Fatal(err)
		}
		renders = append(renders, got...)
	}
	readRenders() // drop the renders of page load
	// Where the page's main thread spends the run: Chromium's own counters
	// (seconds of script, style, layout and task time since the page
	// loaded), read before and after.
	metrics := func() map[string]float64 {
		got, err := chromedp.Run(lab.ctx, func(ctx context.Context, tg *chromedp.Target) (map[string]float64, error) {
			if _, err := cdp.Call(ctx, tg, performance.Enable, performance.EnableParams{}); err != nil {
				return nil, err
			}
			r, err := cdp.Call(ctx, tg, performance.GetMetrics, cdp.Empty{})
			if err != nil {
				return nil, err
			}
			m := map[string]float64{}
			for _, x := range r.Metrics {
				m[x.Name] = x.Value
			}
			return m, nil
		})
		if err != nil {
			b.Fatal(err)
		}
		return got
	}
	before := metrics()
	cpu0 := childrenCPU()
	self0 := selfCPU()
	mu.Lock()
	msgs0 := wsMsgs
	mu.Unlock()
	stopTrace := startTrace(b, lab.ctx)

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	// Close the client's connections before the server shuts down: one it
	// dialled but never used is new to the server, which waits 5 s for it,
	// as long as its whole shutdown may take.
	defer client.CloseIdleConnections()
	produce := func(partition int32) {
		body := `{"partition":` + strconv.Itoa(int(partition)) + `,"acks":"1","records":[{"value":"a"},{"value":"b"},{"value":"c"},{"value":"d"},{"value":"e"}]}`
		start := time.Now()
		resp, err := client.Post(lab.url+"api/v1/topics/demo/records", "application/json", strings.NewReader(body))
		if err != nil {
			b.Error(err)
			return
		}
		defer resp.Body.Close()
		var r struct {
			Partition  int32 `json:"partition"`
			LastOffset int64 `json:"last_offset"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || resp.StatusCode != 200 {
			b.Errorf("produce: %d %v", resp.StatusCode, err)
			return
		}
		sentMu.Lock()
		all = append(all, sent{start, key{r.Partition, r.LastOffset}})
		sentMu.Unlock()
	}

	lags0 := lab.cl.Bus().Lags()
	b.ResetTimer()
	var records int
	begin := time.Now()
	var steadyFrom time.Time // the end of the first iteration
	for i := range b.N {
		if i == 1 {
			steadyFrom = time.Now()
		}
		var wg sync.WaitGroup
		sem := make(chan struct{}, 16)
		tick := time.NewTicker(5 * time.Millisecond)
		for i := range 200 {
			<-tick.C
			sem <- struct{}{}
			wg.Add(1)
			go func(p int32) {
				defer func() { <-sem; wg.Done() }()
				produce(p)
			}(int32(i % 3))
			records += 5
		}
		tick.Stop()
		wg.Wait()
		readRenders()
	}
	elapsed := time.Since(begin)
	after := metrics()
	cpu1 := childrenCPU()
	self1 := selfCPU()
	mu.Lock()
	msgs1 := wsMsgs
	mu.Unlock()
	stopTrace()
	b.StopTimer()
	// Let the last appends reach the panel.
	deadline := time.Now().Add(5 * time.Second)
	var lat, steady, pub, toWS, toRender []float64
	var rows [][5]float64 // a produce request's, for TIDEMARK_LAT_LOG
	for {
		readRenders()
		lat, steady, pub, toWS, toRender, rows = lat[:0], steady[:0], pub[:0], toWS[:0], toRender[:0], rows[:0]
		missing := 0
		mu.Lock()
		for _, s := range all {
			seq, ok := appendAt[s.key]
			if !ok {
				missing++
				continue
			}
			i := slices.IndexFunc(renders, func(r renderEntry) bool { return uint64(r.Seq) >= seq })
			if i < 0 {
				missing++
				continue
			}
			lat = append(lat, renders[i].At-float64(s.at.UnixNano())/1e6)
			if !steadyFrom.IsZero() && s.at.After(steadyFrom) {
				steady = append(steady, lat[len(lat)-1])
			}
			pub = append(pub, float64(pubAt[s.key].Sub(s.at))/1e6)
			toRender = append(toRender, renders[i].At-float64(pubAt[s.key].UnixNano())/1e6)
			ws := -1.0 // not seen by the Go client
			if at, ok := wsAt[seq]; ok {
				ws = float64(at.Sub(pubAt[s.key])) / 1e6
				toWS = append(toWS, ws)
			}
			rows = append(rows, [5]float64{float64(s.at.Sub(begin)) / 1e6, lat[len(lat)-1], pub[len(pub)-1], ws, toRender[len(toRender)-1]})
		}
		mu.Unlock()
		if missing == 0 || time.Now().After(deadline) {
			if missing > 0 {
				b.Fatalf("%d of %d produces never reached the panel", missing, len(all))
			}
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if path := os.Getenv("TIDEMARK_LAT_LOG"); path != "" {
		// A line a produce request: ms since the run began, produce→render,
		// produce→publish, publish→ws (-1: not seen), publish→render.
		out := fmt.Appendf(nil, "# begin %d\n", begin.UnixMilli())
		for _, r := range rows {
			out = fmt.Appendf(out, "%.1f %.1f %.1f %.1f %.1f\n", r[0], r[1], r[2], r[3], r[4])
		}
		if err := os.WriteFile(path, out, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	slices.Sort(lat)
	slices.Sort(pub)
	slices.Sort(toRender)
	slices.Sort(toWS)
	pct := func(v []float64, q float64) float64 { return v[min(len(v)-1, int(q*float64(len(v))))] }
	b.ReportMetric(pct(lat, 0.50), "p50-ms")
	b.ReportMetric(pct(lat, 0.99), "p99-ms")
	// Without the first iteration, which meets the page's first frames
	// of the demo topic's lanes.
	if len(steady) > 0 {
		slices.Sort(steady)
		b.ReportMetric(pct(steady, 0.99), "p99-steady-ms")
	}
	b.ReportMetric(pct(pub, 0.50), "append-p50-ms")
	b.ReportMetric(pct(pub, 0.99), "append-p99-ms")
	// Publish→render is the browser's share with the server's /ws writer;
	// publish→ws is that writer's alone, as a Go client beside the page
	// receives it.
	b.ReportMetric(pct(toRender, 0.50), "pub-render-p50-ms")
	b.ReportMetric(pct(toRender, 0.99), "pub-render-p99-ms")
	if len(toWS) > 0 {
		b.ReportMetric(pct(toWS, 0.50), "pub-ws-p50-ms")
		b.ReportMetric(pct(toWS, 0.99), "pub-ws-p99-ms")
	}
	b.ReportMetric(lat[len(lat)-1], "max-ms")
	b.ReportMetric(float64(records)/elapsed.Seconds(), "records/s")
	if n := len(renders); n > 1 {
		b.ReportMetric(float64(n-1)/((renders[n-1].At-renders[0].At)/1000), "renders/s")
		var rms, hms, lms float64
		for _, r := range renders {
			rms, hms, lms = rms+r.RenderMs, hms+r.HandleMs, lms+r.LanesMs
		}
		b.ReportMetric(rms/float64(n), "render-ms/frame")
		b.ReportMetric(hms/float64(n), "decode-ms/frame")
		b.ReportMetric(lms/float64(n), "lanes-ms/frame")
		// The p99 of the gaps between renders: a record that arrives in a
		// long gap waits for its end.
		var gaps, rs []float64
		for i := 1; i < n; i++ {
			gaps = append(gaps, renders[i].At-renders[i-1].At)
			rs = append(rs, renders[i].RenderMs)
		}
		slices.Sort(gaps)
		slices.Sort(rs)
		b.ReportMetric(pct(gaps, 0.99), "gap-p99-ms")
		b.ReportMetric(pct(rs, 0.99), "render-p99-ms")
		// The parts made for reading (event list, lanes' lists, timeline,
		// producer, charts: bits 0-4 of the log's parts) that changed per
		// second, and the frames in which two or more did.
		var read, stacked int
		for _, r := range renders {
			n := bits.OnesCount(uint(r.Parts) & 0x1f)
			read += n
			if n > 1 {
				stacked++
			}
		}
		b.ReportMetric(float64(read)/elapsed.Seconds(), "read-parts/s")
		b.ReportMetric(float64(stacked), "stacked-frames")
		writeRenderLog(b, renders)
	}
	// Main-thread time per second of the run, by kind (ms/s).
	for _, m := range []struct{ name, unit string }{
		{"ScriptDuration", "script-ms/s"}, {"RecalcStyleDuration", "style-ms/s"},
		{"LayoutDuration", "layout-ms/s"}, {"TaskDuration", "busy-ms/s"},
	} {
		b.ReportMetric((after[m.name]-before[m.name])*1000/elapsed.Seconds(), m.unit)
	}
	// The CPU all of Chromium's processes took per second of the run: what
	// the page costs the machine, frames however many.
	if cpu0 >= 0 && cpu1 >= 0 {
		b.ReportMetric(float64(cpu1-cpu0)/elapsed.Seconds(), "browser-cpu-ms/s")
	}
	// The CPU this test process took per second of the run: the server
	// (brokers, controller, HTTP, /ws), but also the benchmark's own
	// producer and its Go client of /ws, which are not told apart.
	if self0 >= 0 && self1 >= 0 {
		b.ReportMetric(float64(self1-self0)/elapsed.Seconds(), "server-cpu-ms/s")
	}
	b.ReportMetric(float64(msgs1-msgs0)/elapsed.Seconds(), "ws-msgs/s")
	// Subscribers (the page's /ws, the Go client's) that fell behind and
	// were sent a fresh snapshot instead of their queue.
	b.ReportMetric(float64(lab.cl.Bus().Lags()-lags0), "ws-lags")
	b.ReportMetric(0, "ns/op")
}

// selfCPU returns the CPU time (user and system, ms) this process has
// used, from /proc; -1 where there is none.
func selfCPU() int64 {
	_, ms, ok := procCPU("self")
	if !ok {
		return -1
	}
	return ms
}

// procCPU reads /proc/<pid>/stat: the process's parent and its CPU time
// (user and system, ms).
func procCPU(pid string) (ppid int, ms int64, ok bool) {
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// After the command's closing parenthesis: state, ppid, … utime
	// (the 14th field of the line) and stime.
	i := strings.LastIndexByte(string(stat), ')')
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return 0, 0, false
	}
	ppid, _ = strconv.Atoi(f[1])
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return ppid, (ut + st) * 10, true // clock ticks of 10 ms
}

// writeRenderLog writes the panel's render log of the run as JSON lines
// to the file TIDEMARK_RENDER_LOG names, when set: [seq, ms since the
// epoch, render ms, decode ms, lanes ms, parts, messages decoded] a render, to tell the long
// frames apart (parts: the bits of wasm/main.go's frameParts).
func writeRenderLog(b *testing.B, renders []renderEntry) {
	path := os.Getenv("TIDEMARK_RENDER_LOG")
	if path == "" {
		return
	}
	var out []byte
	for _, r := range renders {
		line, _ := json.Marshal(r)
		out = append(append(out, line...), '\n')
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		b.Fatal(err)
	}
}

// childrenCPU returns the CPU time (user and system, ms) of this process's
// descendants (the browser's processes) from /proc; -1 where there is none.
func childrenCPU() int64 {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return -1
	}
	parent := map[int]int{}
	cpu := map[int]int64{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ppid, ms, ok := procCPU(e.Name())
		if !ok {
			continue
		}
		parent[pid], cpu[pid] = ppid, ms
	}
	self := os.Getpid()
	var total int64
	for pid, t := range cpu {
		for p := parent[pid]; p > 1; p = parent[p] {
			if p == self {
				total += t
				break
			}
		}
	}
	return total
}

// startTrace records a Chromium trace of the page (the timeline's
// categories, as the DevTools performance panel records them) into the file
// TIDEMARK_TRACE names, when set, until the returned func is called: where
// the main thread's time goes, event by event. Open it in the DevTools
// performance panel or Perfetto.
func startTrace(b *testing.B, ctx context.Context) (stop func()) {
	path := os.Getenv("TIDEMARK_TRACE")
	if path == "" {
		return func() {}
	}
	var (
		mu   sync.Mutex
		evs  []jsonv2.Value
		done = make(chan struct{})
	)
	if err := chromedp.Listen(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *tracing.EventDataCollected:
			mu.Lock()
			evs = append(evs, ev.Value...)
			mu.Unlock()
		case *tracing.EventTracingComplete:
			close(done)
		}
	}); err != nil {
		b.Fatal(err)
	}
	cats := []string{"devtools.timeline", "disabled-by-default-devtools.timeline", "v8.execute", "blink", "cc", "gpu", "toplevel", "disabled-by-default-devtools.timeline.frame", "disabled-by-default-v8.cpu_profiler"}
	if _, err := chromedp.Call(ctx, tracing.Start, tracing.StartParams{TraceConfig: &tracing.TraceConfig{IncludedCategories: cats}}); err != nil {
		b.Fatal(err)
	}
	return func() {
		if _, err := chromedp.Call(ctx, tracing.End, cdp.Empty{}); err != nil {
			b.Fatal(err)
		}
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			b.Fatal("the trace did not complete in 30 s")
		}
		mu.Lock()
		defer mu.Unlock()
		out, err := json.Marshal(map[string]any{"traceEvents": evs})
		if err == nil {
			err = os.WriteFile(path, out, 0o644)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

// hubLab is a lab of only a snapshot and a bus (the hub's inputs), changed
// together under one lock as web.Lab asks, with a snapshot the size of the
// demo topic's: 3 partitions × 3 replicas × events.RecordWindow records.
type hubLab struct {
	mu   sync.Mutex
	snap events.Snapshot
	bus  *events.Bus
}

func newHubLab() *hubLab {
	s := events.Snapshot{Controller: 0}
	for id := int32(1); id <= 3; id++ {
		s.Brokers = append(s.Brokers, events.Broker{ID: id, State: events.BrokerUp, Listener: "127.0.0.1:909" + strconv.Itoa(int(id))})
	}
	t := events.Topic{Name: "demo"}
	for p := int32(0); p < 3; p++ {
		part := events.Partition{Partition: p, Leader: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}}
		for id := int32(1); id <= 3; id++ {
			r := events.Replica{Broker: id, LEO: events.RecordWindow, HW: events.RecordWindow}
			for o := range int64(events.RecordWindow) {
				r.Records = append(r.Records, events.Record{Offset: o, Value: "value-" + strconv.FormatInt(o, 10)})
			}
			part.ReplicaLogs = append(part.ReplicaLogs, r)
		}
		t.Partitions = append(t.Partitions, part)
	}
	s.Topics = []events.Topic{t}
	return &hubLab{snap: s, bus: events.NewBus(events.BusOptions{})}
}

func (l *hubLab) Snapshot() events.Snapshot {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.snap.Clone()
}

func (l *hubLab) Bus() *events.Bus { return l.bus }

// publish publishes an append of one record to demo-0 on broker 1.
func (l *hubLab) publish(offset int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.bus.Publish(events.Event{Kind: events.KindAppend, Broker: 1, Topic: "demo",
		Offsets: &events.Offsets{Base: offset, Last: offset, LEO: offset + 1},
		Records: []events.Record{{Offset: offset, Value: "value-" + strconv.FormatInt(offset, 10)}}})
	l.snap.Apply(e)
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// BenchmarkHub100Clients runs the websocket hub (/ws of the real web
// server on loopback) with 100 clients that read everything, plus one
// stalled client that never reads. Each iteration publishes 1000 append
// events and waits until every reading client has them. It reports
// events/s delivered to each client, bytes-per-client (heap in use with the
// 100 clients connected, over 100) and stalled-growth-bytes: how much the
// heap grew while the stalled client fell ever further behind (bounded by
// the subscription queue and one snapshot, however long it runs).
func BenchmarkHub100Clients(b *testing.B) {
	lab := newHubLab()
	srv, err := web.New(web.Options{Lab: lab, Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	hs := &http.Server{Handler: srv.Handler()}
	go hs.Serve(ln)
	defer func() { hs.Close(); srv.Close() }()
	url := "ws://" + ln.Addr().String() + "/ws"

	base := heapInUse()
	const clients = 100
	var (
		mu      sync.Mutex
		cond    = sync.NewCond(&mu)
		lastSeq = make([]uint64, clients)
	)
	conns := make([]*websocket.Conn, 0, clients+1)
	var wg sync.WaitGroup
	for i := range clients {
		c, _, err := websocket.DefaultDialer.Dial(url, nil)
		if err != nil {
			b.Fatal(err)
		}
		conns = append(conns, c)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				_, data, err := c.ReadMessage()
				if err != nil {
					return
				}
				var m events.Message
				if json.Unmarshal(data, &m) != nil {
					continue
				}
				var seq uint64
				if m.Snapshot != nil {
					seq = m.Snapshot.Seq
				}
				if n := len(m.Events); n > 0 {
					seq = m.Events[n-1].Seq
				}
				mu.Lock()
				lastSeq[i] = max(lastSeq[i], seq)
				cond.Broadcast()
				mu.Unlock()
			}
		}()
	}
	waitAll := func(seq uint64) {
		mu.Lock()
		defer mu.Unlock()
		for slices.Min(lastSeq) < seq {
			cond.Wait()
		}
	}
	waitAll(0)
	perClient := float64(heapInUse()-base) / clients
	// Fill the bus's history ring first, so its growth is not counted below.
	var offset int64 = events.RecordWindow
	for range 5000 {
		lab.publish(offset)
		offset++
	}
	waitAll(lab.bus.LastSeq())

	// The stalled client: connects, then never reads a byte.
	stalled, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		b.Fatal(err)
	}
	conns = append(conns, stalled)
	beforeStall := heapInUse()

	b.ResetTimer()
	start := time.Now()
	for range b.N {
		for range 1000 {
			lab.publish(offset)
			offset++
		}
		waitAll(lab.bus.LastSeq())
	}
	elapsed := time.Since(start)
	b.StopTimer()
	growth := float64(heapInUse()) - float64(beforeStall)

	b.ReportMetric(float64(b.N*1000)/elapsed.Seconds(), "events/s")
	b.ReportMetric(perClient, "bytes-per-client")
	b.ReportMetric(max(0, growth), "stalled-growth-bytes")
	b.ReportMetric(0, "ns/op")
	for _, c := range conns {
		c.Close()
	}
	wg.Wait()
}

// BenchmarkFirstLiveFrame measures how long after navigation the overview's
// panel first draws the live state: each iteration opens / afresh (the
// panel's files revalidated from the browser's cache, as on a second
// visit) and reads the time of the panel's first render against the
// page's navigation start. It reports the median and the slowest, in ms.
//
//	go test -run '^$' -bench FirstLiveFrame -benchtime 10x ./server/
func BenchmarkFirstLiveFrame(b *testing.B) {
	lab := startBrowserLab(b, false)
	lab.open("/", true) // the first visit fills the cache
	var ms []float64
	for range b.N {
		lab.open("/", true)
		lab.poll(`window.tidemarkRenders !== undefined`, "the render log")
		at := eval[float64](lab, `(() => { const r = window.tidemarkRenders(); return r.length ? r[0][1] - performance.timeOrigin : -1; })()`)
		if at < 0 {
			b.Fatal("the panel is live but has not rendered")
		}
		ms = append(ms, at)
		if testing.Verbose() {
			b.Log(eval[string](lab, `JSON.stringify([performance.getEntriesByType("navigation")[0].domContentLoadedEventEnd|0].concat(performance.getEntriesByType("resource").map(e => [e.name.split("/").pop(), e.startTime|0, e.responseEnd|0])))`))
		}
	}
	slices.Sort(ms)
	b.ReportMetric(ms[len(ms)/2], "median-ms")
	b.ReportMetric(ms[len(ms)-1], "max-ms")
	b.ReportMetric(0, "ns/op")
}
