package cluster

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
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
var idleViewer = flag.Bool("idle-viewer", false, "BenchmarkIdleAfterTopicChurn: run the lab as the server does, with message events and one subscriber draining the bus (a /ws viewer)")

// fetchRequests counts the Fetch requests the lab's brokers answered.
var fetchRequests atomic.Int64

// usage is the process's CPU time (user plus system) and context switches
// (voluntary and not: each is a thread that slept and was woken, or was
// preempted) so far, from getrusage, and the Fetch requests answered.
func usage(b *testing.B) (cpu time.Duration, switches, fetches int64) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), int64(ru.Nvcsw + ru.Nivcsw), fetchRequests.Load()
}

// idleCPU waits a second for the lab to settle, then measures the process
// over -idle-for: the CPU it used in percent of one core, and its context
// switches per second (how often the idle lab wakes up). With profile set
// it writes a CPU profile of that window there, with memProfile allocation
// profiles of its start and end.
func idleCPU(b *testing.B, profile, memProfile string) (cpuPercent, switchesPerSec, fetchesPerSec float64) {
	time.Sleep(time.Second)
	if memProfile != "" {
		runtime.MemProfileRate = 512 // every few allocations, not one per 512 KiB
		writeAllocs(b, memProfile+".base")
		defer writeAllocs(b, memProfile)
	}
	if profile != "" {
		f, err := os.Create(profile)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			b.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	cpu0, sw0, f0 := usage(b)
	wall0 := time.Now()
	time.Sleep(*idleFor)
	cpu1, sw1, f1 := usage(b)
	wall := time.Since(wall0).Seconds()
	return 100 * (cpu1 - cpu0).Seconds() / wall, float64(sw1-sw0) / wall, float64(f1-f0) / wall
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
// fetches/s the Fetch requests its brokers answer per second.
// churn-s is how long the creating and deleting took; the -with-3000-replicas
// metrics are the same once a 1,000-partition topic (1,000 replicas per
// broker) is added. -idle-viewer runs the lab as the server does, with
// message events and a subscriber.
func BenchmarkIdleAfterTopicChurn(b *testing.B) {
	for i := 0; i < b.N; i++ {
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
		cpu, switches, fetches := idleCPU(b, "", "")
		b.ReportMetric(cpu, "cpu%-first-window")
		b.ReportMetric(switches, "switches/s-first-window")
		b.ReportMetric(fetches, "fetches/s-first-window")
		cpu, switches, fetches = idleCPU(b, *idleProfile, *idleMemProfile)
		b.ReportMetric(cpu, "cpu%")
		b.ReportMetric(switches, "switches/s")
		b.ReportMetric(fetches, "fetches/s")
		b.ReportMetric(churn.Seconds(), "churn-s")
		if _, err := c.CreateTopic("wide", 1000, 3, nil); err != nil {
			b.Fatal(err)
		}
		cpu, switches, fetches = idleCPU(b, suffix(*idleProfile, ".wide"), suffix(*idleMemProfile, ".wide"))
		b.ReportMetric(cpu, "cpu%-with-3000-replicas")
		b.ReportMetric(switches, "switches/s-with-3000-replicas")
		b.ReportMetric(fetches, "fetches/s-with-3000-replicas")
		c.Close()
	}
}
