package cluster

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
)

// kafkaGoRead reads n records of topic as a member of group with kafka-go's
// Reader, which commits each synchronously (CommitInterval 0), and
// returns their values.
func kafkaGoRead(t *testing.T, c *Cluster, group, topic string, n int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: seeds(c), GroupID: group, Topic: topic,
		StartOffset: kafkago.FirstOffset, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	var got []string
	for len(got) < n {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("kafka-go group %s read %d of %d: %v", group, len(got), n, err)
		}
		got = append(got, string(m.Value))
	}
	return got
}

// TestKafkaGoMatrix is issue 31's client matrix for segmentio/kafka-go:
// produce and consume, a consumer group whose committed offset a second
// reader starts from, the admin calls kafka-go has and the lab serves
// (CreatePartitions, DeleteGroups, DescribeConfigs of a broker; kafka-go
// has no DeleteRecords), and APIs the lab does not serve answered with
// Kafka's UNSUPPORTED_VERSION rather than a closed connection (kafka-go
// sends them at version 0 whatever ApiVersions said).
func TestKafkaGoMatrix(t *testing.T) {
	c := openRunning(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl := &kafkago.Client{Addr: kafkago.TCP(seeds(c)...), Timeout: 20 * time.Second}
	cr, err := cl.CreateTopics(ctx, &kafkago.CreateTopicsRequest{Topics: []kafkago.TopicConfig{{Topic: "matrix", NumPartitions: 1, ReplicationFactor: 3}}})
	if err != nil || cr.Errors["matrix"] != nil {
		t.Fatalf("create topic: %v %v", err, cr.Errors)
	}
	w := &kafkago.Writer{Addr: kafkago.TCP(seeds(c)...), Topic: "matrix", RequiredAcks: kafkago.RequireAll, BatchTimeout: time.Millisecond}
	defer w.Close()
	send := func(from, to int) {
		t.Helper()
		var msgs []kafkago.Message
		for i := from; i < to; i++ {
			msgs = append(msgs, kafkago.Message{Value: fmt.Appendf(nil, "m%d", i)})
		}
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			t.Fatal(err)
		}
	}
	send(0, 10)
	if got := kafkaGoRead(t, c, "seg-g", "matrix", 10); got[0] != "m0" || got[9] != "m9" {
		t.Fatalf("first reader read %q", got)
	}
	of, err := cl.OffsetFetch(ctx, &kafkago.OffsetFetchRequest{GroupID: "seg-g", Topics: map[string][]int{"matrix": {0}}})
	if err != nil || of.Error != nil {
		t.Fatalf("offset fetch: %v %v", err, of.Error)
	}
	if p := of.Topics["matrix"]; len(p) != 1 || p[0].CommittedOffset != 10 || p[0].Error != nil {
		t.Fatalf("committed offsets %+v, want 10", p)
	}
	send(10, 15)
	if got := kafkaGoRead(t, c, "seg-g", "matrix", 5); got[0] != "m10" {
		t.Fatalf("second reader started at %q, want m10 (after the commit)", got[0])
	}

	// CreatePartitions: validate-only changes nothing; then 1 → 3.
	grow := func(n int32, validate bool) error {
		r, err := cl.CreatePartitions(ctx, &kafkago.CreatePartitionsRequest{Topics: []kafkago.TopicPartitionsConfig{{Name: "matrix", Count: n}}, ValidateOnly: validate})
		if err != nil {
			return err
		}
		return r.Errors["matrix"]
	}
	if err := grow(3, true); err != nil {
		t.Fatalf("validate create partitions: %v", err)
	}
	if tp, _ := c.Controller().Topic("matrix"); len(tp.Partitions) != 1 {
		t.Fatalf("validate-only made %d partitions", len(tp.Partitions))
	}
	if err := grow(3, false); err != nil {
		t.Fatalf("create partitions: %v", err)
	}
	if tp, _ := c.Controller().Topic("matrix"); len(tp.Partitions) != 3 {
		t.Fatalf("%d partitions after CreatePartitions, want 3", len(tp.Partitions))
	}
	if err := grow(2, false); !errors.Is(err, kafkago.InvalidPartitionNumber) {
		t.Fatalf("shrink: %v, want INVALID_PARTITIONS", err)
	}

	// DeleteGroups: the group's commits go; an unknown group is
	// GROUP_ID_NOT_FOUND. One group a call: kafka-go sends every group
	// to the first one's coordinator, and a broker answers
	// NOT_COORDINATOR for the others, as Kafka does.
	for group, want := range map[string]error{"seg-g": nil, "nobody": kafkago.GroupIdNotFound} {
		dg, err := cl.DeleteGroups(ctx, &kafkago.DeleteGroupsRequest{GroupIDs: []string{group}})
		if err != nil {
			t.Fatal(err)
		}
		if got := dg.Errors[group]; got != want && !errors.Is(got, want) {
			t.Fatalf("delete group %s: %v, want %v", group, got, want)
		}
	}
	if _, ok := c.Coordinator().Committed("seg-g", "matrix", 0); ok {
		t.Fatal("the deleted group's commit is still there")
	}

	// DescribeConfigs of a broker.
	dc, err := cl.DescribeConfigs(ctx, &kafkago.DescribeConfigsRequest{Resources: []kafkago.DescribeConfigRequestResource{
		{ResourceType: kafkago.ResourceTypeBroker, ResourceName: "2"}}})
	if err != nil || len(dc.Resources) != 1 || dc.Resources[0].Error != nil {
		t.Fatalf("describe broker configs: %v %+v", err, dc)
	}
	got := map[string]string{}
	for _, e := range dc.Resources[0].ConfigEntries {
		got[e.ConfigName] = e.ConfigValue
	}
	if got["broker.id"] != "2" || got["default.replication.factor"] != "3" {
		t.Fatalf("broker 2's configs: %v", got)
	}

	// APIs the lab does not serve.
	lr, err := cl.ListPartitionReassignments(ctx, &kafkago.ListPartitionReassignmentsRequest{
		Topics: map[string]kafkago.ListPartitionReassignmentsRequestTopic{"matrix": {PartitionIndexes: []int{0}}}})
	if err != nil || !errors.Is(lr.Error, kafkago.UnsupportedVersion) {
		t.Fatalf("ListPartitionReassignments: %v %+v, want UNSUPPORTED_VERSION", err, lr)
	}
	el, err := cl.ElectLeaders(ctx, &kafkago.ElectLeadersRequest{Topic: "matrix", Partitions: []int{0}, Timeout: time.Second})
	if err != nil {
		t.Fatalf("ElectLeaders: %v, want an answer", err)
	}
	if len(el.PartitionResults) != 1 || !errors.Is(el.PartitionResults[0].Error, kafkago.UnsupportedVersion) {
		t.Fatalf("ElectLeaders: %+v, want UNSUPPORTED_VERSION for matrix-0", el)
	}
}
