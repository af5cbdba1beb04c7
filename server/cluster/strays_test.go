package cluster

import (
	"os"
	"strings"
	"testing"
)

// TestStrayLogsRemoved: a topic deleted while a broker is down is removed
// from that broker's log dir when it starts again (its first metadata
// apply finds logs the metadata does not assign to it, as Kafka's broker
// finds stray logs); the partitions it still hosts are kept. Before, the
// deleted topic's partitions stayed on its disk for good, open and
// uncounted by any budget.
func TestStrayLogsRemoved(t *testing.T) {
	c := openRunning(t, 3)
	if _, err := c.CreateTopic("keep", 1, 3, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic("gone", 4, 3, nil); err != nil {
		t.Fatal(err)
	}
	dir := c.Broker(3).LogDir().Path()
	if err := c.Crash(3); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteTopic("gone"); err != nil {
		t.Fatal(err)
	}
	if n := countDirs(t, dir, "gone-"); n != 4 {
		t.Fatalf("broker 3 down: %d logs of the deleted topic on its disk, want 4 (it was down)", n)
	}
	if err := c.Restart(3); err != nil {
		t.Fatal(err)
	}
	b := c.Broker(3)
	b.RefreshMetadata() // the apply a start makes, made here before looking
	for _, l := range b.LogDir().Logs() {
		if l.TopicPartition().Topic == "gone" {
			t.Fatalf("broker 3 still holds %s after its restart", l.TopicPartition())
		}
	}
	if n := countDirs(t, dir, "gone-"); n != 0 {
		t.Fatalf("%d directories of the deleted topic left in %s", n, dir)
	}
	if n := countDirs(t, dir, "keep-"); n != 1 {
		t.Fatalf("%d logs of topic keep, want 1", n)
	}
}

// countDirs counts the directories in dir whose names start with prefix.
func countDirs(t *testing.T, dir, prefix string) int {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if e.IsDir() && strings.HasPrefix(e.Name(), prefix) {
			n++
		}
	}
	return n
}
