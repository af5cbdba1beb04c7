package controller

import (
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
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
