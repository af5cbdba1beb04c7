package cluster

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"tidemark/events"
	"tidemark/server/broker"
)

var idleFor = flag.Duration("idle-for", 5*time.Second, "BenchmarkIdleAfterTopicChurn: how long the idle lab's CPU is measured")
var churnTopics = flag.Int("churn-topics", 1000, "BenchmarkIdleAfterTopicChurn: how many topics are created and deleted")
var idleProfile = flag.String("idle-cpuprofile", "", "BenchmarkIdleAfterTopicChurn: write a CPU profile of the second idle window (the one cpu% measures) to this file, and one of the window with 3,000 replicas to FILE.wide")
var idleMemProfile = flag.String("idle-memprofile", "", "BenchmarkIdleAfterTopicChurn: write allocation profiles taken at the start (FILE.base) and the end (FILE) of the second idle window; read them with go tool pprof -sample_index alloc_space -base FILE.base; FILE.wide(.base) for the window with 3,000 replicas")
var idleTrace = flag.String("idle-trace", "", "BenchmarkIdleAfterTopicChurn: write an execution trace of the second idle window to this file (go tool trace -d=parsed FILE lists each goroutine's wake-up and the thread it ran on)")
var idleViewer = flag.Bool("idle-viewer", false, "BenchmarkIdleAfterTopicChurn: run the lab as the server does, with message events and one subscriber draining the bus (a /ws viewer)")

// fetchRequests counts the Fetch requests the lab's brokers answered.
var fetchRequests atomic.Int64

// usage is what the process has used so far: CPU time (user plus system)
// and context switches (voluntary and not: each is a thread that slept and
// was woken, or was preempted; and the voluntary ones alone, which other
// processes' load does not add to) from getrusage, its minor page faults (pages
// the kernel maps in on first touch, such as heap memory the runtime gave
// back to the system and takes again), and the Fetch requests answered.
type usage struct {
	cpu                                  time.Duration
	switches, voluntary, faults, fetches int64
}

func usageNow(b *testing.B) usage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return usage{time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), int64(ru.Nvcsw + ru.Nivcsw), int64(ru.Nvcsw), int64(ru.Minflt), fetchRequests.Load()}
}

// idleWindow is one measured window: CPU in percent of one core, and context
// switches (all, and the voluntary ones: the threads' sleeps, one per
// wake-up), minor page faults and Fetch requests per second.
type idleWindow struct{ cpuPercent, switches, voluntary, faults, fetches float64 }

// report reports w's metrics with suffix appended to their names.
func (w idleWindow) report(b *testing.B, suffix string) {
	b.ReportMetric(w.cpuPercent, "cpu%"+suffix)
	b.ReportMetric(w.switches, "switches/s"+suffix)
	b.ReportMetric(w.voluntary, "sleeps/s"+suffix)
	b.ReportMetric(w.faults, "faults/s"+suffix)
	b.ReportMetric(w.fetches, "fetches/s"+suffix)
}

// idleCPU waits a second for the lab to settle, then measures the process
// over -idle-for: the CPU it used in percent of one core, and its context
// switches per second (how often the idle lab wakes up). With profile set
// it writes a CPU profile of that window there, with memProfile allocation
// profiles of its start and end.
func idleCPU(b *testing.B, profile, memProfile string) idleWindow {
	return idleCPUTraced(b, profile, memProfile, "")
}

// idleCPUTraced is idleCPU that also writes an execution trace of the
// window to tracePath (none when empty).
func idleCPUTraced(b *testing.B, profile, memProfile, tracePath string) idleWindow {
	time.Sleep(time.Second)
	if memProfile != "" {
		runtime.MemProfileRate = 512 // every few allocations, not one per 512 KiB
		writeAllocs(b, memProfile+".base")
		defer writeAllocs(b, memProfile)
	}
	if profile != "" {
		defer record(b, profile, pprof.StartCPUProfile, pprof.StopCPUProfile)()
	}
	if tracePath != "" {
		defer record(b, tracePath, trace.Start, trace.Stop)()
	}
	u0, wall0 := usageNow(b), time.Now()
	time.Sleep(*idleFor)
	u1, wall := usageNow(b), time.Since(wall0).Seconds()
	return idleWindow{100 * (u1.cpu - u0.cpu).Seconds() / wall, float64(u1.switches-u0.switches) / wall,
		float64(u1.voluntary-u0.voluntary) / wall, float64(u1.faults-u0.faults) / wall, float64(u1.fetches-u0.fetches) / wall}
}

// record creates path and has start write to it (a CPU profile, an
// execution trace) until the returned function stops it.
func record(b *testing.B, path string, start func(io.Writer) error, stop func()) func() {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := start(f); err != nil {
		f.Close()
		b.Fatal(err)
	}
	return func() {
		stop()
		f.Close()
	}
}

// writeAllocs writes the allocation profile so far to path. It collects
// first: the profile reports allocations as of the last collection.
func writeAllocs(b *testing.B, path string) {
	runtime.GC()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
}

// wakeCost measures what one idle wake-up costs on this machine now: a
// goroutine woken by a timer 150 times a second for two seconds, each time
// handing a value to a second goroutine and back, in microseconds of CPU per
// wake-up. It runs before the lab opens, so nothing else is in the process.
// An idle lab's CPU is mostly its wake-ups times this cost, and the cost is
// the machine's: on this VM ~130-170 µs when quiet, far less when other work
// keeps its cores busy.
func wakeCost(b *testing.B) (usPerWake float64) {
	const hz, window = 150, 2 * time.Second
	in, out := make(chan struct{}), make(chan struct{})
	defer close(in)
	go func() {
		for range in {
			out <- struct{}{}
		}
	}()
	t := time.NewTicker(time.Second / hz)
	defer t.Stop()
	u0, wakes := usageNow(b), 0
	for start := time.Now(); time.Since(start) < window; wakes++ {
		<-t.C
		in <- struct{}{}
		<-out
	}
	return float64((usageNow(b).cpu - u0.cpu).Microseconds()) / float64(wakes)
}

// suffix is path with s appended; empty for no path.
func suffix(path, s string) string {
	if path == "" {
		return ""
	}
	return path + s
}

// drainBus stands in for one /ws viewer: it takes every event the bus
// publishes until stop is closed.
func drainBus(bus *events.Bus, stop <-chan struct{}) {
	sub := bus.Subscribe()
	defer sub.Close()
	for {
		select {
		case <-stop:
			return
		case <-sub.Ready():
			sub.Drain()
		}
	}
}

// BenchmarkIdleAfterTopicChurn creates and deletes 1,000 topics (one
// partition, replication factor 3) on a running 3-broker lab that also
// holds the demo topic, then measures the process over two windows of
// -idle-for of idle running (the "-first-window" metrics are the first,
// right after the churn): cpu% is its CPU time in percent of one core (target ≤ 2),
// switches/s its context switches per second (the idle lab's wake-ups),
// sleeps/s the voluntary ones alone (a thread going to sleep; on a loaded
// machine switches/s also counts preemptions by other processes),
// fetches/s the Fetch requests its brokers answer per second.
// churn-s is how long the creating and deleting took; the -with-3000-replicas
// metrics are the same once a 1,000-partition topic (1,000 replicas per
// broker) is added. faults/s are minor page faults per second. wake-µs is
// the machine's CPU cost of one idle wake-up, measured first (wakeCost):
// cpu% moves with it. -idle-viewer runs the lab as the server does, with
// message events and a subscriber.
func BenchmarkIdleAfterTopicChurn(b *testing.B) {
	for i := 0; i < b.N; i++ {
		b.ReportMetric(wakeCost(b), "wake-µs")
		c, err := Open(Options{DataDir: b.TempDir(), Brokers: 3, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			MessageEvents: *idleViewer, Broker: broker.Config{OnRequest: func(_ int32, key int16, _ time.Duration) {
				if key == 1 {
					fetchRequests.Add(1)
				}
			}}})
		if err != nil {
			b.Fatal(err)
		}
		if *idleViewer {
			stop := make(chan struct{})
			defer close(stop)
			go drainBus(c.Bus(), stop)
		}
		if _, err := c.CreateTopic("demo", 3, 3, map[string]string{"min.insync.replicas": "2"}); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		for j := range *churnTopics {
			if _, err := c.CreateTopic(fmt.Sprintf("churn%d", j), 1, 3, nil); err != nil {
				b.Fatal(err)
			}
		}
		for j := range *churnTopics {
			if err := c.DeleteTopic(fmt.Sprintf("churn%d", j)); err != nil {
				b.Fatal(err)
			}
		}
		churn := time.Since(start)
		b.ReportMetric(0, "ns/op")
		// The first window still holds the deletions' leftovers (files
		// removed, the controller's store compacted); the second is the
		// idle lab the target is about. Both are reported.
		idleCPU(b, "", "").report(b, "-first-window")
		idleCPUTraced(b, *idleProfile, *idleMemProfile, *idleTrace).report(b, "")
		b.ReportMetric(churn.Seconds(), "churn-s")
		if _, err := c.CreateTopic("wide", 1000, 3, nil); err != nil {
			b.Fatal(err)
		}
		idleCPUTraced(b, suffix(*idleProfile, ".wide"), suffix(*idleMemProfile, ".wide"), suffix(*idleTrace, ".wide")).report(b, "-with-3000-replicas")
		c.Close()
	}
}

// TestControllerWakesOnTheGrid: between session expiries the controller's
// loop wakes on the whole second of lab time, where the brokers' ticks and
// heartbeats fall, not a second after it last woke; a session expiring
// sooner is checked at its expiry.
func TestControllerWakesOnTheGrid(t *testing.T) {
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		now, expiry, want time.Duration // from t0; expiry 0: none
	}{
		{300 * time.Millisecond, 0, 700 * time.Millisecond},
		{300 * time.Millisecond, 2300 * time.Millisecond, 700 * time.Millisecond},
		{300 * time.Millisecond, 500 * time.Millisecond, 200 * time.Millisecond},
		{time.Second, 0, time.Second}, // on the grid: a whole interval
	} {
		var expiry time.Time
		if c.expiry > 0 {
			expiry = t0.Add(c.expiry)
		}
		if got := controllerWait(t0.Add(c.now), time.Second, expiry); got != c.want {
			t.Errorf("at t0+%v with expiry t0+%v: wait %v, want %v", c.now, c.expiry, got, c.want)
		}
	}
}
