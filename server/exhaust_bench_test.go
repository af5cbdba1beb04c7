package server

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"tidemark/events"
	"tidemark/internal/fds"
	"tidemark/server/cluster"
	"tidemark/server/web"
)

var (
	exhaustFor        = flag.Duration("exhaust-for", 20*time.Second, "how long BenchmarkExhaust floods")
	exhaustHTTP       = flag.Int("exhaust-http", 5000, "half-open HTTP connections with a bad Host BenchmarkExhaust's attacker keeps open (reopening those closed)")
	exhaustKafka      = flag.Int("exhaust-kafka", 5000, "idle Kafka connections BenchmarkExhaust's attacker keeps open, spread over the brokers")
	exhaustPartitions = flag.Int("exhaust-partitions", 300, "partitions (RF 3, segment.bytes 1024) BenchmarkExhaust floods")
	exhaustNofile     = flag.Uint64("exhaust-nofile", 0, "RLIMIT_NOFILE to run BenchmarkExhaust under (0: the process's)")
)

// BenchmarkExhaust is the soak, scaled to run in under a minute on
// loopback: at once, -exhaust-http half-open HTTP connections with a bad
// Host (each announcing a 1,000-byte body and sending one byte), -exhaust-kafka
// idle Kafka connections, and a flood of acks=all produces to
// -exhaust-partitions partitions of RF 3 with 1 KiB segments, for
// -exhaust-for; meanwhile a prober GETs /api/v1/cluster/fencing-rule (a small answer through every middleware; /api/v1/cluster of 1,000 partitions is a large one) every 50 ms. It
// reports whether any broker halted, the prober's answer times (p99, max;
// any HTTP answer counts, an error too; none within 1 s is a miss), the
// peak of open descriptors against the limit, and whether every
// acknowledged record is read back afterwards.
//
//	go test -run '^$' -bench Exhaust -benchtime 1x ./server
//	go test -run '^$' -bench Exhaust -benchtime 1x ./server -args -exhaust-nofile 4096
func BenchmarkExhaust(b *testing.B) {
	if *exhaustNofile > 0 {
		var old syscall.Rlimit
		if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
			b.Fatal(err)
		}
		lim := syscall.Rlimit{Cur: *exhaustNofile, Max: old.Max}
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			b.Fatal(err)
		}
		fds.Refresh()
		defer func() { syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old); fds.Refresh() }()
	}
	for range b.N {
		exhaust(b)
	}
}

// startAttacker runs TestExhaustAttacker in a child process (the test
// binary again): kind "http" keeps n half-open HTTP connections with a bad
// Host open to addrs[0], reopening each the server closes; "kafka" opens n
// idle connections spread over addrs, reopening those closed. The func it
// returns stops the child and returns how many connections it opened.
func startAttacker(b *testing.B, kind string, n int, addrs ...string) func() string {
	cmd := exec.Command(os.Args[0], "-test.run=^TestExhaustAttacker$")
	cmd.Env = append(os.Environ(), "TIDEMARK_ATTACK="+kind, "TIDEMARK_ATTACK_N="+strconv.Itoa(n), "TIDEMARK_ATTACK_ADDRS="+strings.Join(addrs, ","))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	var out strings.Builder
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	return func() string {
		stdin.Close()
		cmd.Wait()
		if m := regexp.MustCompile(`opened (\d+)`).FindStringSubmatch(out.String()); m != nil {
			return m[1]
		}
		return "? (" + strings.TrimSpace(out.String()) + ")"
	}
}

// TestExhaustAttacker is BenchmarkExhaust's attacker when run as its child
// (TIDEMARK_ATTACK set); otherwise it does nothing. It attacks until its
// stdin closes, then prints how many connections it opened.
func TestExhaustAttacker(t *testing.T) {
	kind := os.Getenv("TIDEMARK_ATTACK")
	if kind == "" {
		t.Skip("BenchmarkExhaust's child only")
	}
	// The parent may have lowered its limit (-exhaust-nofile): the
	// attacker takes all it may.
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) == nil {
		rl.Cur = rl.Max
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl)
	}
	n, _ := strconv.Atoi(os.Getenv("TIDEMARK_ATTACK_N"))
	addrs := strings.Split(os.Getenv("TIDEMARK_ATTACK_ADDRS"), ",")
	done := make(chan struct{})
	go func() { io.Copy(io.Discard, os.Stdin); close(done) }()
	// The Kafka attacker is another client: from 127.0.0.2, so that the
	// listeners' max.connections.per.ip, which it fills, is not the
	// producer's too (all of 127.0.0.0/8 is loopback). The HTTP attacker
	// dials from 127.0.0.1; the prober, another machine, from 127.0.0.3.
	dialer := net.Dialer{Timeout: time.Second}
	if kind == "kafka" {
		dialer.LocalAddr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}
	}
	var opened int64
	var held []net.Conn
	for i := 0; ; i++ {
		select {
		case <-done:
			for _, c := range held {
				c.Close()
			}
			fmt.Printf("opened %d\n", opened)
			return
		default:
		}
		c, err := dialer.Dial("tcp", addrs[i%len(addrs)])
		if err != nil {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		opened++
		if kind == "http" {
			io.WriteString(c, "POST /api/v1/topics HTTP/1.1\r\nHost: evil.example\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
		}
		held = append(held, c)
		// Paced at about 2,000 connections a second: the attack is what
		// the connections hold, not a connect flood (one at full speed
		// fills the kernel's accept queue, and every client's connect
		// waits for a SYN retransmit, lab or not).
		if opened%2 == 0 {
			time.Sleep(time.Millisecond)
		}
		if len(held) >= n {
			// Keep n: let the oldest go (the server has closed most of
			// them already), and pace the loop.
			held[0].Close()
			held = held[1:]
		}
	}
}

func exhaust(b *testing.B) {
	cl, err := cluster.Open(cluster.Options{DataDir: b.TempDir(), Brokers: 3, MessageEvents: true, Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
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
	limited := web.LimitConns(srv, ln, web.DefaultConnLimits(fds.Limit()), quietLogger())
	go srv.Serve(limited)
	defer srv.Close()
	addr := ln.Addr().String()

	parts := *exhaustPartitions
	if _, err := cl.CreateTopic("flood", int32(parts), 3, map[string]string{"segment.bytes": "1024", "min.insync.replicas": "2"}); err != nil {
		b.Fatal(err)
	}
	var brokers []string
	for _, br := range cl.Snapshot().Brokers {
		brokers = append(brokers, br.Listener)
	}

	ctx, cancel := context.WithTimeout(context.Background(), *exhaustFor)
	defer cancel()
	var wg sync.WaitGroup
	var peakFDs atomic.Int64
	wg.Go(func() { // the descriptors open, every 50 ms
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for ctx.Err() == nil {
			if n, _ := fds.InUse(); int64(n) > peakFDs.Load() {
				peakFDs.Store(int64(n))
			}
			<-tick.C
		}
	})

	// The attackers run in processes of their own, with their own
	// descriptors: in this one, the client ends of their connections would
	// count against the server's limit.
	httpAttack := startAttacker(b, "http", *exhaustHTTP, addr)
	kafkaAttack := startAttacker(b, "kafka", *exhaustKafka, brokers...)

	// The flood: acks=all to every partition, 1 KiB segments rolling.
	acked := make([]atomic.Int64, parts) // records acknowledged per partition
	var produceErrs atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		kc, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("flood"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.MaxBufferedRecords(4096))
		if err != nil {
			b.Error(err)
			return
		}
		defer kc.Close()
		val := make([]byte, 200)
		for i := 0; ctx.Err() == nil; i++ {
			p := int32(i % parts)
			kc.Produce(ctx, &kgo.Record{Partition: p, Value: val}, func(r *kgo.Record, err error) {
				if err != nil {
					produceErrs.Add(1)
					return
				}
				acked[r.Partition].Add(1)
			})
		}
		flushCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		kc.Flush(flushCtx)
	}()

	// The prober: another machine, so from another address than the HTTP
	// attacker's (127.0.0.1), a new connection each time.
	var answers []time.Duration
	misses := 0
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 3)}}
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true, DialContext: dialer.DialContext}}
	var slow []string // when (since the flood began) the misses and answers over 500 ms came
	began := time.Now()
	tick := time.NewTicker(50 * time.Millisecond)
	for ctx.Err() == nil {
		<-tick.C
		t0 := time.Now()
		resp, err := client.Get("http://" + addr + "/api/v1/cluster/fencing-rule")
		if err != nil {
			misses++
			slow = append(slow, fmt.Sprintf("%.1fs: %v", t0.Sub(began).Seconds(), err))
			continue
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		d := time.Since(t0)
		answers = append(answers, d)
		if d > 500*time.Millisecond {
			slow = append(slow, fmt.Sprintf("%.1fs: %d ms", t0.Sub(began).Seconds(), d.Milliseconds()))
		}
	}
	tick.Stop()
	wg.Wait()
	httpOpened, kafkaOpened := httpAttack(), kafkaAttack()

	halted := 0
	for _, br := range cl.Snapshot().Brokers {
		if br.State != events.BrokerUp {
			halted++
		}
	}
	// Every acknowledged record is read back.
	var want int64
	for i := range acked {
		want += acked[i].Load()
	}
	var read int64
	for p := range parts {
		for off := int64(0); ; {
			recs, hw, err := cl.Consume("flood", int32(p), off, 1000)
			if err != nil || len(recs) == 0 {
				if off < acked[p].Load() || err != nil {
					b.Errorf("partition %d: read %d of %d acknowledged (hw %d): %v", p, off, acked[p].Load(), hw, err)
				}
				break
			}
			read += int64(len(recs))
			off = recs[len(recs)-1].Offset + 1
		}
	}
	slices.Sort(answers)
	q := func(f float64) float64 {
		if len(answers) == 0 {
			return -1
		}
		return float64(answers[min(int(f*float64(len(answers))), len(answers)-1)]) / float64(time.Millisecond)
	}
	open, limit := fds.InUse()
	b.ReportMetric(float64(halted), "halted-brokers")
	b.ReportMetric(q(0.5), "http-p50-ms")
	b.ReportMetric(q(0.99), "http-p99-ms")
	b.ReportMetric(q(1), "http-max-ms")
	b.ReportMetric(float64(misses), "http-misses")
	b.ReportMetric(float64(peakFDs.Load()), "peak-fds")
	b.ReportMetric(float64(want), "acked")
	b.ReportMetric(float64(read), "read")
	st := limited.Stats()
	b.Logf("limit %d descriptors (open %d at the end, peak %d); attackers: %s half-open HTTP connections with a bad Host opened, %s idle Kafka connections opened; web: %d closed over the per-address rate, %d evicted, %d refused; %d records acknowledged, %d read back, %d produce errors; prober %d answers, %d misses",
		limit, open, peakFDs.Load(), httpOpened, kafkaOpened, st.RateLimited, st.Evicted, st.Refused, want, read, produceErrs.Load(), len(answers), misses)
	if len(slow) > 0 {
		b.Logf("prober's misses and answers over 500 ms: %s", strings.Join(slow, "; "))
	}
	if halted > 0 {
		b.Errorf("%d brokers halted", halted)
	}
	if read < want {
		b.Errorf("%d acknowledged records, %d read back", want, read)
	}
}
