package cluster

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/pprof"
	"syscall"
	"testing"
	"time"
)

var idleFor = flag.Duration("idle-for", 5*time.Second, "BenchmarkIdleAfterTopicChurn: how long the idle lab's CPU is measured")
var churnTopics = flag.Int("churn-topics", 1000, "BenchmarkIdleAfterTopicChurn: how many topics are created and deleted")
var idleProfile = flag.String("idle-cpuprofile", "", "BenchmarkIdleAfterTopicChurn: write a CPU profile of the first idle window (after the churn) to this file")

// usage is the process's CPU time (user plus system) and context switches
// (voluntary and not: each is a thread that slept and was woken, or was
// preempted) so far, from getrusage.
func usage(b *testing.B) (cpu time.Duration, switches int64) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), int64(ru.Nvcsw + ru.Nivcsw)
}

// idleCPU waits a second for the lab to settle, then measures the process
// over -idle-for: the CPU it used in percent of one core, and its context
// switches per second (how often the idle lab wakes up). With profile set
// it writes a CPU profile of that window there.
func idleCPU(b *testing.B, profile string) (cpuPercent, switchesPerSec float64) {
	time.Sleep(time.Second)
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
	cpu0, sw0 := usage(b)
	wall0 := time.Now()
	time.Sleep(*idleFor)
	cpu1, sw1 := usage(b)
	wall := time.Since(wall0).Seconds()
	return 100 * (cpu1 - cpu0).Seconds() / wall, float64(sw1-sw0) / wall
}

// BenchmarkIdleAfterTopicChurn creates and deletes 1,000 topics (one
// partition, replication factor 3) on a running 3-broker lab that also
// holds the demo topic, then measures the process over two windows of
// -idle-for of idle running (the "-first-window" metrics are the first,
// right after the churn): cpu% is its CPU time in percent of one core (target ≤ 2),
// switches/s its context switches per second (the idle lab's wake-ups).
// churn-s is how long the creating and deleting took; the -with-3000-replicas
// metrics are the same once a 1,000-partition topic (1,000 replicas per
// broker) is added.
func BenchmarkIdleAfterTopicChurn(b *testing.B) {
	for i := 0; i < b.N; i++ {
		c, err := Open(Options{DataDir: b.TempDir(), Brokers: 3, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			b.Fatal(err)
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
		cpu, switches := idleCPU(b, *idleProfile)
		b.ReportMetric(cpu, "cpu%-first-window")
		b.ReportMetric(switches, "switches/s-first-window")
		cpu, switches = idleCPU(b, "")
		b.ReportMetric(cpu, "cpu%")
		b.ReportMetric(switches, "switches/s")
		b.ReportMetric(churn.Seconds(), "churn-s")
		if _, err := c.CreateTopic("wide", 1000, 3, nil); err != nil {
			b.Fatal(err)
		}
		cpu, switches = idleCPU(b, "")
		b.ReportMetric(cpu, "cpu%-with-3000-replicas")
		b.ReportMetric(switches, "switches/s-with-3000-replicas")
		c.Close()
	}
}
