package cluster

import (
	"fmt"
	"sync/atomic"

	"tidemark/events"
	"tidemark/replication/pipeline"
	"tidemark/server/broker"
	"tidemark/storage"
)

// pipelineLink carries pipeline partitions' messages between brokers over
// the lab's links, as raftLink carries Raft's: a message crossing a cut
// link (either way: an ack goes back over the link the other way), or to
// a broker that is not running, is lost. Delivery is in the sender's call,
// so a paused lab's steps stay exact. Each message sent, delivered or not,
// is counted by kind (PipelineMessages).
type pipelineLink struct{ c *Cluster }

// pipelineCounts counts the pipeline messages sent, by kind.
type pipelineCounts struct {
	writes, acks atomic.Int64
}

// SendPipeline delivers one pipeline message from broker from to broker to.
func (l pipelineLink) SendPipeline(from, to int32, tp storage.TopicPartition, msg pipeline.Message) error {
	kind := events.KindPipelineAck
	w := events.Wire{From: from, To: to, HW: msg.Acked}
	if msg.Kind == pipeline.KindWrite {
		kind = events.KindPipelineWrite
		l.c.pipelineSent.writes.Add(1)
		w = events.Wire{From: from, To: to, FetchOffset: msg.BaseOffset, Records: int(msg.EndOffset - msg.BaseOffset)}
	} else {
		l.c.pipelineSent.acks.Add(1)
	}
	b, err := raftLink(l).reach(from, to)
	w.Lost = err != nil
	l.c.publishMessage(kind, from, w, func(e *events.Event) { e.Topic, e.Partition = tp.Topic, tp.Partition })
	if err != nil {
		return fmt.Errorf("%w: %v", broker.ErrPipelineUnreachable, err)
	}
	return b.ReceivePipeline(from, tp, msg)
}

// PipelineMessages returns how many pipeline messages the lab's brokers
// have sent since it opened: writes (forwarded records and recovery
// writes) and acks. Divided by the records committed, it is the "messages
// sent per committed record" a comparison reports.
func (c *Cluster) PipelineMessages() (writes, acks int64) {
	return c.pipelineSent.writes.Load(), c.pipelineSent.acks.Load()
}
