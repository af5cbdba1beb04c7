package cluster

import (
	"context"
	"errors"
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
