package broker

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kmsg"

	"tidemark/server/wire"
)

// clientAPIVersions lists the APIs Kafka clients need beyond producing and
// fetching: the admin APIs (forwarded to the controller), and exactly the
// versions implemented; the consumer-group APIs and InitProducerId, served by
// the lab's coordinator.
var clientAPIVersions = wire.VersionTable{
	19: {Min: 0, Max: 7}, // CreateTopics
	20: {Min: 0, Max: 6}, // DeleteTopics
	32: {Min: 0, Max: 4}, // DescribeConfigs
	33: {Min: 0, Max: 2}, // AlterConfigs
	44: {Min: 0, Max: 1}, // IncrementalAlterConfigs
	37: {Min: 0, Max: 3}, // CreatePartitions
	21: {Min: 0, Max: 2}, // DeleteRecords
	42: {Min: 0, Max: 2}, // DeleteGroups
	// The ACL APIs answer SECURITY_DISABLED, as Kafka without an
	// authorizer does: a client says why instead of seeing the
	// connection close.
	29: {Min: 0, Max: 3}, // DescribeAcls
	30: {Min: 0, Max: 3}, // CreateAcls
	31: {Min: 0, Max: 3}, // DeleteAcls

	8:  {Min: 0, Max: 8}, // OffsetCommit
	9:  {Min: 0, Max: 8}, // OffsetFetch: v8 batches groups
	10: {Min: 0, Max: 4}, // FindCoordinator: v4 batches keys
	11: {Min: 0, Max: 9}, // JoinGroup
	12: {Min: 0, Max: 4}, // Heartbeat
	13: {Min: 0, Max: 5}, // LeaveGroup
	14: {Min: 0, Max: 5}, // SyncGroup
	15: {Min: 0, Max: 5}, // DescribeGroups
	16: {Min: 0, Max: 4}, // ListGroups
	22: {Min: 0, Max: 4}, // InitProducerId: idempotent and transactional producers
}

func init() {
	for k, r := range txnAPIVersions { // txn.go
		clientAPIVersions[k] = wire.VersionRange{Min: r[0], Max: r[1]}
	}
}

// handleClientAPI serves the requests of clientAPIVersions.
func (b *Broker) handleClientAPI(ctx context.Context, rc *wire.RequestContext, req kmsg.Request) (kmsg.Response, error) {
	switch req := req.(type) {
	case *kmsg.CreateTopicsRequest:
		return b.handleCreateTopics(req), nil
	case *kmsg.DeleteTopicsRequest:
		return b.handleDeleteTopics(req), nil
	case *kmsg.DescribeConfigsRequest:
		return b.handleDescribeConfigs(req), nil
	case *kmsg.AlterConfigsRequest:
		return b.handleAlterConfigs(req), nil
	case *kmsg.IncrementalAlterConfigsRequest:
		return b.handleIncrementalAlterConfigs(req), nil
	case *kmsg.CreatePartitionsRequest:
		return b.handleCreatePartitions(req), nil
	case *kmsg.DeleteRecordsRequest:
		return b.handleDeleteRecords(ctx, req), nil
	case *kmsg.DeleteGroupsRequest:
		return b.handleDeleteGroups(req), nil
	case *kmsg.DescribeACLsRequest:
		return b.handleDescribeACLs(req), nil
	case *kmsg.CreateACLsRequest:
		return b.handleCreateACLs(req), nil
	case *kmsg.DeleteACLsRequest:
		return b.handleDeleteACLs(req), nil
	case *kmsg.FindCoordinatorRequest:
		return b.handleFindCoordinator(req), nil
	case *kmsg.JoinGroupRequest:
		return b.handleJoinGroup(ctx, rc, req), nil
	case *kmsg.SyncGroupRequest:
		return b.handleSyncGroup(ctx, req), nil
	case *kmsg.HeartbeatRequest:
		return b.handleHeartbeat(req), nil
	case *kmsg.LeaveGroupRequest:
		return b.handleLeaveGroup(req), nil
	case *kmsg.OffsetCommitRequest:
		return b.handleOffsetCommit(req), nil
	case *kmsg.OffsetFetchRequest:
		return b.handleOffsetFetch(req), nil
	case *kmsg.DescribeGroupsRequest:
		return b.handleDescribeGroups(req), nil
	case *kmsg.ListGroupsRequest:
		return b.handleListGroups(req), nil
	case *kmsg.InitProducerIDRequest:
		if req.TransactionalID != nil {
			return b.handleTxnInitProducerID(ctx, req), nil
		}
		return b.handleInitProducerID(req), nil
	case *kmsg.AddPartitionsToTxnRequest:
		return b.handleAddPartitionsToTxn(req), nil
	case *kmsg.AddOffsetsToTxnRequest:
		return b.handleAddOffsetsToTxn(req), nil
	case *kmsg.EndTxnRequest:
		return b.handleEndTxn(ctx, req), nil
	case *kmsg.TxnOffsetCommitRequest:
		return b.handleTxnOffsetCommit(req), nil
	case *kmsg.WriteTxnMarkersRequest:
		return b.handleWriteTxnMarkers(ctx, req), nil
	case *kmsg.DescribeLogDirsRequest:
		return b.handleDescribeLogDirs(req), nil
	case *kmsg.DescribeClusterRequest:
		return b.handleDescribeCluster(req), nil
	case *kmsg.DescribeTopicPartitionsRequest:
		return b.handleDescribeTopicPartitions(req), nil
	}
	return nil, errors.New("no handler for " + kmsg.NameForKey(req.Key()))
}
