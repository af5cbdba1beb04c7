package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// adminClient is a kadm client on every broker of c.
func adminClient(t *testing.T, c *Cluster) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(c)...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// TestAdminAPIs creates, describes, alters and deletes topics with franz-go's
// admin client, and checks Kafka's error codes for bad requests.
func TestAdminAPIs(t *testing.T) {
	c := openRunning(t, 3)
	adm := adminClient(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	mib := "2"
	res, err := adm.CreateTopic(ctx, 2, 3, map[string]*string{"min.insync.replicas": &mib}, "payments")
	if err != nil || res.Err != nil {
		t.Fatalf("create: %v %v", err, res.Err)
	}
	if res.NumPartitions != 2 || res.ReplicationFactor != 3 {
		t.Fatalf("created %d partitions x %d replicas", res.NumPartitions, res.ReplicationFactor)
	}
	if tp, ok := c.Controller().Topic("payments"); !ok || len(tp.Partitions) != 2 || tp.Configs["min.insync.replicas"] != "2" {
		t.Fatalf("controller has %+v", tp)
	}
	// Every broker learned the topic before the answer came back.
	for _, b := range c.liveBrokers() {
		if b.Replica("payments", 0) == nil {
			t.Fatalf("broker %d has no replica of payments-0", b.ID())
		}
	}

	// Kafka's error codes.
	res, _ = adm.CreateTopic(ctx, 1, 1, nil, "payments")
	if !errors.Is(res.Err, kerr.TopicAlreadyExists) {
		t.Fatalf("second create: %v", res.Err)
	}
	res, _ = adm.CreateTopic(ctx, 1, 1, nil, "bad/name")
	if !errors.Is(res.Err, kerr.InvalidTopicException) {
		t.Fatalf("bad name: %v", res.Err)
	}
	bogus := "x"
	res, _ = adm.CreateTopic(ctx, 1, 1, map[string]*string{"no.such.config": &bogus}, "t2")
	if !errors.Is(res.Err, kerr.InvalidConfig) {
		t.Fatalf("bad config: %v", res.Err)
	}
	res, _ = adm.CreateTopic(ctx, 1, 4, nil, "t3")
	if !errors.Is(res.Err, kerr.InvalidReplicationFactor) {
		t.Fatalf("rf 4 of 3 brokers: %v", res.Err)
	}
	vres, err := adm.ValidateCreateTopics(ctx, 4, 2, nil, "validated")
	if err != nil || vres["validated"].Err != nil {
		t.Fatalf("validate only: %v %v", err, vres["validated"].Err)
	}
	if _, ok := c.Controller().Topic("validated"); ok {
		t.Fatal("validate-only created the topic")
	}

	// DescribeConfigs: set keys are dynamic topic configs, the rest defaults.
	rcs, err := adm.DescribeTopicConfigs(ctx, "payments")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On("payments", nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe: %v %v", err, rc.Err)
	}
	found := 0
	for _, cfg := range rc.Configs {
		switch cfg.Key {
		case "min.insync.replicas":
			found++
			if cfg.MaybeValue() != "2" || cfg.Source != 1 {
				t.Fatalf("min.insync.replicas = %q from source %v", cfg.MaybeValue(), cfg.Source)
			}
		case "unclean.leader.election.enable":
			found++
			if cfg.MaybeValue() != "false" || cfg.Source != 5 {
				t.Fatalf("unclean.leader.election.enable = %q from source %v", cfg.MaybeValue(), cfg.Source)
			}
		}
	}
	if found != 2 {
		t.Fatalf("describe lists %d of the 2 keys looked for: %+v", found, rc.Configs)
	}

	// IncrementalAlterConfigs: set, delete, and a bad value changes nothing.
	one := "1"
	ars, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "min.insync.replicas", Value: &one}, {Name: "retention.ms", Value: ptr("60000")}}, "payments")
	if err != nil || ars[0].Err != nil {
		t.Fatalf("alter: %v %+v", err, ars)
	}
	if tp, _ := c.Controller().Topic("payments"); tp.Configs["min.insync.replicas"] != "1" || tp.Configs["retention.ms"] != "60000" {
		t.Fatalf("after alter: %v", tp.Configs)
	}
	ars, _ = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "min.insync.replicas", Value: ptr("4")}}, "payments")
	if !errors.Is(ars[0].Err, kerr.InvalidConfig) {
		t.Fatalf("min.insync.replicas 4 with 3 replicas: %v", ars[0].Err)
	}
	ars, _ = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "retention.ms"}}, "payments")
	if ars[0].Err != nil {
		t.Fatal(ars[0].Err)
	}
	if tp, _ := c.Controller().Topic("payments"); tp.Configs["retention.ms"] != "" || tp.Configs["min.insync.replicas"] != "1" {
		t.Fatalf("after delete: %v", tp.Configs)
	}

	// DeleteTopics.
	drs, err := adm.DeleteTopics(ctx, "payments", "nope")
	if err != nil {
		t.Fatal(err)
	}
	if drs["payments"].Err != nil || !errors.Is(drs["nope"].Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("delete: %+v", drs)
	}
	if _, ok := c.Controller().Topic("payments"); ok {
		t.Fatal("payments still exists")
	}
}

func ptr(s string) *string { return &s }

// produceKgo writes n records "v0".."v<n-1>" with franz-go's defaults
// (idempotent, acks=all) and returns the client's errors.
func produceKgo(t *testing.T, c *Cluster, topic string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds(c)...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Key: []byte(fmt.Sprintf("k%d", i%11)), Value: []byte(fmt.Sprintf("v%d", i))}
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// TestKgoConsumerGroup produces with franz-go's defaults (idempotent,
// acks=all), consumes everything back through a consumer group that
// commits, and finds the commits again after the whole lab restarts.
func TestKgoConsumerGroup(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(Options{DataDir: dir, Brokers: 3, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { c.Close() }()
	if _, err := c.CreateTopic("events", 3, 3, nil); err != nil {
		t.Fatal(err)
	}
	const n = 500
	produceKgo(t, c, "events", n)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cons, err := kgo.NewClient(kgo.SeedBrokers(seeds(c)...), kgo.ConsumerGroup("readers"), kgo.ConsumeTopics("events"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for len(seen) < n {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records", len(seen), n)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if seen[string(r.Value)] {
				t.Fatalf("record %s read twice", r.Value)
			}
			seen[string(r.Value)] = true
		})
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	cons.Close() // leaves the group

	var total int64
	committed := map[int32]int64{}
	for p := int32(0); p < 3; p++ {
		cm, ok := c.Coordinator().Committed("readers", "events", p)
		if !ok {
			t.Fatalf("no commit for events-%d", p)
		}
		total += cm.Offset
		committed[p] = cm.Offset
	}
	if total != n {
		t.Fatalf("committed offsets add up to %d, want %d", total, n)
	}

	// The commits survive a restart of the whole lab.
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c, err = Open(Options{DataDir: dir, Brokers: 3, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	adm := adminClient(t, c)
	offs, err := adm.FetchOffsets(ctx, "readers")
	if err != nil {
		t.Fatal(err)
	}
	total = 0
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Err != nil {
			t.Fatalf("offset fetch %s/%d: %v", o.Topic, o.Partition, o.Err)
		}
		total += o.At
	})
	if total != n {
		t.Fatalf("after restart the committed offsets add up to %d, want %d", total, n)
	}
	// A new member of the group starts where the group left off: nothing to read.
	produceKgo(t, c, "events", 10)
	cons2, err := kgo.NewClient(kgo.SeedBrokers(seeds(c)...), kgo.ConsumerGroup("readers"), kgo.ConsumeTopics("events"))
	if err != nil {
		t.Fatal(err)
	}
	defer cons2.Close()
	got := 0
	for got < 10 {
		fs := cons2.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of the 10 new records", got)
		}
		fs.EachRecord(func(r *kgo.Record) {
			got++
			if r.Offset < committed[r.Partition] {
				t.Fatalf("record %s at offset %d read again after the restart", r.Value, r.Offset)
			}
		})
	}
	if got != 10 {
		t.Fatalf("read %d records after the restart, want the 10 new ones", got)
	}
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
