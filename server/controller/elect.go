package controller

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/events"
	"tidemark/internal/fact"
	"tidemark/replication"
	"tidemark/replication/pipeline"
)

// leaveReplicaSets removes fenced broker id from every ISR and moves its
// leaderships. The ISR never becomes empty: a last member stays in it, and a
// partition whose last ISR member was its leader goes offline unless an
// unclean election is allowed.
//
// Under the kraft-elr rule the last member leaves too (the ISR may be
// empty), and a member leaving an ISR that is then below
// min.insync.replicas joins the ELR (updateELR).
//
// cause is why it leaves (fenced on request, its session expired, or it
// restarted as a new incarnation): the ISR events carry it.
func (c *Controller) leaveReplicaSets(ch *change, id int32, reason string, cause events.ISRCause) {
	left := []events.ISRChange{{Cause: cause, Broker: id}}
	for _, name := range c.topicNames() {
		t := c.topics[name]
		if t.cfg.Protocol == ProtocolQuorum {
			continue // Raft elects its leaders (QuorumLeader)
		}
		if t.cfg.Protocol == ProtocolPipeline {
			for _, p := range t.parts {
				c.leavePipeline(ch, p, id, reason)
			}
			continue
		}
		for _, p := range t.parts {
			inISR := slices.Contains(p.ISR, id)
			if !inISR && p.Leader != id {
				continue
			}
			isr := p.ISR
			if inISR && (len(isr) > 1 || c.rule.ELR()) {
				isr = slices.DeleteFunc(slices.Clone(isr), func(r int32) bool { return r == id })
			}
			if p.Leader == id && len(isr) != len(p.ISR) {
				c.elect(ch, t, p, isr, reason, left...)
			} else if p.Leader == id {
				c.elect(ch, t, p, isr, reason) // it stays the ISR's last member
			} else if len(isr) != len(p.ISR) {
				c.setISR(ch, t, p, isr, id, left, "event.isr.removed", p.tp())
			}
		}
	}
}

// handOverLeaderships moves each leadership of a broker that restarted
// within its session to the next live ISR member in AR order; where it is
// the only one, it leads again under a new leader epoch.
func (c *Controller) handOverLeaderships(ch *change, id int32, reason string) {
	for _, name := range c.topicNames() {
		t := c.topics[name]
		if t.cfg.Protocol != ProtocolISR {
			continue // Raft elects; a restarted pipeline member left its pipelines (reRegister)
		}
		for _, p := range t.parts {
			if p.Leader != id {
				continue
			}
			next := id
			for _, r := range p.Replicas {
				if r != id && slices.Contains(p.ISR, r) && c.live(r) {
					next = r
					break
				}
			}
			prev := p.Leader
			p.Leader = next
			p.LeaderEpoch++
			p.PartitionEpoch++
			ch.partition(p)
			ch.evs = append(ch.evs, fact.Say(events.Event{Kind: events.KindElection, Broker: next, Topic: p.Topic, Partition: p.Partition,
				Leader: &events.Leadership{Leader: next, PreviousLeader: prev, LeaderEpoch: p.LeaderEpoch},
				ISR:    slices.Clone(p.ISR)},
				"event.election", reason, p.tp(), prev, next, p.LeaderEpoch, fact.Word("event.word.how.clean")))
		}
	}
}

// electOffline elects a leader for every offline partition that can have
// one: a live ISR member (clean) or, where the topic allows it, any live
// replica (unclean).
func (c *Controller) electOffline(ch *change, reason string) {
	for _, name := range c.topicNames() {
		c.electOfflineIn(ch, c.topics[name], reason)
	}
}

// electOfflineIn is electOffline for one topic.
func (c *Controller) electOfflineIn(ch *change, t *topicState, reason string) {
	switch t.cfg.Protocol {
	case ProtocolQuorum:
		return
	case ProtocolPipeline:
		c.repairPipelines(ch, t, reason, pipeline.NoMember)
		return
	}
	for _, p := range t.parts {
		if p.Leader == replication.NoLeader {
			c.elect(ch, t, p, p.ISR, reason)
		}
	}
}

// elect gives p a leader chosen from isr, the ISR it should have: the first
// live member in AR order (clean). If there is none and the topic has
// unclean.leader.election.enable, the first live replica in AR order leads
// with itself as the whole ISR (unclean: records only the old ISR had are
// lost). Otherwise p is offline (leader -1) with isr. A leader change bumps
// the leader epoch; any change bumps the partition epoch.
//
// Under the kraft-elr rule a live ELR member is next in line after the ISR
// (a clean election: it holds every committed record), and a partition with
// neither an ISR nor an ELR is recovered when every replica is back
// (recoverUnclean).
//
// changes, when given, say why isr differs from p's ISR (see setISR); the
// election's event carries them too.
func (c *Controller) elect(ch *change, t *topicState, p *Partition, isr []int32, reason string, changes ...events.ISRChange) {
	old := p.ISR
	leader, unclean, fromELR := replication.NoLeader, false, false
	for _, r := range p.Replicas {
		if slices.Contains(isr, r) && c.live(r) {
			leader = r
			break
		}
	}
	if leader == replication.NoLeader && c.rule.ELR() {
		for _, r := range p.Replicas {
			if slices.Contains(p.ELR, r) && !slices.Contains(isr, r) && c.live(r) {
				leader, fromELR, isr = r, true, append(slices.Clone(isr), r)
				break
			}
		}
	}
	// Kafka 4.1 (PartitionChangeBuilder.electAnyLeader, canElectLastKnownLeader):
	// with the ISR and ELR empty the last known leader leads again once it
	// is unfenced (KAFKA-19522), before any unclean election and whether or
	// not the topic allows one; like an unclean election it becomes the
	// whole ISR, so records only the others held are lost.
	lastKnown := false
	if leader == replication.NoLeader && c.rule == FencingKRaftELR && len(isr) == 0 && len(p.ELR) == 0 &&
		len(p.LastKnownELR) == 1 && c.live(p.LastKnownELR[0]) {
		leader, unclean, lastKnown, isr = p.LastKnownELR[0], true, true, []int32{p.LastKnownELR[0]}
	}
	if leader == replication.NoLeader && t.cfg.UncleanLeaderElection {
		for _, r := range p.Replicas {
			if c.live(r) {
				leader, unclean, isr = r, true, []int32{r}
				break
			}
		}
	}
	if leader == p.Leader {
		if !slices.Equal(isr, p.ISR) {
			c.setISR(ch, t, p, isr, events.NoBroker, changes, "event.isr.changed", reason)
		}
		if leader == replication.NoLeader {
			c.recoverUnclean(ch, t, p, reason)
		}
		return
	}
	prev := p.Leader
	p.Leader = leader
	p.LeaderEpoch++
	p.PartitionEpoch++
	p.ISR = slices.Clone(isr)
	if unclean {
		p.ELR = nil
	}
	c.updateELR(t, p, prev, old)
	ch.partition(p)
	key, how := "event.election", fact.Word("event.word.how.clean")
	switch {
	case lastKnown:
		how = fact.Word("event.word.how.last-known", leader)
	case unclean:
		how = fact.Word("event.word.how.unclean")
	case fromELR:
		how = fact.Word("event.word.how.elr", leader)
	case leader == replication.NoLeader:
		how = c.offlineWhy(t, p)
		if !t.cfg.UncleanLeaderElection && !c.rule.ELR() {
			key = "event.election.unclean-off"
		}
	}
	ch.evs = append(ch.evs, fact.Say(events.Event{Kind: events.KindElection, Broker: leader, Topic: p.Topic, Partition: p.Partition,
		Leader: &events.Leadership{Leader: leader, PreviousLeader: prev, LeaderEpoch: p.LeaderEpoch, Unclean: unclean, LastKnown: lastKnown},
		ISR:    slices.Clone(p.ISR), ELR: slices.Clone(p.ELR), ISRChanges: toELR(changes, p.ELR)},
		key, reason, p.tp(), prev, leader, p.LeaderEpoch, how))
	if leader == replication.NoLeader {
		c.recoverUnclean(ch, t, p, reason)
	}
}

// setISR changes p's ISR (bumping the partition epoch), keeps its ELR in
// line, and reports it with broker as the broker concerned: the message
// key with args, followed by why (changes, as the rules or the controller
// decided them, with each leaver's move to the ELR filled in), the ISR,
// the ELR and the partition epoch.
func (c *Controller) setISR(ch *change, t *topicState, p *Partition, isr []int32, broker int32, changes []events.ISRChange, key string, args ...any) {
	old := p.ISR
	p.ISR = slices.Clone(isr)
	c.updateELR(t, p, p.Leader, old)
	p.PartitionEpoch++
	ch.partition(p)
	changes = toELR(changes, p.ELR)
	elr := ""
	if len(p.ELR) > 0 {
		elr = fact.Word("event.word.elr", p.ELR)
	}
	ch.evs = append(ch.evs, fact.Say(events.Event{Kind: events.KindISR, Broker: broker, Topic: p.Topic, Partition: p.Partition,
		ISR: slices.Clone(p.ISR), ELR: slices.Clone(p.ELR), ISRChanges: changes},
		key, append(args, fact.ISRCause(changes), fact.ISRToELR(changes), p.ISR, elr, p.PartitionEpoch)...))
}

// toELR returns a copy of changes with ToELR set on each leaver now in
// elr, the partition's ELR after the change (nil for no changes).
func toELR(changes []events.ISRChange, elr []int32) []events.ISRChange {
	changes = slices.Clone(changes)
	for i := range changes {
		changes[i].ToELR = !changes[i].Joined && slices.Contains(elr, changes[i].Broker)
	}
	return changes
}

// AlterPartition is a leader's ISR proposal (Kafka's AlterPartition). It is
// accepted only from the partition's current leader (else
// NOT_LEADER_OR_FOLLOWER, which kerr still calls NOT_LEADER_FOR_PARTITION) in
// its current leader epoch (an older one is FENCED_LEADER_EPOCH: a zombie)
// and current broker epoch (STALE_BROKER_EPOCH), built on the current
// partition epoch (INVALID_UPDATE_VERSION). The new ISR must hold the leader,
// lie within the AR without duplicates (INVALID_REQUEST) and name no fenced
// broker (INELIGIBLE_REPLICA). req.BrokerID, when it disagrees with brokerID,
// is INVALID_REQUEST. Accepted: the ISR is stored with the partition epoch
// bumped, and the response carries the new ISR and epochs. Rejected: Err is
// set and the epochs and ISR are the current ones, when the partition exists.
func (c *Controller) AlterPartition(topic string, partition int32, brokerID int32, brokerEpoch int64, req replication.AlterPartitionRequest) replication.AlterPartitionResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(); err != nil {
		return replication.AlterPartitionResponse{Err: err}
	}
	if b := c.brokers[brokerID]; b == nil || b.Epoch != brokerEpoch {
		cur := int64(-1)
		if b != nil {
			cur = b.Epoch
		}
		return replication.AlterPartitionResponse{Err: fmt.Errorf("%w: broker %d sent broker epoch %d, the current one is %d",
			kerr.StaleBrokerEpoch, brokerID, brokerEpoch, cur)}
	}
	t := c.topics[topic]
	if t == nil || partition < 0 || int(partition) >= len(t.parts) {
		return replication.AlterPartitionResponse{Err: fmt.Errorf("%w: %s-%d", kerr.UnknownTopicOrPartition, topic, partition)}
	}
	p := t.parts[partition]
	reject := func(err error) replication.AlterPartitionResponse {
		return replication.AlterPartitionResponse{Err: err, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, ISR: slices.Clone(p.ISR)}
	}
	if err := c.checkAlterPartition(p, brokerID, req); err != nil {
		return reject(err)
	}
	ch := newChange()
	c.setISR(ch, t, p, req.NewISR, brokerID, req.Changes, "event.isr.alter", brokerID, p.tp())
	if err := c.commit(ch); err != nil {
		return reject(err)
	}
	return replication.AlterPartitionResponse{LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, ISR: slices.Clone(p.ISR)}
}

func (c *Controller) checkAlterPartition(p *Partition, brokerID int32, req replication.AlterPartitionRequest) error {
	tp := fmt.Sprintf("%s-%d", p.Topic, p.Partition)
	switch {
	case req.BrokerID != brokerID:
		return fmt.Errorf("%w: %s: request from broker %d names broker %d", kerr.InvalidRequest, tp, brokerID, req.BrokerID)
	case req.LeaderEpoch < p.LeaderEpoch:
		return fmt.Errorf("%w: %s: leader epoch %d is older than the current %d", kerr.FencedLeaderEpoch, tp, req.LeaderEpoch, p.LeaderEpoch)
	case req.LeaderEpoch > p.LeaderEpoch:
		return fmt.Errorf("%w: %s: leader epoch %d is newer than the current %d", kerr.NotLeaderForPartition, tp, req.LeaderEpoch, p.LeaderEpoch)
	case p.Leader != brokerID:
		return fmt.Errorf("%w: %s: broker %d is not the leader (leader %d)", kerr.NotLeaderForPartition, tp, brokerID, p.Leader)
	case req.PartitionEpoch != p.PartitionEpoch:
		return fmt.Errorf("%w: %s: partition epoch %d, the current one is %d", kerr.InvalidUpdateVersion, tp, req.PartitionEpoch, p.PartitionEpoch)
	case !slices.Contains(req.NewISR, brokerID):
		return fmt.Errorf("%w: %s: new ISR %v does not contain the leader %d", kerr.InvalidRequest, tp, req.NewISR, brokerID)
	}
	for i, r := range req.NewISR {
		if !slices.Contains(p.Replicas, r) {
			return fmt.Errorf("%w: %s: new ISR member %d is not a replica %v", kerr.InvalidRequest, tp, r, p.Replicas)
		}
		if slices.Contains(req.NewISR[:i], r) {
			return fmt.Errorf("%w: %s: new ISR %v names %d twice", kerr.InvalidRequest, tp, req.NewISR, r)
		}
		if !c.live(r) {
			return fmt.Errorf("%w: %s: new ISR member %d is fenced", kerr.IneligibleReplica, tp, r)
		}
		// KIP-903: a member proposed on the strength of fetches from an
		// earlier incarnation of its broker has not caught up as the
		// broker it is now. (The ZooKeeper-era rule knew no broker epochs.)
		if i < len(req.NewISRBrokerEpochs) && !c.rule.ZooKeeper() {
			if e := req.NewISRBrokerEpochs[i]; e >= 0 && e != c.brokers[r].Epoch {
				return fmt.Errorf("%w: %s: new ISR member %d fetched as broker epoch %d, its current one is %d",
					kerr.IneligibleReplica, tp, r, e, c.brokers[r].Epoch)
			}
		}
	}
	return nil
}

// QuorumLeaderISR returns the ISR of a replication.protocol=quorum
// partition once Raft has elected leader: isr with the leader added where it
// is missing (then in the AR's order); a new slice either way. Raft
// elects only a replica holding every committed entry, so the new leader is
// in sync whatever ISR its predecessor last proposed; it proposes its own
// view of the others once it leads. QuorumLeader records it; a replica whose
// metadata does not name the new term yet shows it too (broker status).
func QuorumLeaderISR(replicas, isr []int32, leader int32) []int32 {
	if slices.Contains(isr, leader) {
		return slices.Clone(isr)
	}
	return slices.DeleteFunc(slices.Clone(replicas), func(r int32) bool { return r != leader && !slices.Contains(isr, r) })
}

// QuorumLeader records that broker brokerID leads a replication.protocol=quorum
// partition in Raft term term: Raft elected it, the controller only
// publishes it (Metadata's leader, with the term as the leader epoch), so
// Kafka clients find it. An older or equal term changes nothing (a leader
// reports its term once; a late report must not undo a newer one). Errors:
// STALE_BROKER_EPOCH, UNKNOWN_TOPIC_OR_PARTITION, INVALID_REQUEST (not a
// quorum topic, or brokerID is not a replica).
func (c *Controller) QuorumLeader(topic string, partition, brokerID int32, brokerEpoch int64, term int32) error {
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
	case t.cfg.Protocol != ProtocolQuorum:
		return fmt.Errorf("%w: %s: %s is %s, not %s", kerr.InvalidRequest, p.tp(), ConfigReplicationProtocol, t.cfg.Protocol, ProtocolQuorum)
	case !slices.Contains(p.Replicas, brokerID):
		return fmt.Errorf("%w: %s: broker %d is not a replica %v", kerr.InvalidRequest, p.tp(), brokerID, p.Replicas)
	case term <= p.LeaderEpoch:
		return nil
	}
	prev := p.Leader
	p.Leader, p.LeaderEpoch = brokerID, term
	p.ISR = QuorumLeaderISR(p.Replicas, p.ISR, brokerID)
	p.PartitionEpoch++
	ch := newChange()
	ch.partition(p)
	ch.evs = append(ch.evs, fact.Say(events.Event{Kind: events.KindElection, Broker: brokerID, Topic: p.Topic, Partition: p.Partition,
		Leader: &events.Leadership{Leader: brokerID, PreviousLeader: prev, LeaderEpoch: term}, ISR: slices.Clone(p.ISR)},
		"event.election", fact.Word("event.word.reason.raft"), p.tp(), prev, brokerID, term, fact.Word("event.word.how.raft")))
	return c.commit(ch)
}
