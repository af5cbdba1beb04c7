package class

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"tidemark/server/cluster"
	"tidemark/server/labs"
)

// BenchmarkClassSeats is the capacity figure: 60 seats, each with a
// 3-broker cluster (topic demo: 3 partitions, RF 3, min.insync.replicas=2,
// clock running), all awake; then all hibernated. In the same run it
// reports the process RSS per awake seat, the idle CPU (percent of one
// core, over idleFor) awake and hibernated, and the wake latency of each
// seat (p50, p99). One op is the whole cycle; -benchtime 1x.
func BenchmarkClassSeats(b *testing.B) {
	const seats = 60
	idleFor := 5 * time.Second
	if v := os.Getenv("CLASS_BENCH_IDLE"); v != "" {
		idleFor, _ = time.ParseDuration(v)
	}
	b.ReportMetric(0, "ns/op")
	for range b.N {
		dir := b.TempDir()
		clk := &clock{now: time.Unix(1000, 0)}
		runs, err := labs.New(labs.Options{Root: filepath.Join(dir, "lessons"), SweepInterval: -1, Logger: quiet()})
		if err != nil {
			b.Fatal(err)
		}
		c, _, err := Open(Options{Dir: filepath.Join(dir, "class"), Name: "bench", Seats: seats,
			Cluster: cluster.Options{Brokers: 3, MessageEvents: true, Logger: quiet()},
			Setup: func(cl *cluster.Cluster) error {
				if _, ok := cl.Controller().Topic("demo"); ok {
					return nil
				}
				_, err := cl.CreateTopic("demo", 3, 3, map[string]string{"min.insync.replicas": "2"})
				return err
			},
			NewHandler: func(env Env) (http.Handler, io.Closer, error) {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), nopCloser{}, nil
			},
			Runs: runs, MaxAwake: seats, IdleAfter: time.Minute, SweepInterval: -1, Now: clk.Now, Logger: quiet()})
		if err != nil {
			b.Fatal(err)
		}
		debug.FreeOSMemory()
		rss0 := rssBytes(b)
		wake := func() []time.Duration {
			var lat []time.Duration
			for s := 1; s <= seats; s++ {
				start := time.Now()
				if err := c.Serve(s, httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil)); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			slices.Sort(lat)
			return lat
		}
		first := wake() // creates every seat's cluster and topic
		time.Sleep(2 * time.Second)
		debug.FreeOSMemory()
		rssAwake := rssBytes(b)
		cpuAwake := idleCPU(idleFor)
		clk.Add(time.Minute)
		if got := len(c.Sweep()); got != seats {
			b.Fatalf("Sweep hibernated %d of %d seats", got, seats)
		}
		debug.FreeOSMemory()
		rssAsleep := rssBytes(b)
		cpuAsleep := idleCPU(idleFor)
		again := wake() // wakes every seat from its directory
		c.Close()
		runs.Close()

		b.ReportMetric(float64(rssAwake-rss0)/seats/(1<<20), "MiB-rss/awake-seat")
		b.ReportMetric(float64(rssAwake)/(1<<20), "MiB-rss-awake")
		b.ReportMetric(float64(rssAsleep)/(1<<20), "MiB-rss-asleep")
		b.ReportMetric(cpuAwake, "%cpu-awake")
		b.ReportMetric(cpuAsleep, "%cpu-asleep")
		b.ReportMetric(float64(first[len(first)/2].Microseconds())/1000, "ms-first-start-p50")
		b.ReportMetric(float64(again[len(again)/2].Microseconds())/1000, "ms-wake-p50")
		b.ReportMetric(float64(again[len(again)*99/100].Microseconds())/1000, "ms-wake-p99")
		if testing.Verbose() {
			fmt.Fprintf(os.Stderr, "wake latencies: %v\n", again)
		}
	}
}

// idleCPU returns the process's CPU time over d as a percentage of one core.
func idleCPU(d time.Duration) float64 {
	var r0, r1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
	start := time.Now()
	time.Sleep(d)
	syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
	used := time.Duration(r1.Utime.Nano()+r1.Stime.Nano()-r0.Utime.Nano()-r0.Stime.Nano()) * time.Nanosecond
	return 100 * float64(used) / float64(time.Since(start))
}

// rssBytes reads the process's resident set size from /proc/self/status.
func rssBytes(b *testing.B) int64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Skip("no /proc/self/status")
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
