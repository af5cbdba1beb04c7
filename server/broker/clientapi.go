package broker

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kmsg"

	"tidemark/server/wire"
)

// clientAPIVersions lists the APIs Kafka clients need beyond producing and
// fetching: the admin APIs (forwarded to the controller), and exactly the
// versions implemented.
var clientAPIVersions = wire.VersionTable{
	19: {Min: 0, Max: 7}, // CreateTopics
	20: {Min: 0, Max: 6}, // DeleteTopics
	32: {Min: 0, Max: 4}, // DescribeConfigs
	33: {Min: 0, Max: 2}, // AlterConfigs
	44: {Min: 0, Max: 1}, // IncrementalAlterConfigs
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
	}
	return nil, errors.New("no handler for " + kmsg.NameForKey(req.Key()))
}
