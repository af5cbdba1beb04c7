package controller

import (
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/events"
	"tidemark/internal/fact"
	"tidemark/replication"
	"tidemark/replication/pipeline"
)

// A replication.protocol=pipeline partition keeps its pipeline in Kafka's
// own fields, so Metadata, the lanes and every fencing rule read it as they
// read an ISR: the pipeline is the ISR in order (head first) followed by the
// joining members (Partition.Joining: being copied, not yet complete), the
// leader is its head, the leader epoch its generation stamp. The controller
// makes every stamp, as HDFS's NameNode does (package replication/pipeline
// says why).

// pipelineOf returns p's pipeline: the ISR, then the joining members.
func pipelineOf(p *Partition) pipeline.Pipeline {
	return pipeline.Pipeline{Members: slices.Concat(p.ISR, p.Joining), Stamp: p.LeaderEpoch}
}

// setPipeline stores p's pipeline as isr and joining under stamp with
// leader (a new stamp, so a new partition epoch) and reports it: an
// election event when the head changed, else an ISR event with key and
// args that carries the new stamp as its leader epoch. Callers hold c.mu.
func (c *Controller) setPipeline(ch *change, p *Partition, isr, joining []int32, stamp, leader int32, reason string, key string, args ...any) {
	prev := p.Leader
	p.ISR, p.Joining, p.Leader, p.LeaderEpoch = isr, joining, leader, stamp
	if len(p.Joining) == 0 {
		p.Joining = nil
	}
	p.PartitionEpoch++
	ch.partition(p)
	members := pipelineOf(p).Members
	if leader != prev {
		how := fact.Word("event.word.how.pipeline", members)
		if leader == replication.NoLeader {
			how = fact.Word("event.word.offline.isr", p.ISR)
		}
		ch.evs = append(ch.evs, fact.Say(events.Event{Kind: events.KindElection, Broker: leader, Topic: p.Topic, Partition: p.Partition,
			Leader: &events.Leadership{Leader: leader, PreviousLeader: prev, LeaderEpoch: p.LeaderEpoch}, ISR: slices.Clone(p.ISR)},
			"event.election", reason, p.tp(), prev, leader, p.LeaderEpoch, how))
		return
	}
	ch.evs = append(ch.evs, fact.Say(events.Event{Kind: events.KindISR, Broker: events.NoBroker, Topic: p.Topic, Partition: p.Partition,
		Leader: &events.Leadership{Leader: leader, PreviousLeader: prev, LeaderEpoch: p.LeaderEpoch}, ISR: slices.Clone(p.ISR)},
		key, append(args, p.tp(), members, p.LeaderEpoch)...))
}

// leavePipeline takes broker id out of p's pipeline under a new stamp. A
// joining member just leaves. An ISR member leaves the survivors, and the
// first running one heads (a head fenced in the same tick leaves too); when
// none is left the last stays, offline, and the joining members are let go:
// only an ISR member is known to hold every acknowledged record. Callers
// hold c.mu.
func (c *Controller) leavePipeline(ch *change, p *Partition, id int32, reason string) {
	stamp := p.LeaderEpoch + 1
	switch {
	case slices.Contains(p.Joining, id):
		joining := slices.DeleteFunc(slices.Clone(p.Joining), func(m int32) bool { return m == id })
		c.setPipeline(ch, p, slices.Clone(p.ISR), joining, stamp, p.Leader, reason, "event.pipeline.rebuilt", id, reason)
		return
	case !slices.Contains(p.ISR, id):
		return
	}
	isr, ok := pipeline.Pipeline{Members: p.ISR}.Without(id)
	for ok && !c.live(isr.Head()) {
		var more pipeline.Pipeline
		if more, ok = isr.Without(isr.Head()); ok {
			isr = more
		}
	}
	leader, joining := isr.Head(), slices.Clone(p.Joining)
	if leader == id || !c.live(leader) { // id leaves even where it still counts as live (it registers again)
		// The last member stays: offline until it is back.
		if p.Leader == replication.NoLeader && slices.Equal(isr.Members, p.ISR) {
			return
		}
		leader, joining = replication.NoLeader, nil
	}
	c.setPipeline(ch, p, isr.Members, joining, stamp, leader, reason, "event.pipeline.rebuilt", id, reason)
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

// forgetUncleanPipelines is KIP-966 for pipelines, under the kraft-elr
// rule: broker id, back from an unclean shutdown (a crash or power loss),
// is the last member of offline pipelines, but its log may have lost
// acknowledged records, so it does not head them again alone. Their ISR is
// emptied, and once every replica is back the longest log heads
// (recoverUnclean, from the logs the brokers report): a replica discarded
// at its rejoin keeps its records until its copy arrives, so it may be it.
// Callers hold c.mu.
func (c *Controller) forgetUncleanPipelines(ch *change, id int32) {
	for _, name := range c.topicNames() {
		t := c.topics[name]
		if t.cfg.Protocol != ProtocolPipeline {
			continue
		}
		for _, p := range t.parts {
			if p.Leader != replication.NoLeader || !slices.Equal(p.ISR, []int32{id}) {
				continue
			}
			p.ISR, p.Joining = nil, nil
			p.PartitionEpoch++
			ch.partition(p)
			ch.evs = append(ch.evs, fact.Say(events.Event{Kind: events.KindISR, Broker: id, Topic: p.Topic, Partition: p.Partition},
				"event.isr.unclean-restart.offline", id, p.tp(), p.ISR, p.ELR, c.offlineWhy(t, p)))
		}
	}
}

// repairPipelines brings t's offline pipelines back when their last member
// runs again (under a new stamp), and adds broker rejoin, when it is a
// running replica outside the pipeline, at the tail of a pipeline that has
// a head as a joining member, one stamp each: HDFS's NameNode
// re-replicating an under-replicated block. Only the broker that just
// showed it runs (it registered, was unfenced or heartbeated) rejoins: one
// that crashed is not fenced until its session expires. pipeline.NoMember
// rejoins none. With backoff (the heartbeats' periodic repair, not a broker
// coming back) a partition whose last re-adds of rejoin failed waits out
// its back-off first (rejoinAllowed). Callers hold c.mu.
func (c *Controller) repairPipelinesBackoff(ch *change, t *topicState, reason string, rejoin int32, backoff bool) {
	for _, p := range t.parts {
		if head := pipelineOf(p).Head(); p.Leader == replication.NoLeader && head != pipeline.NoMember && c.live(head) {
			c.setPipeline(ch, p, slices.Clone(p.ISR), nil, p.LeaderEpoch+1, head, reason, "")
		}
		if !slices.Contains(p.Replicas, rejoin) || !c.live(rejoin) || p.Leader == replication.NoLeader {
			continue
		}
		if backoff && !c.rejoinAllowed(p, rejoin) {
			continue
		}
		if _, ok := pipelineOf(p).Rejoin(rejoin); ok {
			c.setPipeline(ch, p, slices.Clone(p.ISR), append(slices.Clone(p.Joining), rejoin), p.LeaderEpoch+1, p.Leader, reason, "event.pipeline.rejoined", rejoin)
		}
	}
}

// repairPipelines is repairPipelinesBackoff without back-off: rejoin has
// just come back (registered, unfenced), or none rejoins.
func (c *Controller) repairPipelines(ch *change, t *topicState, reason string, rejoin int32) {
	c.repairPipelinesBackoff(ch, t, reason, rejoin, false)
}

// repairAllPipelines is repairPipelines for every pipeline topic.
func (c *Controller) repairAllPipelines(ch *change, reason string, rejoin int32) {
	c.repairAllPipelinesBackoff(ch, reason, rejoin, false)
}

func (c *Controller) repairAllPipelinesBackoff(ch *change, reason string, rejoin int32, backoff bool) {
	for _, name := range c.topicNames() {
		if t := c.topics[name]; t.cfg.Protocol == ProtocolPipeline {
			c.repairPipelinesBackoff(ch, t, reason, rejoin, backoff)
		}
	}
}

// A member added back while it still cannot be reached (a link that stays
// cut) fails its first recovery and is taken out again: two stamps for
// nothing, every PipelineRepairInterval for as long as the cut lasts. The
// controller cannot tell which members the head can reach (it hears only
// each broker's own heartbeats, not the links between brokers), so instead
// of choosing it backs off: after each failed re-add the next waits twice
// as long, from 2×PipelineRepairInterval up to rejoinBackoffLimit
// replica.lag.time.max.ms (30 s at the default 3 s), and a re-add that
// catches up ends the back-off. A broker that comes back (registers, is
// unfenced) rejoins at once: its failure was its own, not a link's. The
// back-off is kept in memory: a new controller starts without it.

// rejoinBackoffLimit caps the back-off at that many
// replica.lag.time.max.ms of the topic.
const rejoinBackoffLimit = 10

type rejoinKey struct {
	topic             string
	partition, broker int32
}

// rejoinBackoff is one member's back-off: failures in a row, and the lab
// time before which it is not added back.
type rejoinBackoff struct {
	failures  int
	notBefore time.Time
}

// rejoinAllowed reports whether broker id may be added back to p's
// pipeline now (its back-off, if any, has passed). Callers hold c.mu.
func (c *Controller) rejoinAllowed(p *Partition, id int32) bool {
	b, ok := c.rejoinBackoff[rejoinKey{p.Topic, p.Partition, id}]
	return !ok || !c.now().Before(b.notBefore)
}

// rejoinFailed doubles broker id's back-off on p: a re-add of it failed
// before it caught up. Callers hold c.mu.
func (c *Controller) rejoinFailed(p *Partition, id int32) {
	if c.rejoinBackoff == nil {
		c.rejoinBackoff = map[rejoinKey]rejoinBackoff{}
	}
	k := rejoinKey{p.Topic, p.Partition, id}
	b := c.rejoinBackoff[k]
	b.failures++
	limit := max(PipelineRepairInterval, time.Duration(rejoinBackoffLimit*c.topics[p.Topic].cfg.Replication().ReplicaLagTimeMaxMs)*time.Millisecond)
	wait := limit
	if b.failures < 16 { // past that the shift would overflow; the limit holds long before
		wait = min(PipelineRepairInterval<<b.failures, limit)
	}
	b.notBefore = c.now().Add(wait)
	c.rejoinBackoff[k] = b
}

// PipelineRepairInterval is how often, at most, a broker's heartbeats have
// the controller add its running replicas back at the tail of the
// pipelines they left while it ran (a cut link): HDFS's replication
// monitor's interval (dfs.namenode.replication.interval, 3 s). A replica
// still cut off fails the new pipeline's recovery and is taken out again,
// and its next re-add backs off (rejoinBackoff).
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
	c.repairAllPipelinesBackoff(ch, fact.Word("event.word.reason.pipeline-repair"), id, true)
	return c.commit(ch)
}

// pipelineFromHead returns the partition a pipeline head reports on, after
// checking the report: STALE_BROKER_EPOCH, UNKNOWN_TOPIC_OR_PARTITION,
// INVALID_REQUEST (not a pipeline topic), FENCED_LEADER_EPOCH (an older
// stamp), NOT_LEADER_OR_FOLLOWER (not the head of the current stamp).
// Callers hold c.mu.
func (c *Controller) pipelineFromHead(topic string, partition, brokerID int32, brokerEpoch int64, stamp int32) (*Partition, error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	if b := c.brokers[brokerID]; b == nil || b.Epoch != brokerEpoch {
		return nil, fmt.Errorf("%w: broker %d sent broker epoch %d", kerr.StaleBrokerEpoch, brokerID, brokerEpoch)
	}
	t := c.topics[topic]
	if t == nil || partition < 0 || int(partition) >= len(t.parts) {
		return nil, fmt.Errorf("%w: %s-%d", kerr.UnknownTopicOrPartition, topic, partition)
	}
	p := t.parts[partition]
	switch {
	case t.cfg.Protocol != ProtocolPipeline:
		return nil, fmt.Errorf("%w: %s: %s is %s, not %s", kerr.InvalidRequest, p.tp(), ConfigReplicationProtocol, t.cfg.Protocol, ProtocolPipeline)
	case stamp < p.LeaderEpoch:
		return nil, fmt.Errorf("%w: %s: generation stamp %d is older than the current %d", kerr.FencedLeaderEpoch, p.tp(), stamp, p.LeaderEpoch)
	case stamp > p.LeaderEpoch || p.Leader != brokerID:
		return nil, fmt.Errorf("%w: %s: broker %d does not head the pipeline %v of stamp %d", kerr.NotLeaderForPartition, p.tp(), brokerID, pipelineOf(p).Members, p.LeaderEpoch)
	}
	return p, nil
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
	p, err := c.pipelineFromHead(topic, partition, brokerID, brokerEpoch, stamp)
	switch {
	case err != nil:
		return err
	case failed == brokerID || !slices.Contains(pipelineOf(p).Members, failed):
		return fmt.Errorf("%w: %s: broker %d is not another member of the pipeline %v", kerr.InvalidRequest, p.tp(), failed, pipelineOf(p).Members)
	}
	if slices.Contains(p.Joining, failed) {
		c.rejoinFailed(p, failed)
	}
	ch := newChange()
	c.leavePipeline(ch, p, failed, fact.Word("event.word.reason.pipeline-failed", brokerID, failed))
	return c.commit(ch)
}

// PipelineCaughtUp is a pipeline head's report that in generation stamp
// stamp every member has every record the pipeline's recovery agreed on
// (the tail acknowledged them): the joining members hold every
// acknowledged record and join the ISR, in pipeline order. The stamp does
// not change (the pipeline is the same). Errors as PipelineFailed.
func (c *Controller) PipelineCaughtUp(topic string, partition, brokerID int32, brokerEpoch int64, stamp int32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, err := c.pipelineFromHead(topic, partition, brokerID, brokerEpoch, stamp)
	if err != nil || len(p.Joining) == 0 {
		return err
	}
	joined := p.Joining
	for _, id := range joined {
		delete(c.rejoinBackoff, rejoinKey{p.Topic, p.Partition, id})
	}
	ch := newChange()
	c.setPipeline(ch, p, slices.Concat(p.ISR, p.Joining), nil, p.LeaderEpoch, p.Leader, "", "event.pipeline.caught-up", joined)
	return c.commit(ch)
}
