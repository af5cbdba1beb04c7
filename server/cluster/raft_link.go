package cluster

import (
	"errors"

	"tidemark/server/broker"
	"tidemark/storage"
)

// raftLink carries quorum partitions' Raft messages between brokers over
// the lab's links: a message crossing a cut link, or to a broker that is
// not running, is lost, as a fetch would be. Messages are handed over as
// their encoded bytes, in the sender's call (the lab steps stay exact), or
// later on a delayed link (SendRaft).
type raftLink struct{ c *Cluster }

var (
	errLinkCut    = errors.New("the link is cut")
	errBrokerDown = errors.New("the broker is not running")
)

// SendRaft delivers one encoded Raft message from broker from to broker to.
// On a link with a delay it arrives that much lab time later, as a fetch
// waits before it is sent (delayLine; it is lost if the broker stopped or
// the link was cut meanwhile, and the sender is not told).
func (l raftLink) SendRaft(from, to int32, tp storage.TopicPartition, msg []byte) error {
	l.c.links.countRaft(msg) // sent, whether or not it arrives
	if d := l.c.network.Delay(from, to); d > 0 && l.c.network.Allowed(from, to) {
		l.c.linkDelays.add(d, Link{from, to}, func() { l.deliver(from, to, tp, msg) })
		return nil
	}
	return l.deliver(from, to, tp, msg)
}

func (l raftLink) deliver(from, to int32, tp storage.TopicPartition, msg []byte) error {
	b, err := l.reach(from, to)
	if err != nil {
		return err
	}
	return b.ReceiveRaft(from, tp, msg)
}

// reach returns broker to if a message from broker from reaches it now;
// errLinkCut or errBrokerDown when the message is lost. (The pipeline's
// link uses it too.)
func (l raftLink) reach(from, to int32) (*broker.Broker, error) {
	if !l.c.network.Allowed(from, to) {
		return nil, errLinkCut
	}
	b := l.c.Broker(to)
	if b == nil {
		return nil, errBrokerDown
	}
	return b, nil
}
