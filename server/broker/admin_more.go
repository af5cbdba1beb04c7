package broker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"tidemark/replication"
	"tidemark/server/controller"
	"tidemark/storage"
)

// PartitionAdder is the part of Admin that adds partitions to a topic
// (CreatePartitions); the lab's controller link implements it.
type PartitionAdder interface {
	CreatePartitions(topic string, count int32) (controller.Topic, error)
}

func (b *Broker) handleCreatePartitions(req *kmsg.CreatePartitionsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	count := map[string]int{}
	for _, t := range req.Topics {
		count[t.Topic]++
	}
	for _, t := range req.Topics {
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic = t.Topic
		var err error
		switch {
		case count[t.Topic] > 1:
			err = fmt.Errorf("%w: topic %q appears more than once in the request", kerr.InvalidRequest, t.Topic)
		case len(t.Assignment) > 0:
			err = fmt.Errorf("%w: the lab assigns replicas itself; give only the new partition count", kerr.InvalidReplicaAssignment)
		default:
			err = b.createPartitions(t.Topic, t.Count, req.ValidateOnly)
		}
		if err != nil {
			rt.ErrorCode, rt.ErrorMessage = errorCode(err), errMessage(err)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// createPartitions grows topic to count partitions, or with validateOnly
// checks that the controller would.
func (b *Broker) createPartitions(topic string, count int32, validateOnly bool) error {
	a, err := b.admin()
	if err != nil {
		return err
	}
	pa, ok := a.(PartitionAdder)
	if !ok {
		return fmt.Errorf("%w: this lab's controller does not add partitions", kerr.InvalidRequest)
	}
	if !validateOnly {
		_, err := pa.CreatePartitions(topic, count)
		return err
	}
	md, err := b.cfg.Controller.Metadata()
	if err != nil {
		return err
	}
	t := md.Topic(topic)
	switch {
	case t == nil:
		return fmt.Errorf("%w: no topic %q", kerr.UnknownTopicOrPartition, topic)
	case count <= int32(len(t.Partitions)):
		return fmt.Errorf("%w: topic %q has %d partitions; a topic's partitions can only be added, never removed", kerr.InvalidPartitions, topic, len(t.Partitions))
	case count > controller.MaxPartitions:
		return fmt.Errorf("%w: %d partitions: must be at most %d", kerr.InvalidPartitions, count, controller.MaxPartitions)
	}
	return nil
}

// handleDeleteRecords moves the log start offset of partitions this broker
// leads (Kafka's DeleteRecords, AdminClient.deleteRecords): records below
// it are gone for every reader (a Fetch below it is OFFSET_OUT_OF_RANGE)
// and the segments wholly below it are deleted; the followers move theirs
// when their next fetch tells them the leader's (followLeaderLogStart).
// The answer waits for the followers (deleterecords.go).
func (b *Broker) handleDeleteRecords(ctx context.Context, req *kmsg.DeleteRecordsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteRecordsResponseTopic()
		rt.Topic = t.Topic
		for range t.Partitions {
			rt.Partitions = append(rt.Partitions, kmsg.NewDeleteRecordsResponseTopicPartition())
		}
		resp.Topics = append(resp.Topics, rt)
	}
	var waits []deleteWait
	for i, t := range req.Topics {
		for j, p := range t.Partitions {
			rp := &resp.Topics[i].Partitions[j]
			rp.Partition, rp.LowWatermark = p.Partition, -1
			r, want, err := b.deleteRecords(t.Topic, p.Partition, p.Offset)
			if err != nil {
				rp.ErrorCode = errorCode(err)
				continue
			}
			waits = append(waits, deleteWait{out: rp, r: r, want: want})
		}
	}
	if len(waits) > 0 {
		b.awaitLowWatermarks(ctx, time.Duration(req.TimeoutMillis)*time.Millisecond, waits)
	}
	return resp
}

// deleteRecords is one partition of a DeleteRecords request; offset -1
// means the HW (delete everything committed). It returns the leader's
// replica and the offset its low watermark must reach.
func (b *Broker) deleteRecords(topic string, partition int32, offset int64) (*replica, int64, error) {
	r := b.replicaFor(topic, partition)
	if r == nil {
		return nil, -1, kerr.UnknownTopicOrPartition
	}
	if !r.log.Config().Cleanup.Deletes() {
		return nil, -1, fmt.Errorf("%w: records of %s cannot be deleted: cleanup.policy=compact", kerr.PolicyViolation, r.tp)
	}
	want, err := int64(-1), error(kerr.NotLeaderForPartition)
	r.drive(func(int) bool {
		if st := r.status(); st.Role == replication.RoleLeader {
			want, err = r.proto.deleteRecords(offset)
		}
		return false
	})
	if err != nil {
		var oor *storage.OffsetOutOfRangeError
		switch {
		case errors.As(err, &oor):
			return nil, -1, kerr.OffsetOutOfRange
		case errors.Is(err, kerr.OffsetOutOfRange), errors.Is(err, kerr.NotLeaderForPartition), errors.Is(err, kerr.InvalidRequest):
			return nil, -1, err
		}
		return nil, -1, fmt.Errorf("%w: %v", kerr.KafkaStorageError, err)
	}
	return r, want, nil
}

func (b *Broker) handleDeleteGroups(req *kmsg.DeleteGroupsRequest) kmsg.Response {
	c := b.coordinator()
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	var mine []string
	for _, g := range req.Groups {
		if _, err := b.groupError(g); err != nil {
			rg := kmsg.NewDeleteGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, err.Code
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		mine = append(mine, g)
	}
	if len(mine) > 0 && c != nil {
		sub := *req
		sub.Groups = mine
		resp.Groups = append(resp.Groups, c.DeleteGroups(&sub).Groups...)
	}
	return resp
}

// errNoAuthorizer is what the ACL APIs answer: Kafka without an authorizer
// (authorizer.class.name unset, as in the lab) answers SECURITY_DISABLED.
var errNoAuthorizer = "No Authorizer is configured."

func (b *Broker) handleDescribeACLs(req *kmsg.DescribeACLsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	resp.ErrorCode, resp.ErrorMessage = kerr.SecurityDisabled.Code, &errNoAuthorizer
	return resp
}

func (b *Broker) handleCreateACLs(req *kmsg.CreateACLsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	for range req.Creations {
		r := kmsg.NewCreateACLsResponseResult()
		r.ErrorCode, r.ErrorMessage = kerr.SecurityDisabled.Code, &errNoAuthorizer
		resp.Results = append(resp.Results, r)
	}
	return resp
}

func (b *Broker) handleDeleteACLs(req *kmsg.DeleteACLsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	for range req.Filters {
		r := kmsg.NewDeleteACLsResponseResult()
		r.ErrorCode, r.ErrorMessage = kerr.SecurityDisabled.Code, &errNoAuthorizer
		resp.Results = append(resp.Results, r)
	}
	return resp
}

// brokerConfig is one broker config DescribeConfigs reports.
type brokerConfig struct {
	name, value string
	typ         kmsg.ConfigType
	static      bool // set by the lab (STATIC_BROKER_CONFIG), else Kafka's default
}

// brokerConfigs lists the broker configs the lab has, read-only (the lab
// sets them at start; Kafka's dynamic broker configs are not served),
// sorted by name.
func (b *Broker) brokerConfigs() []brokerConfig {
	def := controller.DefaultTopicConfig()
	topic := map[string]string{}
	for _, e := range def.Entries() {
		topic[e.Name] = e.Value
	}
	ms := func(d interface{ Milliseconds() int64 }) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	return []brokerConfig{
		{"auto.create.topics.enable", strconv.FormatBool(b.autoCreateTopics()), kmsg.ConfigTypeBoolean, !b.autoCreateTopics()},
		{"broker.heartbeat.interval.ms", ms(b.cfg.HeartbeatInterval), kmsg.ConfigTypeInt, true},
		{"broker.id", strconv.Itoa(int(b.cfg.ID)), kmsg.ConfigTypeInt, true},
		{"compression.type", topic[controller.ConfigCompressionType], kmsg.ConfigTypeString, false},
		{"connections.max.idle.ms", ms(b.cfg.ConnectionsMaxIdle), kmsg.ConfigTypeLong, b.cfg.ConnectionsMaxIdle != 0},
		{"default.replication.factor", strconv.Itoa(DefaultReplicationFactor), kmsg.ConfigTypeInt, true},
		{"log.cleaner.delete.retention.ms", topic[controller.ConfigDeleteRetentionMs], kmsg.ConfigTypeLong, false},
		{"log.cleaner.min.cleanable.ratio", topic[controller.ConfigMinCleanableDirtyRatio], kmsg.ConfigTypeDouble, false},
		{"log.cleanup.policy", topic[controller.ConfigCleanupPolicy], kmsg.ConfigTypeList, false},
		{"log.dirs", b.cfg.LogDir, kmsg.ConfigTypeString, true},
		{"log.index.interval.bytes", topic[controller.ConfigIndexIntervalBytes], kmsg.ConfigTypeInt, false},
		{"log.message.timestamp.type", topic[controller.ConfigMessageTimestampType], kmsg.ConfigTypeString, false},
		{"log.retention.bytes", topic[controller.ConfigRetentionBytes], kmsg.ConfigTypeLong, false},
		{"log.retention.ms", topic[controller.ConfigRetentionMs], kmsg.ConfigTypeLong, false},
		{"log.segment.bytes", topic[controller.ConfigSegmentBytes], kmsg.ConfigTypeInt, false},
		{"message.max.bytes", topic[controller.ConfigMaxMessageBytes], kmsg.ConfigTypeInt, false},
		{"min.insync.replicas", topic[controller.ConfigMinInsyncReplicas], kmsg.ConfigTypeInt, false},
		{"node.id", strconv.Itoa(int(b.cfg.ID)), kmsg.ConfigTypeInt, true},
		{"num.partitions", strconv.Itoa(DefaultNumPartitions), kmsg.ConfigTypeInt, false},
		{"replica.fetch.max.bytes", strconv.Itoa(int(b.cfg.FetchMaxBytes)), kmsg.ConfigTypeInt, true},
		{"replica.fetch.wait.max.ms", ms(b.cfg.FetchMaxWait), kmsg.ConfigTypeInt, true},
		{"replica.high.watermark.checkpoint.interval.ms", ms(b.cfg.HighWatermarkCheckpointInterval), kmsg.ConfigTypeLong, true},
		{"replica.lag.time.max.ms", topic[controller.ConfigReplicaLagTimeMaxMs], kmsg.ConfigTypeLong, true},
		{"unclean.leader.election.enable", topic[controller.ConfigUncleanLeaderElection], kmsg.ConfigTypeBoolean, false},
	}
}

// describeBrokerConfigs fills rr with this broker's configs (those named,
// or all).
func (b *Broker) describeBrokerConfigs(rr *kmsg.DescribeConfigsResponseResource, names []string, synonyms bool) {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	for _, bc := range b.brokerConfigs() {
		if names != nil && !want[bc.name] {
			continue
		}
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		v := bc.value
		c.Name, c.Value, c.ReadOnly, c.ConfigType = bc.name, &v, true, bc.typ
		c.Source, c.IsDefault = kmsg.ConfigSourceDefaultConfig, true
		if bc.static {
			c.Source, c.IsDefault = kmsg.ConfigSourceStaticBrokerConfig, false
		}
		if synonyms {
			s := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			s.Name, s.Value, s.Source = c.Name, c.Value, c.Source
			c.ConfigSynonyms = append(c.ConfigSynonyms, s)
		}
		rr.Configs = append(rr.Configs, c)
	}
}
