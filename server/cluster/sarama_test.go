package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// saramaConfig is sarama's config as a user who read its README sets it:
// a recent protocol version, successes returned, oldest offsets first.
func saramaConfig() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_6_0_0
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = false // committed by hand below, so the test knows when
	cfg.Metadata.RefreshFrequency = 200 * time.Millisecond
	return cfg
}

// saramaConsumeGroup runs one sarama consumer-group session on topic until
// n new records were read (each marked and the marks committed), and
// returns their values.
func saramaConsumeGroup(t *testing.T, c *Cluster, group, topic string, n int) []string {
	t.Helper()
	g, err := sarama.NewConsumerGroup(seeds(c), group, saramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	h := &saramaCommitter{want: n, done: cancel}
	for ctx.Err() == nil {
		if err := g.Consume(ctx, []string{topic}, h); err != nil && !errors.Is(err, sarama.ErrClosedConsumerGroup) {
			t.Fatal(err)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.got) < n {
		t.Fatalf("sarama group %s read %d of %d records of %s", group, len(h.got), n, topic)
	}
	return h.got
}

type saramaCommitter struct {
	mu   sync.Mutex
	want int
	got  []string
	done func()
}

func (h *saramaCommitter) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *saramaCommitter) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *saramaCommitter) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for m := range claim.Messages() {
		s.MarkMessage(m, "")
		s.Commit() // synchronous with auto-commit off
		h.mu.Lock()
		h.got = append(h.got, string(m.Value))
		if len(h.got) >= h.want {
			h.done()
		}
		h.mu.Unlock()
	}
	return nil
}

// TestSaramaMatrix is issue 31's client matrix for IBM/sarama: produce and
// consume, a consumer group whose committed offset a second session starts
// from, the admin calls the lab serves (CreatePartitions, DeleteRecords,
// DeleteConsumerGroup, DescribeConfig of a broker) and an API it does not
// serve, which sarama reports as Kafka's UNSUPPORTED_VERSION.
func TestSaramaMatrix(t *testing.T) {
	c := openRunning(t, 3)
	cfg := saramaConfig()
	adm, err := sarama.NewClusterAdmin(seeds(c), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if err := adm.CreateTopic("matrix", &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 3}, false); err != nil {
		t.Fatal(err)
	}
	p, err := sarama.NewSyncProducer(seeds(c), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	send := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: "matrix", Value: sarama.StringEncoder(fmt.Sprint("m", i))}); err != nil {
				t.Fatalf("send %d: %v", i, err)
			}
		}
	}
	send(0, 10)

	// A group reads 10 and commits; a second session of the same group
	// starts at the commit and reads only what came after.
	if got := saramaConsumeGroup(t, c, "sarama-g", "matrix", 10); got[0] != "m0" || got[9] != "m9" {
		t.Fatalf("first session read %q", got)
	}
	offs, err := adm.ListConsumerGroupOffsets("sarama-g", map[string][]int32{"matrix": {0}})
	if err != nil {
		t.Fatal(err)
	}
	if b := offs.GetBlock("matrix", 0); b == nil || b.Offset != 10 {
		t.Fatalf("committed offset %+v, want 10", b)
	}
	send(10, 15)
	if got := saramaConsumeGroup(t, c, "sarama-g", "matrix", 5); got[0] != "m10" {
		t.Fatalf("second session started at %q, want m10 (after the commit)", got[0])
	}

	// CreatePartitions: validate-only changes nothing; then 1 → 3.
	if err := adm.CreatePartitions("matrix", 3, nil, true); err != nil {
		t.Fatalf("validate create partitions: %v", err)
	}
	if tp, _ := c.Controller().Topic("matrix"); len(tp.Partitions) != 1 {
		t.Fatalf("validate-only made %d partitions", len(tp.Partitions))
	}
	if err := adm.CreatePartitions("matrix", 3, nil, false); err != nil {
		t.Fatalf("create partitions: %v", err)
	}
	if tp, _ := c.Controller().Topic("matrix"); len(tp.Partitions) != 3 {
		t.Fatalf("%d partitions after CreatePartitions, want 3", len(tp.Partitions))
	}
	if err := adm.CreatePartitions("matrix", 2, nil, false); !errors.Is(err, sarama.ErrInvalidPartitions) {
		t.Fatalf("shrink: %v, want INVALID_PARTITIONS", err)
	}

	// DeleteRecords moves the log start; a read from the oldest offset
	// then starts there.
	if err := adm.DeleteRecords("matrix", map[int32]int64{0: 12}); err != nil {
		t.Fatalf("delete records: %v", err)
	}
	cl, err := sarama.NewClient(seeds(c), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if oldest, err := cl.GetOffset("matrix", 0, sarama.OffsetOldest); err != nil || oldest != 12 {
		t.Fatalf("oldest offset %d (%v), want 12", oldest, err)
	}
	if err := adm.DeleteRecords("matrix", map[int32]int64{0: 99}); !errors.Is(err, sarama.ErrOffsetOutOfRange) {
		t.Fatalf("delete records past the HW: %v, want OFFSET_OUT_OF_RANGE", err)
	}

	// DeleteConsumerGroup: the group is gone, an unknown one is
	// GROUP_ID_NOT_FOUND.
	if err := adm.DeleteConsumerGroup("sarama-g"); err != nil {
		t.Fatalf("delete group: %v", err)
	}
	if _, ok := c.Coordinator().Committed("sarama-g", "matrix", 0); ok {
		t.Fatal("the deleted group's commit is still there")
	}
	if err := adm.DeleteConsumerGroup("nobody"); !errors.Is(err, sarama.ErrGroupIDNotFound) {
		t.Fatalf("delete an unknown group: %v, want GROUP_ID_NOT_FOUND", err)
	}

	// DescribeConfig of a broker.
	entries, err := adm.DescribeConfig(sarama.ConfigResource{Type: sarama.BrokerResource, Name: "2"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range entries {
		got[e.Name] = e.Value
	}
	if got["broker.id"] != "2" || got["default.replication.factor"] != "3" {
		t.Fatalf("broker 2's configs: %v", got)
	}

	// APIs the lab does not serve: Kafka's UNSUPPORTED_VERSION, not a
	// closed connection.
	if _, err := adm.ListPartitionReassignments("matrix", []int32{0}); !errors.Is(err, sarama.ErrUnsupportedVersion) {
		t.Fatalf("ListPartitionReassignments: %v, want UNSUPPORTED_VERSION", err)
	}
	if _, err := adm.ElectLeaders(sarama.PreferredElection, map[string][]int32{"matrix": {0}}); !errors.Is(err, sarama.ErrUnsupportedVersion) {
		t.Fatalf("ElectLeaders: %v, want UNSUPPORTED_VERSION", err)
	}
}
