package controller

import (
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/events"
	"tidemark/i18n"
	"tidemark/replication"
	"tidemark/replication/pipeline"
)

// A replication.protocol=pipeline partition keeps its pipeline in Kafka's
// own fields, so Metadata, the lanes and every fencing rule read it as they
// read an ISR: the ISR is the pipeline in order (head first), the leader its
// head, the leader epoch its generation stamp. The controller makes every
// stamp, as HDFS's NameNode does (package replication/pipeline says why).

// pipelineOf returns p's pipeline.
func pipelineOf(p *Partition) pipeline.Pipeline {
	return pipeline.Pipeline{Members: slices.Clone(p.ISR), Stamp: p.LeaderEpoch}
}

// setPipeline stores next as p's pipeline (a new stamp, so a new partition
// epoch) and reports it: an election event when the head changed, else an
// ISR event with key and args. Callers hold c.mu.
func (c *Controller) setPipeline(ch *change, p *Partition, next pipeline.Pipeline, leader int32, reason string, key string, args ...any) {
	prev := p.Leader
	p.ISR, p.Leader, p.LeaderEpoch = next.Members, leader, next.Stamp
	p.PartitionEpoch++
	ch.partition(p)
	if leader != prev {
		how := i18n.Word("event.word.how.pipeline", next.Members)
		if leader == replication.NoLeader {
			how = i18n.Word("event.word.offline.isr", p.ISR)
		}
		ch.evs = append(ch.evs, i18n.EventMessage(events.Event{Kind: events.KindElection, Broker: leader, Topic: p.Topic, Partition: p.Partition,
			Leader: &events.Leadership{Leader: leader, PreviousLeader: prev, LeaderEpoch: p.LeaderEpoch}, ISR: slices.Clone(p.ISR)},
			"event.election", reason, p.tp(), prev, leader, p.LeaderEpoch, how))
		return
	}
	ch.evs = append(ch.evs, i18n.EventMessage(events.Event{Kind: events.KindISR, Broker: events.NoBroker, Topic: p.Topic, Partition: p.Partition,
		ISR: slices.Clone(p.ISR)}, key, append(args, p.tp(), p.ISR, p.LeaderEpoch)...))
}

// leavePipeline takes broker id out of p's pipeline under a new stamp; the
// last member stays and the partition goes offline until it is back (it
// alone has every acknowledged record). Callers hold c.mu.
func (c *Controller) leavePipeline(ch *change, p *Partition, id int32, reason string) {
	cur := pipelineOf(p)
	if !slices.Contains(cur.Members, id) {
		return
	}
	next, ok := cur.Without(id)
	// A head that is not running cannot lead either (fenced in the same
	// tick): it leaves too, and the next survivor heads.
	for ok && !c.live(next.Head()) {
		var more pipeline.Pipeline
		if more, ok = next.Without(next.Head()); ok {
			next = more
		}
	}
	next.Stamp = cur.Stamp + 1
	leader := next.Head()
	if !c.live(leader) {
		leader = replication.NoLeader // the last member stays: offline until it is back
		if p.Leader == replication.NoLeader && slices.Equal(next.Members, cur.Members) {
			return
		}
	}
	c.setPipeline(ch, p, next, leader, reason, "event.pipeline.rebuilt", id, reason)
}

// leavePipelines takes broker id out of every pipeline (fenced, or back
// from a restart: its replica may lack what the pipeline wrote meanwhile,
// and it rejoins at the tail). Callers hold c.mu.
func (c *Controller) leavePipelines(ch *change, id int32, reason string) {
	for _, name := range c.topicNames() {
		if t := c.topics[name]; t.cfg.Protocol == ProtocolPipeline {
			for _, p := range t.parts {
				c.leavePipeline(ch, p, id, reason)
			}
		}
	}
}

// repairPipelines brings t's offline pipelines back when their last member
// runs again (under a new stamp), and adds broker rejoin, when it is a
// running replica outside the pipeline, at the tail of a pipeline that has
// a head, one stamp each: HDFS's NameNode re-replicating an
// under-replicated block. Only the broker that just showed it runs (it
// registered, was unfenced or heartbeated) rejoins: one that crashed is
// not fenced until its session expires. pipeline.NoMember rejoins none.
// Callers hold c.mu.
func (c *Controller) repairPipelines(ch *change, t *topicState, reason string, rejoin int32) {
	for _, p := range t.parts {
		if head := pipelineOf(p).Head(); p.Leader == replication.NoLeader && head != pipeline.NoMember && c.live(head) {
			cur := pipelineOf(p)
			c.setPipeline(ch, p, pipeline.Pipeline{Members: cur.Members, Stamp: cur.Stamp + 1}, head, reason, "")
		}
		cur := pipelineOf(p)
		if !slices.Contains(p.Replicas, rejoin) || !c.live(rejoin) {
			continue
		}
		if next, ok := cur.Rejoin(rejoin); ok && p.Leader != replication.NoLeader {
			c.setPipeline(ch, p, next, p.Leader, reason, "event.pipeline.rejoined", rejoin)
		}
	}
}

// repairAllPipelines is repairPipelines for every pipeline topic.
func (c *Controller) repairAllPipelines(ch *change, reason string, rejoin int32) {
	for _, name := range c.topicNames() {
		if t := c.topics[name]; t.cfg.Protocol == ProtocolPipeline {
			c.repairPipelines(ch, t, reason, rejoin)
		}
	}
}

// PipelineRepairInterval is how often, at most, a broker's heartbeats have
// the controller add its running replicas back at the tail of the
// pipelines they left while it ran (a cut link): HDFS's replication
// monitor's interval (dfs.namenode.replication.interval, 3 s). A replica
// still cut off fails the new pipeline's recovery and is taken out again.
const PipelineRepairInterval = 3 * time.Second

// maybeRepairPipelines runs repairAllPipelines for broker id, at most once
// per PipelineRepairInterval of lab time per broker. Callers hold c.mu.
func (c *Controller) maybeRepairPipelines(id int32) error {
	now := c.now()
	if now.Sub(c.pipelinesRepaired[id]) < PipelineRepairInterval {
		return nil
	}
	c.pipelinesRepaired[id] = now
	ch := newChange()
	c.repairAllPipelines(ch, i18n.Word("event.word.reason.pipeline-repair"), id)
	return c.commit(ch)
}

// PipelineFailed is a pipeline head's report that failed did not answer
// (a forward that could not be delivered, or a write the tail did not
// acknowledge in time) in generation stamp stamp: the controller rebuilds
// the pipeline from the survivors under a new stamp. Accepted only from the
// head of the current stamp (an older stamp is FENCED_LEADER_EPOCH, another
// broker NOT_LEADER_OR_FOLLOWER); failed must be another member
// (INVALID_REQUEST). STALE_BROKER_EPOCH and UNKNOWN_TOPIC_OR_PARTITION as
// AlterPartition.
func (c *Controller) PipelineFailed(topic string, partition, brokerID int32, brokerEpoch int64, stamp, failed int32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(); err != nil {
		return err
	}
	if b := c.brokers[brokerID]; b == nil || b.Epoch != brokerEpoch {
		return fmt.Errorf("%w: broker %d sent broker epoch %d", kerr.StaleBrokerEpoch, brokerID, brokerEpoch)
	}
	t := c.topics[topic]
	if t == nil || partition < 0 || int(partition) >= len(t.parts) {
		return fmt.Errorf("%w: %s-%d", kerr.UnknownTopicOrPartition, topic, partition)
	}
	p := t.parts[partition]
	switch {
	case t.cfg.Protocol != ProtocolPipeline:
		return fmt.Errorf("%w: %s: %s is %s, not %s", kerr.InvalidRequest, p.tp(), ConfigReplicationProtocol, t.cfg.Protocol, ProtocolPipeline)
	case stamp < p.LeaderEpoch:
		return fmt.Errorf("%w: %s: generation stamp %d is older than the current %d", kerr.FencedLeaderEpoch, p.tp(), stamp, p.LeaderEpoch)
	case stamp > p.LeaderEpoch || p.Leader != brokerID:
		return fmt.Errorf("%w: %s: broker %d does not head the pipeline %v of stamp %d", kerr.NotLeaderForPartition, p.tp(), brokerID, p.ISR, p.LeaderEpoch)
	case failed == brokerID || !slices.Contains(p.ISR, failed):
		return fmt.Errorf("%w: %s: broker %d is not another member of the pipeline %v", kerr.InvalidRequest, p.tp(), failed, p.ISR)
	}
	ch := newChange()
	c.leavePipeline(ch, p, failed, i18n.Word("event.word.reason.pipeline-failed", brokerID, failed))
	return c.commit(ch)
}
