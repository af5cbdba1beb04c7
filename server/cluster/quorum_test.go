package cluster

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"tidemark/replication"
)

// openPausedN starts a paused cluster of n brokers.
func openPausedN(t *testing.T, n int) *Cluster {
	t.Helper()
	c, err := Open(Options{DataDir: t.TempDir(), Brokers: n, Paused: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// quorumLeader steps the paused clock one broker tick at a time (bounded)
// until a running broker's Raft node leads the partition and the
// controller's metadata names it, and returns it with its term.
func quorumLeader(t *testing.T, c *Cluster, topic string) (int32, int32) {
	t.Helper()
	for range 400 { // 20 s of lab time: elections take 0.5–1 s each
		if tp, ok := c.controller.Topic(topic); ok {
			p := tp.Partitions[0]
			if b := c.Broker(p.Leader); b != nil {
				if st := b.Replica(topic, 0).Status(); st.Role == replication.RoleLeader && st.LeaderEpoch == p.LeaderEpoch {
					return p.Leader, p.LeaderEpoch
				}
			}
		}
		if err := c.Step(50 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatalf("%s: no Raft leader in the metadata after 20 s of lab time", topic)
	return -1, -1
}

// produceOne produces one record with acks=all while the lab clock moves
// (a write that cannot commit ends when its timeout passes in lab time, or
// when its leader steps down), and returns the produce error.
func produceOne(t *testing.T, c *Cluster, topic, value string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := c.Produce(context.Background(), topic, 0, -1, []Record{{Value: []byte(value)}}, 2*time.Second)
		done <- err
	}()
	for range 100 {
		select {
		case err := <-done:
			return err
		case <-time.After(time.Millisecond): // the produce runs on its own goroutine
		}
		if err := c.Step(50 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatal("produce did not end within 5 s of lab time")
	return nil
}

// values returns the record values of broker id's log of topic-0 and its
// leader epochs, in offset order.
func values(t *testing.T, c *Cluster, id int32, topic string) ([]string, []int32) {
	t.Helper()
	l := c.Broker(id).Replica(topic, 0).Log()
	batches, err := l.ReadBatches(0, l.LogEndOffset(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	var vs []string
	var epochs []int32
	for _, b := range batches {
		for _, r := range b.Records {
			vs = append(vs, string(r.Value))
			epochs = append(epochs, b.Header.PartitionLeaderEpoch)
		}
	}
	return vs, epochs
}

// checkQuorumLogs fails unless every running replica holds the same log,
// containing every acknowledged value, with HW = LEO.
func checkQuorumLogs(t *testing.T, c *Cluster, topic string, acked []string) {
	t.Helper()
	var ref []string
	for _, b := range c.liveBrokers() {
		vs, _ := values(t, c, b.ID(), topic)
		st := b.Replica(topic, 0).Status()
		if st.HighWatermark != st.LogEndOffset {
			t.Errorf("broker %d: HW %d LEO %d; a quorum replica appends only committed entries", b.ID(), st.HighWatermark, st.LogEndOffset)
		}
		for _, a := range acked {
			if !slices.Contains(vs, a) {
				t.Fatalf("broker %d lost acknowledged %s: has %v", b.ID(), a, vs)
			}
		}
		if ref == nil {
			ref = vs
		} else if !slices.Equal(vs, ref) {
			t.Fatalf("broker %d has %v, another replica %v", b.ID(), vs, ref)
		}
	}
}

// TestQuorumTopicFailures is the scenario
// lessons/scenarios/quorum-failures-rf5 (RF 5) and
// lessons/scenarios/quorum-majority (RF 3).scenario.

// TestQuorumTopicKillLeader is the scenario
// lessons/scenarios/quorum-leader-crash.scenario.

// TestQuorumTopicKgo: franz-go produces (idempotent, acks=all) to a quorum
// topic and reads every record back, on a running lab.
func TestQuorumTopicKgo(t *testing.T) {
	c := openRunning(t, 3)
	if _, err := c.CreateTopic("q", 1, 3, map[string]string{"replication.protocol": "quorum"}); err != nil {
		t.Fatal(err)
	}
	kgoRoundTrip(t, c, "q", 100)
}

// kgoRoundTrip produces n records with franz-go (idempotent, acks=all) to
// topic's partition 0 and reads them back in order.
func kgoRoundTrip(t *testing.T, c *Cluster, topic string, n int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds(c)...), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for i := range n {
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "v%d", i)}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(seeds(c)...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var got int64
	for got < n {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d", got, n)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != got || string(r.Value) != fmt.Sprintf("v%d", got) {
				t.Fatalf("offset %d value %s; want %d v%d", r.Offset, r.Value, got, got)
			}
			got++
		})
	}
}

// TestQuorumTopicPowerLoss is the scenario
// lessons/scenarios/quorum-power-loss-follower.scenario.
