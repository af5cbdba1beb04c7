package server

import (
	"net/http"
	"testing"

	"tidemark/server/controller"
)

// TestClassSharesBudgets: in class mode each cluster (an awake seat, a
// lesson cluster, the teacher's) gets an equal share of the process's
// partition-replica budgets, so a seat's 1,000 × 3 topic is refused
// (POLICY_VIOLATION) where alone it had the whole lab's budget; a flag
// set by hand is kept as it is.
func TestClassSharesBudgets(t *testing.T) {
	t.Cleanup(func() { controller.SetMaxPartitionReplicas(0); controller.SetMaxBrokerPartitions(0) })
	l, _ := startClass(t, t.TempDir(), "--seats", "1", "--max-awake-seats", "3", "--max-lesson-clusters", "2")
	want := budgetShare(controller.DefaultMaxPartitionReplicas(), 3+2+1, 64)
	if got := controller.MaxPartitionReplicas(); got != want || want >= controller.DefaultMaxPartitionReplicas() {
		t.Fatalf("class budget %d, want %d (of %d for 6 clusters)", got, want, controller.DefaultMaxPartitionReplicas())
	}
	seat := l.join(t, 1, "Ada")
	status, body := l.call(t, "POST", "/api/v1/topics", seat, `{"name":"wide","partitions":1000,"replication_factor":2}`)
	if status != http.StatusBadRequest {
		t.Fatalf("a seat's 1,000 × 2 topic: %d %s, want 400 POLICY_VIOLATION", status, body)
	}
	if got := budgetShare(100, 0, 64); got != 100 {
		t.Fatalf("no clusters: %d", got)
	}
	if got := budgetShare(100, 10, 64); got != 64 {
		t.Fatalf("the floor: %d", got)
	}
}
