package cluster

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"syscall"
	"testing"
	"time"
)

var idleFor = flag.Duration("idle-for", 5*time.Second, "BenchmarkIdleAfterTopicChurn: how long the idle lab's CPU is measured")
var churnTopics = flag.Int("churn-topics", 1000, "BenchmarkIdleAfterTopicChurn: how many topics are created and deleted")

// cpuTime is the process's user plus system CPU time so far (getrusage).
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// idleCPU waits a second for the lab to settle, then returns the CPU the
// process used over -idle-for, in percent of one core.
func idleCPU(b *testing.B) float64 {
	time.Sleep(time.Second)
	cpu0, wall0 := cpuTime(b), time.Now()
	time.Sleep(*idleFor)
	return 100 * (cpuTime(b) - cpu0).Seconds() / time.Since(wall0).Seconds()
}

// BenchmarkIdleAfterTopicChurn creates and deletes 1,000 topics (one
// partition, replication factor 3) on a running 3-broker lab that also
// holds the demo topic, then measures the process's CPU time over
// -idle-for of idle running: cpu% is the percentage of one core (target
// ≤ 2). churn-s is how long the creating and deleting took;
// cpu%-with-3000-replicas is the idle CPU once a 1,000-partition topic
// (1,000 replicas per broker) is added.
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
		b.ReportMetric(idleCPU(b), "cpu%")
		b.ReportMetric(churn.Seconds(), "churn-s")
		if _, err := c.CreateTopic("wide", 1000, 3, nil); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(idleCPU(b), "cpu%-with-3000-replicas")
		c.Close()
	}
}
