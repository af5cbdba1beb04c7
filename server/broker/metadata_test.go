package broker

import (
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"tidemark/server/controller"
)

// TestRefreshMetadataAppliesTheChange: applying a metadata change that
// touches one topic of many allocates per change, not per topic. Before,
// every apply copied and re-parsed every topic (the controller's snapshot,
// each topic's config, the assignment map), so a churn of 1,000 topics
// allocated in n²: with 300 topics one config change cost 2,262
// allocations, now 129 (most of them the controller's badger write).
func TestRefreshMetadataAppliesTheChange(t *testing.T) {
	const topics = 300
	dir := t.TempDir()
	clk := &steppedClock{t: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
	ctl, err := controller.Open(filepath.Join(dir, "meta"), controller.Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctl.Close() })
	b, err := Start(Config{ID: 1, LogDir: LogDirPath(dir, 1), ListenAddr: "127.0.0.1:0",
		Controller: directController{ctl}, Network: openNetwork{}, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Crash() })
	b.Heartbeat()
	for i := range topics {
		if _, err := ctl.CreateTopic(fmt.Sprintf("t%d", i), 1, 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	b.RefreshMetadata()
	n := 0
	allocs := testing.AllocsPerRun(20, func() {
		n++
		ms := strconv.Itoa(3_600_000 + n)
		if _, err := ctl.AlterConfigs("t7", map[string]*string{"retention.ms": &ms}); err != nil {
			t.Fatal(err)
		}
		b.RefreshMetadata()
	})
	if r := b.replicaFor("t7", 0); r == nil || r.configs["retention.ms"] != strconv.Itoa(3_600_000+n) {
		t.Fatalf("the config change was not applied")
	}
	// The change itself (the controller's badger write, the config parsed
	// and applied to one log) is a few hundred; the rest is per topic.
	if allocs > topics {
		t.Errorf("a change to one of %d topics cost %.0f allocations; want at most %d", topics, allocs, topics)
	}
	t.Logf("%.0f allocations per change with %d topics", allocs, topics)
}
