package cluster

// The live lab's lanes: follower values decoded off the fetch path. (The
// replication stories once told here, the power-loss patterns under each
// fencing rule among them, are scenario files in lessons/scenarios, played
// on this cluster by lessons.TestScenarios.)

import (
	"context"
	"testing"
	"time"

	"tidemark/events"
)

// TestFollowerValuesDecodedLate: while the clock runs, a follower's append
// event comes without values and its records' values follow in a
// KindRecords event, decoded off the fetch path; the snapshot's lane for
// the follower ends up with them.
func TestFollowerValuesDecodedLate(t *testing.T) {
	c := openRunning(t, 3)
	if _, err := c.CreateTopic("late", 1, 3, map[string]string{"min.insync.replicas": "2"}); err != nil {
		t.Fatal(err)
	}
	res, err := c.Produce(context.Background(), "late", 0, -1, []Record{{Value: []byte("v1")}}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		snap := c.Snapshot()
		done := 0
		for _, r := range snap.Partition("late", 0).ReplicaLogs {
			for _, x := range r.Records {
				if x.Offset == res.BaseOffset && x.Value == "v1" {
					done++
				}
			}
		}
		if done == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lanes hold v1 on %d of 3 replicas", done)
		}
		time.Sleep(5 * time.Millisecond)
	}
	evs, _ := c.Bus().Since(0, 0)
	late := false
	for _, e := range evs {
		if e.Kind == events.KindRecords && e.Topic == "late" && e.Broker != res.Leader {
			late = true
		}
	}
	if !late {
		t.Fatal("no follower's values came in a records event")
	}
}
