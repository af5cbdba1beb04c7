package cluster

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"tidemark/events"
	"tidemark/replication/quorum"
	"tidemark/server/broker"
)

// TestQuorumIdempotentRetries is the scenario
// lessons/scenarios/quorum-idempotent-retries.scenario.

// TestQuorumIdempotentKgoLeaderCrash: franz-go (idempotent, acks=all)
// writes to a quorum topic; the followers' answers to the Raft leader are
// cut, so the batches it proposes reach the followers' Raft logs but never
// commit, and the leader is then killed. The next leader commits them, and
// franz-go's retries of the same batches too: every acknowledged record is
// in the log, and none is in it twice (each retry is found a duplicate when
// it is applied).
func TestQuorumIdempotentKgoLeaderCrash(t *testing.T) {
	c := openRunning(t, 3)
	const topic, n = "q", 200
	if _, err := c.CreateTopic(topic, 1, 3, map[string]string{"replication.protocol": "quorum"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// Metadata is refreshed at most every 50 ms (franz-go's default is
	// 5 s), so the new leader is found at once.
	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds(c)...), kgo.DefaultProduceTopic(topic),
		kgo.RecordDeliveryTimeout(60*time.Second), kgo.MetadataMinAge(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	var mu sync.Mutex
	acked := map[string]bool{}
	var failed []error
	var wg sync.WaitGroup
	produce := func(from, to int) {
		for i := from; i < to; i++ {
			wg.Add(1)
			v := fmt.Sprintf("r%05d", i)
			prod.Produce(ctx, &kgo.Record{Value: []byte(v)}, func(r *kgo.Record, err error) {
				defer wg.Done()
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					failed = append(failed, err)
					return
				}
				acked[string(r.Value)] = true
			})
		}
	}
	produce(0, n/2)
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	tp, _ := c.Controller().Topic(topic)
	leader := tp.Partitions[0].Leader
	for _, id := range c.BrokerIDs() {
		if id != leader {
			if err := c.Cut(id, leader, true); err != nil {
				t.Fatal(err)
			}
		}
	}
	produce(n/2, n)
	// Wait (bounded) until the followers' Raft logs hold entries the
	// leader could not commit.
	for deadline := time.Now().Add(10 * time.Second); ; {
		st := c.Broker(leader).Replica(topic, 0).Status()
		if st.WaitingProduces > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no produce waiting on the cut-off leader")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := c.Crash(leader); err != nil {
		t.Fatal(err)
	}
	c.Heal()
	wg.Wait()
	if len(failed) > 0 {
		t.Logf("%d records not acknowledged (first: %v)", len(failed), failed[0])
	}
	if len(acked) < n/2 {
		t.Fatalf("only %d of %d records acknowledged", len(acked), n)
	}
	seen := consumeAll(t, c, topic, 1)
	for v, k := range seen {
		if k > 1 {
			t.Errorf("record %s is in the log %d times", v, k)
		}
	}
	for v := range acked {
		if seen[v] == 0 {
			t.Errorf("acknowledged %s is missing", v)
		}
	}
	t.Logf("%d acknowledged, %d in the log, leader %d crashed", len(acked), len(seen), leader)
}

// TestQuorumPowerLossCutsRaftState is the scenario
// lessons/scenarios/quorum-power-loss-raft-state.scenario.

// TestQuorumRaftStateCompacted: with raft-state compacted every 8 applied
// entries, 60 writes leave it as small as after 20; a follower crashed
// across the compactions is too far behind for the leader's entries, gets a
// snapshot (the leader's records up to its end) and then entries, and holds
// the same log as the others; a compacted replica restarts from its
// snapshot.
func TestQuorumRaftStateCompacted(t *testing.T) {
	c, err := Open(Options{DataDir: t.TempDir(), Brokers: 3, Paused: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Broker: broker.Config{RaftCompactEntries: 8}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.CreateTopic("q", 1, 3, map[string]string{"replication.protocol": "quorum"}); err != nil {
		t.Fatal(err)
	}
	leader, _ := quorumLeader(t, c, "q")
	down := c.BrokerIDs()[0]
	if down == leader {
		down = c.BrokerIDs()[1]
	}
	if err := c.Crash(down); err != nil {
		t.Fatal(err)
	}
	stateSize := func(id int32) int64 {
		st, err := os.Stat(filepath.Join(c.Broker(id).Replica("q", 0).Log().Dir(), quorum.StateFile))
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	var acked []string
	var sizes []int64
	for i := range 60 {
		v := fmt.Sprint("w", i)
		if err := produceOne(t, c, "q", v); err != nil {
			t.Fatal(err)
		}
		acked = append(acked, v)
		if i >= 19 {
			sizes = append(sizes, stateSize(leader))
		}
	}
	if m := slices.Max(sizes); m > 2*sizes[0] {
		t.Fatalf("raft-state sizes after writes 20–60: %v; want bounded", sizes)
	}
	if err := c.Restart(down); err != nil {
		t.Fatal(err)
	}
	if err := c.Step(500 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	checkQuorumLogs(t, c, "q", acked)
	if vs, _ := values(t, c, down, "q"); len(vs) != len(acked) {
		t.Fatalf("broker %d back with %d records, want %d", down, len(vs), len(acked))
	}
	other := 6 - leader - down
	if err := c.Crash(other); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(other); err != nil {
		t.Fatal(err)
	}
	if err := produceOne(t, c, "q", "after"); err != nil {
		t.Fatal(err)
	}
	if err := c.Step(200 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	checkQuorumLogs(t, c, "q", append(acked, "after"))
	t.Logf("leader's raft-state %d–%d bytes over writes 20–60", slices.Min(sizes), slices.Max(sizes))
}

// TestQuorumISR is the scenario
// lessons/scenarios/quorum-isr.scenario.

// TestQuorumRaftMessages: on a lab that publishes message events, every
// Raft message of a quorum partition is a stage message from its sender to
// its receiver, labelled with what it carries: the election's votes, the
// appends with their term, first index, entry count and commit, their
// answers, heartbeats with the commit. (What a delay on the leader's links
// does to a write is the scenario
// lessons/scenarios/quorum-link-delay.scenario.)
func TestQuorumRaftMessages(t *testing.T) {
	c, err := Open(Options{DataDir: t.TempDir(), Brokers: 3, Paused: true, MessageEvents: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	from := c.Bus().LastSeq()
	if _, err := c.CreateTopic("q", 1, 3, map[string]string{"replication.protocol": "quorum"}); err != nil {
		t.Fatal(err)
	}
	leader, term := quorumLeader(t, c, "q")
	if err := produceOne(t, c, "q", "a"); err != nil {
		t.Fatal(err)
	}
	if err := c.Step(200 * time.Millisecond); err != nil { // heartbeats
		t.Fatal(err)
	}
	evs, _ := c.Bus().Since(from, 0)
	seen := map[string]bool{}
	for _, e := range evs {
		if e.Kind != events.KindRaft {
			continue
		}
		if e.Wire == nil || e.Wire.From != e.Broker || e.Wire.From == e.Wire.To || e.Topic != "q" {
			t.Fatalf("Raft message %+v", e)
		}
		seen[e.MessageKey] = true
		if e.MessageKey == "stage.msg.raft.app" && e.Wire.From == leader && e.MessageArgs[2] == "1" {
			// The write's append: term, its index after the leader's
			// empty entry of the term, one entry.
			if want := fmt.Sprint(term); e.MessageArgs[0] != want {
				t.Errorf("append %v; want term %s", e.MessageArgs, want)
			}
		}
	}
	for _, k := range []string{"stage.msg.raft.vote", "stage.msg.raft.vote-yes", "stage.msg.raft.app", "stage.msg.raft.app-ok",
		"stage.msg.raft.heartbeat", "stage.msg.raft.heartbeat-ok"} {
		if !seen[k] {
			t.Errorf("no %s message; saw %v", k, seen)
		}
	}
}

// BenchmarkQuorumIdle measures an idle running 3-broker lab with a quorum
// topic of 30 partitions (RF 3): cpu% of one core and context switches per
// second (its wake-ups) over -idle-for, after a second to settle.
func BenchmarkQuorumIdle(b *testing.B) {
	for range b.N {
		c := openRunning(b, 3)
		if _, err := c.CreateTopic("q", 30, 3, map[string]string{"replication.protocol": "quorum"}); err != nil {
			b.Fatal(err)
		}
		time.Sleep(2 * time.Second) // elections
		w := idleCPU(b, "", "")
		b.ReportMetric(w.cpuPercent, "cpu%")
		b.ReportMetric(w.switches, "switches/s")
		c.Close()
	}
}
