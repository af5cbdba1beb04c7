package server

import (
	"bufio"
	"context"
	"flag"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/gorilla/websocket"
	"github.com/twmb/franz-go/pkg/kgo"

	"tidemark/server/cluster"
	"tidemark/server/web"
)

var (
	soakFor     = flag.Duration("soak-for", 20*time.Second, "how long BenchmarkSoak produces")
	soakRate    = flag.Int("soak-rate", 3000, "records a second BenchmarkSoak produces")
	soakViewers = flag.Int("soak-viewers", 20, "websocket viewers BenchmarkSoak keeps open")
)

// BenchmarkSoak is the lab under steady load, as the soak was: a
// running 3-broker lab with demo (3 partitions, RF 3), a franz-go producer
// at -soak-rate records a second (acks=all, 100-byte values, one produce
// every 10 ms), and -soak-viewers websocket viewers of /ws reading every
// message, for -soak-for. Every second it samples the process's RSS and
// open descriptors; it reports both at the end and their slopes (least
// squares over the second half, once warm) per minute — ≈ 0 when nothing
// leaks — and the records a second achieved.
//
//	go test -run '^$' -bench Soak -benchtime 1x ./server -args -soak-for 5m
func BenchmarkSoak(b *testing.B) {
	for range b.N {
		soak(b)
	}
}

func soak(b *testing.B) {
	cl, err := cluster.Open(cluster.Options{DataDir: b.TempDir(), Brokers: 3, MessageEvents: true, Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	if err := ensureDemo(cl, 3); err != nil {
		b.Fatal(err)
	}
	ws, err := web.New(web.Options{Lab: lab{cl}, Static: fstest.MapFS{"app.css": {Data: []byte("body{}")}}, Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := web.NewHTTPServer(ws.Handler(), context.Background())
	go srv.Serve(ln)
	defer srv.Close()

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	origin := "http://" + ln.Addr().String()
	for range *soakViewers {
		conn, _, err := websocket.DefaultDialer.Dial("ws://"+ln.Addr().String()+"/ws", http.Header{"Origin": {origin}})
		if err != nil {
			b.Fatal(err)
		}
		wg.Add(1)
		go func() { // a viewer reads every message, as the panel does
			defer wg.Done()
			defer conn.Close()
			go func() { <-ctx.Done(); conn.Close() }()
			for {
				if _, _, err := conn.NextReader(); err != nil {
					return
				}
			}
		}()
	}
	var seeds []string
	for _, id := range cl.BrokerIDs() {
		seeds = append(seeds, cl.Broker(id).Addr())
	}
	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic("demo"), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		b.Fatal(err)
	}
	defer prod.Close()

	type sample struct{ at, rss, fds float64 }
	var samples []sample
	take := func(start time.Time) {
		samples = append(samples, sample{time.Since(start).Minutes(), float64(rssBytes(b)) / (1 << 20), float64(openFDs(b))})
	}
	value := []byte(strings.Repeat("v", 100))
	perTick := max(*soakRate/100, 1)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	start := time.Now()
	next := start.Add(time.Second)
	var produced, failed int
	var pmu sync.Mutex
	b.ResetTimer()
	for time.Since(start) < *soakFor {
		<-tick.C
		for range perTick {
			prod.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
				pmu.Lock()
				defer pmu.Unlock()
				if err != nil {
					failed++
				} else {
					produced++
				}
			})
		}
		if time.Now().After(next) {
			take(start)
			next = next.Add(time.Second)
		}
	}
	if err := prod.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	if failed > 0 {
		b.Errorf("%d of %d records failed", failed, failed+produced)
	}
	half := samples[len(samples)/2:]
	last := samples[len(samples)-1]
	b.ReportMetric(float64(produced)/elapsed.Seconds(), "rec/s")
	b.ReportMetric(last.rss, "rss-MB")
	b.ReportMetric(slope(half, func(s sample) float64 { return s.at }, func(s sample) float64 { return s.rss }), "rss-MB/min")
	b.ReportMetric(last.fds, "fds")
	b.ReportMetric(slope(half, func(s sample) float64 { return s.at }, func(s sample) float64 { return s.fds }), "fds/min")
	b.ReportMetric(0, "ns/op")
}

// slope is the least-squares slope of y over x.
func slope[T any](pts []T, x, y func(T) float64) float64 {
	var n, sx, sy, sxx, sxy float64
	for _, p := range pts {
		n++
		sx += x(p)
		sy += y(p)
		sxx += x(p) * x(p)
		sxy += x(p) * y(p)
	}
	if d := n*sxx - sx*sx; d != 0 {
		return (n*sxy - sx*sy) / d
	}
	return 0
}

// rssBytes is the process's resident set size (VmRSS).
func rssBytes(b *testing.B) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		b.Skip("no /proc: RSS is not measured here")
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// openFDs counts the process's open descriptors.
func openFDs(b *testing.B) int {
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		b.Skip("no /proc: descriptors are not counted here")
	}
	return len(es)
}
