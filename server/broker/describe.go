package broker

import (
	"cmp"
	"net"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"tidemark/server/controller"
	"tidemark/server/wire"
	"tidemark/storage"
)

// describeAPIVersions lists the describe APIs an admin client (kadm, the
// lab's observe mode) uses to see a cluster whole, at the versions
// implemented here.
var describeAPIVersions = wire.VersionTable{
	35: {Min: 0, Max: 4}, // DescribeLogDirs: v4 the volume's total and usable bytes
	60: {Min: 0, Max: 2}, // DescribeCluster: v1 endpoint type, v2 fenced brokers
	75: {Min: 0, Max: 0}, // DescribeTopicPartitions (KIP-966): ELR
}

// MaxDescribePartitions is Kafka's max.request.partition.size.limit: the
// most partitions one DescribeTopicPartitions response carries, whatever
// the request's ResponsePartitionLimit asks; the rest come through the
// cursor.
const MaxDescribePartitions = 2000

// unknownVolumeBytes is Kafka's DescribeLogDirsResponse.UNKNOWN_VOLUME_BYTES.
const unknownVolumeBytes = -1

// handleDescribeLogDirs answers DescribeLogDirs as a Kafka broker with one
// log dir does: the dir's path, every log in it the request names (null
// Topics: all) with its size (the bytes of its .log segments) and offset
// lag, and the volume's bytes. Kafka's lag for a current replica is its HW
// less its LEO, never below 0, so 0 in practice (a replica's HW never
// passes its LEO); only a future replica (a log moving between dirs, which
// the lab has not) lags; -1 for a log no partition is hosted on here. An
// offline dir is answered with KAFKA_STORAGE_ERROR and no topics. The
// answer is bounded by the logs this broker holds, whatever the request
// names.
func (b *Broker) handleDescribeLogDirs(req *kmsg.DescribeLogDirsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir = b.dir.Path()
	if abs, err := filepath.Abs(dir.Dir); err == nil {
		dir.Dir = abs
	}
	dir.TotalBytes, dir.UsableBytes = volumeBytes(dir.Dir)
	if err := b.dir.Offline(); err != nil {
		dir.ErrorCode = kerr.KafkaStorageError.Code
		resp.Dirs = append(resp.Dirs, dir)
		return resp
	}
	var want map[storage.TopicPartition]bool
	if req.Topics != nil {
		want = make(map[storage.TopicPartition]bool)
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				want[storage.TopicPartition{Topic: t.Topic, Partition: p}] = true
			}
		}
	}
	for _, l := range b.dir.Logs() { // sorted by topic and partition
		tp := l.TopicPartition()
		if want != nil && !want[tp] {
			continue
		}
		if n := len(dir.Topics); n == 0 || dir.Topics[n-1].Topic != tp.Topic {
			dt := kmsg.NewDescribeLogDirsResponseDirTopic()
			dt.Topic = tp.Topic
			dir.Topics = append(dir.Topics, dt)
		}
		dp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
		dp.Partition, dp.Size, dp.OffsetLag = tp.Partition, l.Size(), -1
		if r := b.replicaFor(tp.Topic, tp.Partition); r != nil {
			dp.OffsetLag = max(r.HighWatermark()-l.LogEndOffset(), 0)
		}
		dt := &dir.Topics[len(dir.Topics)-1]
		dt.Partitions = append(dt.Partitions, dp)
	}
	resp.Dirs = append(resp.Dirs, dir)
	return resp
}

// Kafka's DescribeClusterRequest EndpointType values (KIP-919).
const (
	endpointBroker     = 1
	endpointController = 2
)

// handleDescribeCluster answers DescribeCluster as a KRaft broker does.
// The controller id: a KRaft broker cannot point a client at the
// controller quorum, so Kafka names a random alive broker (which forwards
// admin requests to the controller); the lab names the lowest unfenced
// one, as its Metadata responses do, so both agree and tests are exact.
// The lab's controller is node 0, a dedicated controller with no Kafka
// listener: a request for the controller endpoint type is answered with
// MISMATCHED_ENDPOINT_TYPE, as a broker's listener answers it. Brokers
// have no rack.
func (b *Broker) handleDescribeCluster(req *kmsg.DescribeClusterRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.EndpointType = endpointBroker
	if req.Version >= 1 && req.EndpointType != endpointBroker {
		resp.ErrorCode = kerr.MismatchedEndpointType.Code
		msg := "the request was sent to a broker endpoint, not to a controller endpoint"
		if req.EndpointType != endpointController {
			resp.ErrorCode = kerr.UnsupportedEndpointType.Code
			msg = "unknown endpoint type " + strconv.Itoa(int(req.EndpointType))
		}
		resp.ErrorMessage = &msg
		return resp
	}
	b.mu.Lock()
	md := b.metadata
	b.mu.Unlock()
	resp.ClusterID, resp.ControllerID = ClusterID, -1
	for _, br := range md.Brokers {
		if br.Fenced && !req.IncludeFencedBrokers {
			continue
		}
		host, port, err := net.SplitHostPort(br.Listener)
		if err != nil {
			continue
		}
		p, _ := strconv.Atoi(port)
		db := kmsg.NewDescribeClusterResponseBroker()
		db.NodeID, db.Host, db.Port, db.IsFenced = br.ID, host, int32(p), br.Fenced
		resp.Brokers = append(resp.Brokers, db)
		if resp.ControllerID < 0 && !br.Fenced {
			resp.ControllerID = br.ID
		}
	}
	return resp
}

// handleDescribeTopicPartitions answers DescribeTopicPartitions (KIP-966)
// as Kafka does: the named topics (none: every topic), sorted by name and
// from the cursor on, each partition with its leader, leader epoch,
// replicas, ISR, eligible leader replicas and offline replicas, at most
// min(ResponsePartitionLimit, MaxDescribePartitions) partitions, and a
// NextCursor where the next page starts. The last known ELR is the
// controller's (Partition.LastKnownELR). A named topic that does not exist gets
// UNKNOWN_TOPIC_OR_PARTITION; a cursor outside the named topics, or with
// a negative partition, INVALID_REQUEST for every named topic.
func (b *Broker) handleDescribeTopicPartitions(req *kmsg.DescribeTopicPartitionsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	b.mu.Lock()
	md := b.metadata
	b.mu.Unlock()

	var names []string
	if len(req.Topics) == 0 {
		for _, t := range md.Topics {
			names = append(names, t.Name)
		}
	} else {
		for _, t := range req.Topics {
			names = append(names, t.Topic)
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)

	start := int32(0)
	if c := req.Cursor; c != nil {
		if c.Partition < 0 || len(req.Topics) > 0 && !slices.Contains(names, c.Topic) {
			for _, name := range names {
				rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
				rt.Topic, rt.ErrorCode = &name, kerr.InvalidRequest.Code
				resp.Topics = append(resp.Topics, rt)
			}
			return resp
		}
		i, _ := slices.BinarySearch(names, c.Topic)
		names = names[i:]
		if len(names) > 0 && names[0] == c.Topic {
			start = c.Partition
		}
	}

	limit := int(req.ResponsePartitionLimit)
	if limit <= 0 || limit > MaxDescribePartitions {
		limit = MaxDescribePartitions
	}
	for i, name := range names {
		if i > 0 {
			start = 0
		}
		t := md.Topic(name)
		if t == nil {
			if len(req.Topics) > 0 {
				rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
				rt.Topic, rt.ErrorCode = &name, kerr.UnknownTopicOrPartition.Code
				resp.Topics = append(resp.Topics, rt)
			}
			continue
		}
		if limit == 0 { // the page is full: the next starts at this topic
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: 0}
			break
		}
		rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
		rt.Topic, rt.TopicID = &name, t.ID
		parts := slices.SortedFunc(slices.Values(t.Partitions), func(a, b controller.Partition) int { return cmp.Compare(a.Partition, b.Partition) })
		for _, p := range parts {
			if p.Partition < start {
				continue
			}
			if limit == 0 {
				resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: p.Partition}
				break
			}
			rt.Partitions = append(rt.Partitions, describedPartition(md, p))
			limit--
		}
		resp.Topics = append(resp.Topics, rt)
		if resp.NextCursor != nil {
			break
		}
	}
	return resp
}

// describedPartition is p as DescribeTopicPartitions reports it.
func describedPartition(md controller.Metadata, p controller.Partition) kmsg.DescribeTopicPartitionsResponseTopicPartition {
	dp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
	dp.Partition, dp.LeaderID, dp.LeaderEpoch = p.Partition, p.Leader, p.LeaderEpoch
	dp.Replicas, dp.ISR = slices.Clone(p.Replicas), slices.Clone(p.ISR)
	dp.EligibleLeaderReplicas = append([]int32{}, p.ELR...)
	dp.LastKnownELR = append([]int32{}, p.LastKnownELR...)
	dp.OfflineReplicas = []int32{}
	if p.Leader < 0 {
		dp.ErrorCode = kerr.LeaderNotAvailable.Code
	}
	for _, id := range p.Replicas {
		if !brokerLive(md, id) {
			dp.OfflineReplicas = append(dp.OfflineReplicas, id)
		}
	}
	return dp
}
