package server

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/replication"
	"tidemark/server/cluster"
	"tidemark/server/web"
)

// lab adapts the cluster to the web's interfaces where their types differ;
// every other method (Snapshot, Bus, DeleteTopic, Crash, PowerLoss, Restart,
// Cut, Heal, Pause, Resume, Step, StepFetch) is the cluster's own.
type lab struct{ *cluster.Cluster }

var (
	_ web.Lab              = lab{}
	_ web.TopicAdmin       = lab{}
	_ web.Producer         = lab{}
	_ web.Consumer         = lab{}
	_ web.Faults           = lab{}
	_ web.LabClock         = lab{}
	_ web.Inspector        = lab{}
	_ web.PartitionCounter = lab{}
	_ web.LeaderState      = lab{}
)

// CreateTopic creates a topic; the web reads the result from the snapshot.
func (l lab) CreateTopic(name string, partitions int32, replicationFactor int16, configs map[string]string) error {
	_, err := l.Cluster.CreateTopic(name, partitions, replicationFactor, configs)
	return err
}

// AlterConfigs changes topic configs.
func (l lab) AlterConfigs(topic string, changes map[string]*string) error {
	_, err := l.Cluster.AlterConfigs(topic, changes)
	return err
}

// Produce produces through the cluster.
func (l lab) Produce(ctx context.Context, topic string, partition int32, acks int16, records []web.Record, timeout time.Duration) (web.ProduceResult, error) {
	recs := make([]cluster.Record, len(records))
	for i, r := range records {
		recs[i] = cluster.Record{Key: r.Key, Value: r.Value}
	}
	return l.Cluster.Produce(ctx, topic, partition, acks, recs, timeout)
}

// Consume consumes through the cluster.
func (l lab) Consume(topic string, partition int32, offset int64, limit int) ([]web.ConsumedRecord, int64, error) {
	recs, hw, err := l.Cluster.Consume(topic, partition, offset, limit)
	out := make([]web.ConsumedRecord, len(recs))
	for i, r := range recs {
		out[i] = web.ConsumedRecord{Offset: r.Offset, LeaderEpoch: r.LeaderEpoch, Timestamp: r.Timestamp, Key: r.Key, Value: r.Value}
	}
	return out, hw, err
}

// ConsumeEach consumes through the cluster one record at a time.
func (l lab) ConsumeEach(topic string, partition int32, offset int64, limit int, fn func(web.ConsumedRecord) bool) (int64, error) {
	return l.Cluster.ConsumeEach(topic, partition, offset, limit, func(r cluster.ConsumedRecord) bool {
		return fn(web.ConsumedRecord{Offset: r.Offset, LeaderEpoch: r.LeaderEpoch, Timestamp: r.Timestamp, Key: r.Key, Value: r.Value})
	})
}

// ReplicaLog returns a running broker's log of a partition and its HW.
func (l lab) ReplicaLog(broker int32, topic string, partition int32) (web.ReplicaLog, int64, error) {
	b := l.Broker(broker)
	if b == nil {
		return nil, 0, fmt.Errorf("%w: broker %d is not running", kerr.BrokerNotAvailable, broker)
	}
	r := b.Replica(topic, partition)
	if r == nil {
		return nil, 0, fmt.Errorf("%w: broker %d has no replica of %s-%s", kerr.UnknownTopicOrPartition, broker, topic, strconv.Itoa(int(partition)))
	}
	return r.Log(), r.Status().HighWatermark, nil
}

// Leading reports whether broker leads the partition by its own account
// (it applied the controller's metadata) and at which leader epoch.
func (l lab) Leading(broker int32, topic string, partition int32) (int32, bool) {
	b := l.Broker(broker)
	if b == nil {
		return 0, false
	}
	r := b.Replica(topic, partition)
	if r == nil {
		return 0, false
	}
	st := r.Status()
	return st.LeaderEpoch, st.Role == replication.RoleLeader
}
