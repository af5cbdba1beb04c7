package cluster

import (
	"maps"
	"sync"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"tidemark/server/controller"
)

// Kinds of replication message the link counters tell apart. Raft's are
// its message types' own names (raftpb.MessageType, e.g. "MsgApp").
const (
	MessageFetchRequest  = "FetchRequest"
	MessageFetchResponse = "FetchResponse"
)

// linkCounts counts the replication messages the lab's links carry, by the
// replication protocol they serve and their kind: a follower's Fetch and
// the leader's answer for isr partitions, Raft's messages for quorum ones.
// A message put on a cut link counts (it was sent, and lost). Heartbeats
// are left out: Raft's MsgHeartbeat and MsgHeartbeatResp keep a leader's
// lease whatever the load, and a broker's heartbeats to the controller
// serve every protocol alike. Safe for concurrent use.
type linkCounts struct {
	mu sync.Mutex
	n  map[controller.ReplicationProtocol]map[string]int64
}

func (lc *linkCounts) add(p controller.ReplicationProtocol, kind string) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lc.n == nil {
		lc.n = map[controller.ReplicationProtocol]map[string]int64{}
	}
	if lc.n[p] == nil {
		lc.n[p] = map[string]int64{}
	}
	lc.n[p][kind]++
}

// ReplicationMessages returns how many replication messages the lab's
// links have carried since the cluster opened, by protocol and kind (a
// copy; empty before any). Heartbeats are not counted.
func (c *Cluster) ReplicationMessages() map[controller.ReplicationProtocol]map[string]int64 {
	c.links.mu.Lock()
	defer c.links.mu.Unlock()
	out := make(map[controller.ReplicationProtocol]map[string]int64, len(c.links.n))
	for p, m := range c.links.n {
		out[p] = maps.Clone(m)
	}
	return out
}

// countRaft counts one Raft message by its type; heartbeats are not.
func (lc *linkCounts) countRaft(msg []byte) {
	var m raftpb.Message
	if m.Unmarshal(msg) != nil {
		return // not a Raft message: the receiver refuses it
	}
	switch m.Type {
	case raftpb.MsgHeartbeat, raftpb.MsgHeartbeatResp:
		return
	}
	lc.add(controller.ProtocolQuorum, m.Type.String())
}

// fetchLink is one broker's view of the network (broker.Network) that
// counts its follower fetches: a broker asks Allowed once per Fetch it
// sends (from itself to a leader) and once per answer it reads (from the
// leader to itself), and only its fetcher asks (fetcher.go). Only isr
// partitions are fetched: Raft replicates quorum ones. A protocol that
// sends other messages between brokers counts them where it sends them,
// as raftLink does, not by asking Allowed.
type fetchLink struct {
	c      *Cluster
	net    *Network
	counts *linkCounts
	id     int32
}

// Allowed counts the message and reports whether it crosses.
func (l fetchLink) Allowed(from, to int32) bool {
	switch l.id {
	case from:
		l.counts.add(controller.ProtocolISR, MessageFetchRequest)
	case to:
		l.counts.add(controller.ProtocolISR, MessageFetchResponse)
	}
	return l.net.Allowed(from, to)
}

// Delay is the network's.
func (l fetchLink) Delay(from, to int32) time.Duration { return l.net.Delay(from, to) }

// Carry puts one leg of a stepped fetch on the delay line
// (Cluster.sendDelayed).
func (l fetchLink) Carry(from, to int32, arrive func(ok bool)) bool {
	return l.c.sendDelayed(from, to, arrive)
}
