package cluster

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// waitFor polls cond (the running lab's followers move on their own
// fetches) until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestCreatePartitionsMovesKeys grows a topic with kadm's CreatePartitions:
// every broker hosts the new partitions when the call returns, a keyed
// producer (franz-go's default murmur2 partitioner) then spreads the same
// keys over the new count, and each record is read back from the partition
// the producer was told. Shrinking is INVALID_PARTITIONS.
func TestCreatePartitionsMovesKeys(t *testing.T) {
	c := openRunning(t, 3)
	adm := adminClient(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, "grow"); err != nil {
		t.Fatal(err)
	}
	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds(c)...), kgo.DefaultProduceTopic("grow"), kgo.MetadataMinAge(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	produce := func(round int) map[string]int32 {
		where := map[string]int32{}
		for k := range 12 {
			r := &kgo.Record{Key: fmt.Appendf(nil, "user-%d", k), Value: fmt.Appendf(nil, "round %d", round)}
			if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
			where[string(r.Key)] = r.Partition
		}
		return where
	}
	before := produce(0)

	v, err := adm.ValidateCreatePartitions(ctx, 2, "grow")
	if err != nil || v["grow"].Err != nil {
		t.Fatalf("validate: %v %v", err, v["grow"].Err)
	}
	if tp, _ := c.Controller().Topic("grow"); len(tp.Partitions) != 1 {
		t.Fatalf("validate-only added partitions: %d", len(tp.Partitions))
	}
	res, err := adm.CreatePartitions(ctx, 2, "grow")
	if err != nil || res["grow"].Err != nil {
		t.Fatalf("create partitions: %v %v", err, res["grow"].Err)
	}
	tp, _ := c.Controller().Topic("grow")
	if len(tp.Partitions) != 3 {
		t.Fatalf("%d partitions, want 3", len(tp.Partitions))
	}
	for _, p := range tp.Partitions {
		for _, id := range p.Replicas {
			if c.Broker(id).Replica("grow", p.Partition) == nil {
				t.Fatalf("broker %d has no replica of grow-%d", id, p.Partition)
			}
		}
	}
	res, _ = adm.UpdatePartitions(ctx, 2, "grow")
	if !errors.Is(res["grow"].Err, kerr.InvalidPartitions) {
		t.Fatalf("shrink: %v, want INVALID_PARTITIONS", res["grow"].Err)
	}

	// The producer learns the new count from its metadata refresh.
	prod.ForceMetadataRefresh()
	waitFor(t, "the producer to see 3 partitions", func() bool {
		r := &kgo.Record{Key: []byte("probe")}
		if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
		md, err := adm.Metadata(ctx, "grow")
		return err == nil && len(md.Topics["grow"].Partitions) == 3 && r.Partition >= 0
	})
	after := produce(1)
	moved := 0
	for k, p := range after {
		if p != before[k] {
			moved++
		}
		if p < 0 || p > 2 {
			t.Fatalf("key %s went to partition %d", k, p)
		}
	}
	if moved == 0 {
		t.Fatal("no key moved partition after 1 → 3 partitions")
	}
	t.Logf("%d of %d keys moved partition", moved, len(after))

	// Each round-1 record is in the partition the producer was told.
	cons, err := kgo.NewClient(kgo.SeedBrokers(seeds(c)...), kgo.ConsumeTopics("grow"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	seen := 0
	for seen < len(after) {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d round-1 records: %v", seen, len(after), err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) != "round 1" {
				return
			}
			seen++
			if want := after[string(r.Key)]; r.Partition != want {
				t.Errorf("key %s read from partition %d, produced to %d", r.Key, r.Partition, want)
			}
		})
	}
}

// TestDeleteRecords moves a partition's log start offset with kadm's
// DeleteRecords: the leader answers the new low watermark, ListOffsets
// earliest says it, a Fetch below it is OFFSET_OUT_OF_RANGE, and every
// follower's log start follows. An offset past the HW is
// OFFSET_OUT_OF_RANGE.
func TestDeleteRecords(t *testing.T) {
	c := openRunning(t, 3)
	adm := adminClient(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, "trim"); err != nil {
		t.Fatal(err)
	}
	produceKgo(t, c, "trim", 10)
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "trim", Partition: 0, At: 4})
	res, err := adm.DeleteRecords(ctx, offs)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := res.Lookup("trim", 0)
	if r.Err != nil || r.LowWatermark != 4 {
		t.Fatalf("delete records: %+v", r)
	}
	starts, err := adm.ListStartOffsets(ctx, "trim")
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := starts.Lookup("trim", 0); s.Offset != 4 {
		t.Fatalf("earliest offset %d, want 4", s.Offset)
	}
	tp, _ := c.Controller().Topic("trim")
	for _, id := range tp.Partitions[0].Replicas {
		b := c.Broker(id)
		waitFor(t, fmt.Sprintf("broker %d's log start offset", id), func() bool { return b.Replica("trim", 0).Log().LogStartOffset() == 4 })
	}

	// A consumer fetching from offset 0 is told OFFSET_OUT_OF_RANGE.
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Broker(tp.Partitions[0].Leader).Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	fr := kmsg.NewPtrFetchRequest()
	fr.ReplicaID, fr.MaxBytes, fr.SessionEpoch = -1, 1<<20, -1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = "trim", tp.ID
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = 0, 0, 1<<20, -1
	ft.Partitions = append(ft.Partitions, fp)
	fr.Topics = append(fr.Topics, ft)
	resp, err := fr.RequestWith(ctx, cl.Broker(int(tp.Partitions[0].Leader)))
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.OffsetOutOfRange.Code {
		t.Fatalf("fetch below the log start offset: %v, want OFFSET_OUT_OF_RANGE", kerr.ErrorForCode(code))
	}

	offs = kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "trim", Partition: 0, At: 11})
	res, _ = adm.DeleteRecords(ctx, offs)
	if r, _ := res.Lookup("trim", 0); !errors.Is(r.Err, kerr.OffsetOutOfRange) {
		t.Fatalf("delete past the HW: %v, want OFFSET_OUT_OF_RANGE", r.Err)
	}
}

// TestDeleteGroupsBrokerConfigsACLs: DeleteGroups removes an empty group's
// commits (GROUP_ID_NOT_FOUND for an unknown one), DescribeConfigs of a
// broker lists its configs, the ACL APIs answer SECURITY_DISABLED as Kafka
// without an authorizer does, and ApiVersions lists exactly those APIs.
func TestDeleteGroupsBrokerConfigsACLs(t *testing.T) {
	c := openRunning(t, 3)
	adm := adminClient(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, "g"); err != nil {
		t.Fatal(err)
	}
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "g", Partition: 0, At: 0})
	if _, err := adm.CommitOffsets(ctx, "readers", offs); err != nil {
		t.Fatal(err)
	}
	dg, err := adm.DeleteGroups(ctx, "readers", "nobody")
	if err != nil {
		t.Fatal(err)
	}
	if dg["readers"].Err != nil || !errors.Is(dg["nobody"].Err, kerr.GroupIDNotFound) {
		t.Fatalf("delete groups: readers %v, nobody %v", dg["readers"].Err, dg["nobody"].Err)
	}
	fetched, err := adm.FetchOffsets(ctx, "readers")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := fetched.Lookup("g", 0); ok {
		t.Fatal("the deleted group's commit is still there")
	}

	rcs, err := adm.DescribeBrokerConfigs(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, rc := range rcs {
		if rc.Err != nil {
			t.Fatalf("describe broker %s: %v", rc.Name, rc.Err)
		}
		for _, cfg := range rc.Configs {
			got[cfg.Key] = cfg.MaybeValue()
		}
	}
	if got["broker.id"] != "2" || got["num.partitions"] != "1" || got["default.replication.factor"] != "3" {
		t.Fatalf("broker configs: %v", got)
	}

	dr := kmsg.NewPtrDescribeACLsRequest()
	dr.ResourceType, dr.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	dr.Operation, dr.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds(c)...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	acls, err := dr.RequestWith(ctx, cl)
	if err != nil || acls.ErrorCode != kerr.SecurityDisabled.Code {
		t.Fatalf("describe ACLs: %v %+v, want SECURITY_DISABLED", err, acls)
	}

	vs, err := adm.ApiVersions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, bv := range vs {
		for _, key := range []int16{21, 37, 42} {
			if _, _, ok := bv.KeyVersions(key); !ok {
				t.Fatalf("broker %d does not list %s", bv.NodeID, kmsg.NameForKey(key))
			}
		}
		// ElectLeaders is not served: absent, not listed with no versions.
		if _, _, ok := bv.KeyVersions(43); ok {
			t.Fatalf("broker %d lists ElectLeaders, which the lab does not serve", bv.NodeID)
		}
	}
}
