package wire

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// unservedAnswer answers a request of an API the listener does not serve
// whose response has no top-level error code at the version sent (kafka-go
// sends such APIs at v0 without looking at ApiVersions): the response names
// each item of the request with UNSUPPORTED_VERSION, so the client reports
// that instead of a closed connection. It returns nil for APIs not listed
// here; those connections are closed, as before.
func unservedAnswer(req kmsg.Request) kmsg.Response {
	code := kerr.UnsupportedVersion.Code
	switch req := req.(type) {
	case *kmsg.ElectLeadersRequest:
		resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewElectLeadersResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.AlterReplicaLogDirsRequest:
		resp := req.ResponseKind().(*kmsg.AlterReplicaLogDirsResponse)
		for _, d := range req.Dirs {
			for _, t := range d.Topics {
				rt := kmsg.NewAlterReplicaLogDirsResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewAlterReplicaLogDirsResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p, code
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
		}
		return resp
	case *kmsg.DescribeProducersRequest:
		resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewDescribeProducersResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewDescribeProducersResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.DescribeTransactionsRequest:
		resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
		for _, id := range req.TransactionalIDs {
			s := kmsg.NewDescribeTransactionsResponseTransactionState()
			s.TransactionalID, s.ErrorCode, s.ProducerID = id, code, -1
			resp.TransactionStates = append(resp.TransactionStates, s)
		}
		return resp
	case *kmsg.ConsumerGroupDescribeRequest:
		resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
		for _, g := range req.Groups {
			rg := kmsg.NewConsumerGroupDescribeResponseGroup()
			rg.Group, rg.ErrorCode = g, code
			resp.Groups = append(resp.Groups, rg)
		}
		return resp
	}
	return nil
}
