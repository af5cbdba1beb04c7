package cluster

import (
	"fmt"

	"tidemark/events"
	"tidemark/replication/pipeline"
	"tidemark/server/broker"
	"tidemark/server/controller"
	"tidemark/storage"
)

// pipelineLink carries pipeline partitions' messages between brokers over
// the lab's links, as raftLink carries Raft's: a message crossing a cut
// link (either way: an ack goes back over the link the other way), or to
// a broker that is not running, is lost. Delivery is in the sender's call,
// so a paused lab's steps stay exact. Each message sent, delivered or not,
// is counted by its kind ("pipeline-write", "pipeline-ack") under
// ProtocolPipeline in ReplicationMessages.
type pipelineLink struct{ c *Cluster }

// SendPipeline delivers one pipeline message from broker from to broker to.
func (l pipelineLink) SendPipeline(from, to int32, tp storage.TopicPartition, msg pipeline.Message) error {
	l.c.links.add(controller.ProtocolPipeline, msg.Kind.String())
	kind := events.KindPipelineAck
	w := events.Wire{From: from, To: to, HW: msg.Acked}
	if msg.Kind == pipeline.KindWrite {
		kind = events.KindPipelineWrite
		w = events.Wire{From: from, To: to, FetchOffset: msg.BaseOffset, Records: int(msg.EndOffset - msg.BaseOffset)}
	}
	b, err := raftLink(l).reach(from, to)
	w.Lost = err != nil
	l.c.publishMessage(kind, from, w, func(e *events.Event) { e.Topic, e.Partition = tp.Topic, tp.Partition })
	if err != nil {
		return fmt.Errorf("%w: %v", broker.ErrPipelineUnreachable, err)
	}
	return b.ReceivePipeline(from, tp, msg)
}
