package controller

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/internal/fds"
)

// TestReplicaBudget: with a budget of 10 partition replicas, topics that
// fit are created, the one that would pass it is refused with
// POLICY_VIOLATION naming the limit and the flag, and deleting a topic
// frees its share.
func TestReplicaBudget(t *testing.T) {
	SetMaxPartitionReplicas(10)
	t.Cleanup(func() { SetMaxPartitionReplicas(0) })
	l := newLab(t)
	l.start(1, 2, 3)
	l.create("a", 2, 3, nil) // 6
	l.create("b", 4, 1, nil) // 10
	_, err := l.c.CreateTopic("c", 1, 1, nil)
	if !errors.Is(err, kerr.PolicyViolation) {
		t.Fatalf("11th replica: %v, want POLICY_VIOLATION", err)
	}
	for _, part := range []string{"at most 10", "--max-partition-replicas", "holds 10"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("message %q does not say %q", err, part)
		}
	}
	if _, ok := l.c.Topic("c"); ok {
		t.Fatal("the refused topic exists")
	}
	if err := l.c.DeleteTopic("a"); err != nil {
		t.Fatal(err)
	}
	l.create("c", 2, 3, nil)
}

// TestDefaultReplicaBudget: the default follows the descriptor limit and
// memory, and never drops below what the demo needs.
func TestDefaultReplicaBudget(t *testing.T) {
	for _, c := range []struct {
		files, memory uint64
		want          int
	}{
		{20000, 24 << 30, 5301},     // this lab machine: descriptors bound it
		{20000, 4 << 30, 1024},      // a small machine: memory does
		{1024, 0, 170},              // a default ulimit: half kept for other files
		{0, 0, 1365},                // unknown: 8,192 descriptors assumed
		{100, 1 << 30, minReplicas}, // never below the floor
		{1 << 20, 1 << 40, 262144},  // a million descriptors: a quarter of 1 TiB at 1 MiB each
	} {
		if got := replicaBudget(c.files, c.memory); got != c.want {
			t.Errorf("replicaBudget(%d files, %d MiB) = %d, want %d", c.files, c.memory>>20, got, c.want)
		}
	}
	if got := MaxPartitionReplicas(); got < minReplicas {
		t.Fatalf("MaxPartitionReplicas() = %d", got)
	}
}

// TestBrokerBudget: with at most 4 partition replicas a broker, one-
// partition topics of replication factor 1 (each assigned to broker 1)
// fit until broker 1 holds 4; the next is refused with POLICY_VIOLATION
// naming the broker, the limit and the flag, though the lab's own budget
// has room; a topic spread over all brokers still fits where they have
// room, and deleting a topic frees its share.
func TestBrokerBudget(t *testing.T) {
	SetMaxBrokerPartitions(4)
	t.Cleanup(func() { SetMaxBrokerPartitions(0) })
	l := newLab(t)
	l.start(1, 2, 3)
	for _, name := range []string{"a", "b", "c", "d"} {
		l.create(name, 1, 1, nil)
	}
	_, err := l.c.CreateTopic("e", 1, 1, nil)
	if !errors.Is(err, kerr.PolicyViolation) {
		t.Fatalf("5th replica on broker 1: %v, want POLICY_VIOLATION", err)
	}
	for _, part := range []string{"broker 1", "hosts 4 of at most 4", "--max-broker-partitions"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("message %q does not say %q", err, part)
		}
	}
	if _, ok := l.c.Topic("e"); ok {
		t.Fatal("the refused topic exists")
	}
	if _, err := l.c.CreateTopic("f", 2, 2, nil); !errors.Is(err, kerr.PolicyViolation) {
		t.Fatalf("2 partitions RF 2 (a replica on broker 1): %v, want POLICY_VIOLATION", err)
	}
	if err := l.c.DeleteTopic("a"); err != nil {
		t.Fatal(err)
	}
	l.create("f", 2, 2, nil) // broker 1 gets one, brokers 2 and 3 have room
}

// TestDefaultBrokerBudget: each broker's default share of the descriptors.
func TestDefaultBrokerBudget(t *testing.T) {
	for _, c := range []struct {
		files   uint64
		brokers int
		want    int
	}{
		{20000, 3, 1767}, // this lab machine
		{20000, 1, 5301}, // one broker: the whole descriptor budget
		{1024, 3, 56},    // a default ulimit
		{0, 3, 455},      // unknown: 8,192 descriptors assumed
		{100, 7, minBrokerPartitions},
		{20000, 0, 5301}, // no broker registered yet: counted as one
	} {
		if got := brokerBudget(c.files, c.brokers); got != c.want {
			t.Errorf("brokerBudget(%d files, %d brokers) = %d, want %d", c.files, c.brokers, got, c.want)
		}
	}
	if got := MaxBrokerPartitions(3); got < minBrokerPartitions {
		t.Fatalf("MaxBrokerPartitions(3) = %d", got)
	}
}

// TestShortOfDescriptorsRefusesTopics: with the process's account at 90 %
// of its limit (fds.RefuseTopics), a topic that fits every partition budget
// is refused with POLICY_VIOLATION and limits.descriptors; below it, the
// same topic is created.
func TestShortOfDescriptorsRefusesTopics(t *testing.T) {
	var open atomic.Int64
	open.Store(900)
	t.Cleanup(fds.SetAccount(1000, func() int { return int(open.Load()) }))
	l := newLab(t)
	l.start(1, 2, 3)
	_, err := l.c.CreateTopic("a", 1, 1, nil)
	var be *BudgetError
	if !errors.Is(err, kerr.PolicyViolation) || !errors.As(err, &be) || be.Key != "limits.descriptors" {
		t.Fatalf("900 of 1000 descriptors open: %v, want POLICY_VIOLATION (limits.descriptors)", err)
	}
	open.Store(899) // connections are refused here, topics not yet
	l.create("a", 1, 1, nil)
}
