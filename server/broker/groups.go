package broker

import (
	"context"
	"fmt"
	"hash/fnv"
	"net"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"tidemark/server/coordinator"
	"tidemark/server/wire"
)

// Coordinators gives a broker the lab's group coordinator and producer-id
// manager. The Controller in a broker's Config implements it when the lab
// runs one; without it, group requests and InitProducerId answer
// COORDINATOR_NOT_AVAILABLE.
type Coordinators interface {
	Coordinator() *coordinator.Coordinator
}

func (b *Broker) coordinator() *coordinator.Coordinator {
	if c, ok := b.cfg.Controller.(Coordinators); ok {
		return c.Coordinator()
	}
	return nil
}

// coordinatorFor is the broker that coordinates a group: FNV-1a of the
// group id over the unfenced brokers, sorted by id (Kafka hashes the group
// id onto a __consumer_offsets partition and answers its leader). -1 when
// no broker is unfenced.
func (b *Broker) coordinatorFor(key string) (id int32, host string, port int32) {
	b.mu.Lock()
	md := b.metadata
	b.mu.Unlock()
	var live []int32
	addrs := map[int32]string{}
	for _, br := range md.Brokers { // sorted by id
		if !br.Fenced {
			live = append(live, br.ID)
			addrs[br.ID] = br.Listener
		}
	}
	if len(live) == 0 {
		return -1, "", -1
	}
	h := fnv.New32a()
	h.Write([]byte(key))
	id = live[h.Sum32()%uint32(len(live))]
	host, p, err := net.SplitHostPort(addrs[id])
	if err != nil {
		return -1, "", -1
	}
	n, _ := strconv.Atoi(p)
	return id, host, int32(n)
}

// groupError is the error a group request to this broker gets before the
// coordinator sees it: COORDINATOR_NOT_AVAILABLE without one, NOT_COORDINATOR
// if another broker coordinates the group.
func (b *Broker) groupError(group string) (*coordinator.Coordinator, *kerr.Error) {
	c := b.coordinator()
	if c == nil {
		return nil, kerr.CoordinatorNotAvailable
	}
	if id, _, _ := b.coordinatorFor(group); id != b.cfg.ID {
		return nil, kerr.NotCoordinator
	}
	return c, nil
}

func (b *Broker) handleFindCoordinator(req *kmsg.FindCoordinatorRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	keys := req.CoordinatorKeys
	if req.Version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	for _, key := range keys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key, c.NodeID, c.Port = key, -1, -1
		var err error
		switch {
		case req.CoordinatorType != 0 && req.CoordinatorType != 1:
			err = fmt.Errorf("%w: coordinator type %d: 0 (group) or 1 (transaction)", kerr.InvalidRequest, req.CoordinatorType)
		case b.coordinator() == nil:
			err = kerr.CoordinatorNotAvailable
		default:
			c.NodeID, c.Host, c.Port = b.coordinatorFor(key)
			if c.NodeID < 0 {
				err = kerr.CoordinatorNotAvailable
			}
		}
		if err != nil {
			c.ErrorCode, c.ErrorMessage = errorCode(err), errMessage(err)
			c.NodeID, c.Host, c.Port = -1, "", -1
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	if req.Version < 4 {
		c := resp.Coordinators[0]
		resp.ErrorCode, resp.ErrorMessage, resp.NodeID, resp.Host, resp.Port = c.ErrorCode, c.ErrorMessage, c.NodeID, c.Host, c.Port
		resp.Coordinators = nil
	}
	return resp
}

func clientInfo(rc *wire.RequestContext) (clientID, host string) {
	if rc.Header.ClientID != nil {
		clientID = *rc.Header.ClientID
	}
	if rc.RemoteAddr != nil {
		host, _, _ = net.SplitHostPort(rc.RemoteAddr.String())
		host = "/" + host
	}
	return clientID, host
}

func (b *Broker) handleJoinGroup(ctx context.Context, rc *wire.RequestContext, req *kmsg.JoinGroupRequest) kmsg.Response {
	c, err := b.groupError(req.Group)
	if err != nil {
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode, resp.Generation = err.Code, -1
		return resp
	}
	id, host := clientInfo(rc)
	return c.JoinGroup(ctx, req, id, host)
}

func (b *Broker) handleSyncGroup(ctx context.Context, req *kmsg.SyncGroupRequest) kmsg.Response {
	c, err := b.groupError(req.Group)
	if err != nil {
		resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode = err.Code
		return resp
	}
	return c.SyncGroup(ctx, req)
}

func (b *Broker) handleHeartbeat(req *kmsg.HeartbeatRequest) kmsg.Response {
	c, err := b.groupError(req.Group)
	if err != nil {
		resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = err.Code
		return resp
	}
	return c.Heartbeat(req)
}

func (b *Broker) handleLeaveGroup(req *kmsg.LeaveGroupRequest) kmsg.Response {
	c, err := b.groupError(req.Group)
	if err != nil {
		resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
		resp.ErrorCode = err.Code
		return resp
	}
	return c.LeaveGroup(req)
}

func (b *Broker) handleOffsetCommit(req *kmsg.OffsetCommitRequest) kmsg.Response {
	c, err := b.groupError(req.Group)
	if err != nil {
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, err.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	return c.OffsetCommit(req)
}

func (b *Broker) handleOffsetFetch(req *kmsg.OffsetFetchRequest) kmsg.Response {
	if req.Version < 8 {
		c, err := b.groupError(req.Group)
		if err != nil {
			resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
			resp.ErrorCode = err.Code
			for _, t := range req.Topics {
				rt := kmsg.NewOffsetFetchResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetFetchResponseTopicPartition()
					rp.Partition, rp.Offset, rp.LeaderEpoch, rp.ErrorCode = p, -1, -1, err.Code
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
			return resp
		}
		return c.OffsetFetch(req)
	}
	// v8+: groups this broker coordinates are answered by the coordinator,
	// the others carry NOT_COORDINATOR.
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	for _, g := range req.Groups {
		c, err := b.groupError(g.Group)
		if err != nil {
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group, rg.ErrorCode = g.Group, err.Code
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		one := *req
		one.Groups = []kmsg.OffsetFetchRequestGroup{g}
		resp.Groups = append(resp.Groups, c.OffsetFetch(&one).Groups...)
	}
	return resp
}

func (b *Broker) handleDescribeGroups(req *kmsg.DescribeGroupsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, g := range req.Groups {
		c, err := b.groupError(g)
		if err != nil {
			rg := kmsg.NewDescribeGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, err.Code
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		one := *req
		one.Groups = []string{g}
		resp.Groups = append(resp.Groups, c.DescribeGroups(&one).Groups...)
	}
	return resp
}

// handleListGroups lists the groups this broker coordinates, as each Kafka
// broker does; clients ask every broker and merge.
func (b *Broker) handleListGroups(req *kmsg.ListGroupsRequest) kmsg.Response {
	c := b.coordinator()
	if c == nil {
		resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	}
	resp := c.ListGroups(req)
	mine := resp.Groups[:0]
	for _, g := range resp.Groups {
		if id, _, _ := b.coordinatorFor(g.Group); id == b.cfg.ID {
			mine = append(mine, g)
		}
	}
	resp.Groups = mine
	return resp
}

func (b *Broker) handleInitProducerID(req *kmsg.InitProducerIDRequest) kmsg.Response {
	c := b.coordinator()
	if c == nil {
		resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
		resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = kerr.CoordinatorNotAvailable.Code, -1, -1
		return resp
	}
	return c.InitProducerID(req)
}
