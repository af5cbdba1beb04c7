package cluster

import (
	"errors"

	"tidemark/storage"
)

// raftLink carries quorum partitions' Raft messages between brokers over
// the lab's links: a message crossing a cut link, or to a broker that is
// not running, is lost, as a fetch would be. Messages are handed over as
// their encoded bytes, in the sender's call (the lab steps stay exact).
type raftLink struct{ c *Cluster }

var (
	errLinkCut    = errors.New("the link is cut")
	errBrokerDown = errors.New("the broker is not running")
)

// SendRaft delivers one encoded Raft message from broker from to broker to.
func (l raftLink) SendRaft(from, to int32, tp storage.TopicPartition, msg []byte) error {
	l.c.links.countRaft(msg) // sent, whether or not it arrives
	if !l.c.network.Allowed(from, to) {
		return errLinkCut
	}
	b := l.c.Broker(to)
	if b == nil {
		return errBrokerDown
	}
	return b.ReceiveRaft(from, tp, msg)
}
