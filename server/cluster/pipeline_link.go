package cluster

import (
	"fmt"

	"tidemark/events"
	"tidemark/i18n"
	"tidemark/replication/pipeline"
	"tidemark/server/broker"
	"tidemark/server/controller"
	"tidemark/storage"
)

// pipelineLink carries pipeline partitions' messages between brokers over
// the lab's links, as raftLink carries Raft's: a message crossing a cut
// link (either way: an ack goes back over the link the other way), or to
// a broker that is not running, is lost. On an undelayed link delivery is
// in the sender's call; on a delayed one the message waits for the delay
// in the lab's delay line (delivered by the clock's timer, or by a paused
// lab's steps, which stay exact). Each message sent, delivered or not, is
// counted by its kind ("pipeline-write", "pipeline-ack") under
// ProtocolPipeline in ReplicationMessages.
type pipelineLink struct{ c *Cluster }

// SendPipeline delivers one pipeline message from broker from to broker to,
// now or, on a delayed link, that much lab time later: then a message lost
// meanwhile (the link cut, the receiver stopped) or refused is reported to
// the sender (Broker.PipelineUndelivered), as a connection's failure
// reaches its sender late.
func (l pipelineLink) SendPipeline(from, to int32, tp storage.TopicPartition, msg pipeline.Message) error {
	l.c.links.add(controller.ProtocolPipeline, msg.Kind.String())
	kind := events.KindPipelineAck
	w := events.Wire{From: from, To: to, HW: msg.Acked}
	if msg.Kind == pipeline.KindWrite {
		kind = events.KindPipelineWrite
		w = events.Wire{From: from, To: to, FetchOffset: msg.BaseOffset, Records: int(msg.EndOffset - msg.BaseOffset)}
	}
	_, err := raftLink(l).reach(from, to)
	w.Lost = err != nil
	l.c.publishMessage(kind, from, w, func(e *events.Event) {
		e.Topic, e.Partition = tp.Topic, tp.Partition
		// The stage's label: what the message carries, in the reader's
		// language (a kind without a label of its own shows its message).
		if kind == events.KindPipelineWrite {
			*e = i18n.EventMessage(*e, "stage.msg.pipeline.write", w.Records, w.FetchOffset)
		} else {
			*e = i18n.EventMessage(*e, "stage.msg.pipeline.ack", w.HW)
		}
	})
	if d := l.c.network.Delay(from, to); d > 0 && err == nil {
		l.c.linkDelays.add(d, Link{from, to}, func() {
			if err := l.deliver(from, to, tp, msg); err != nil {
				if b := l.c.Broker(from); b != nil {
					b.PipelineUndelivered(tp, msg, err)
				}
			}
		})
		return nil
	}
	return l.deliver(from, to, tp, msg)
}

// deliver hands msg to broker to if it reaches it now.
func (l pipelineLink) deliver(from, to int32, tp storage.TopicPartition, msg pipeline.Message) error {
	b, err := raftLink(l).reach(from, to)
	if err != nil {
		return fmt.Errorf("%w: %v", broker.ErrPipelineUnreachable, err)
	}
	return b.ReceivePipeline(from, tp, msg)
}
