package controller

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/events"
	"tidemark/internal/fact"
	"tidemark/replication"
	"tidemark/server/kafkaerr"
)

// FencingRule is how the controller treats a broker that registers again
// (a restart) and which replicas it may elect: the generations of Kafka's
// rules, each as a named release has it, and one lab-only rule. The zero
// value is FencingKRaftELR, the lab's default: Kafka 4.1 in KRaft mode,
// where ELR is on by default for new clusters (docs: "ELR is enabled by
// default on new clusters starting 4.1"; in 4.0 it is off unless
// eligible.leader.replicas.version=1).
//
// Under every rule the HW freezes while the ISR is below
// min.insync.replicas, as in Kafka 3.7+ (KAFKA-15583; see
// replication.Partition): the rules differ in fencing and elections only.
type FencingRule int

const (
	// FencingKRaftELR is Kafka 4.1 (KRaft, KIP-966 part 1, ELR on): on top
	// of FencingKRaft, replicas that leave the ISR while it is below
	// min.insync.replicas become eligible leader replicas (ELR) and may be
	// elected cleanly; the ISR may become empty; a broker back from an
	// unclean shutdown (no clean-shutdown marker: a crash or a power loss;
	// ClusterControlManager compares PreviousBrokerEpoch, KAFKA-18635)
	// leaves every ISR and ELR (ReplicationControlManager.
	// handleBrokerUncleanShutdown). A partition left with neither keeps its
	// last leader as its last known ELR and elects it again once it is
	// unfenced, whatever its log lost (PartitionChangeBuilder.
	// canElectLastKnownLeader, with useLastKnownLeaderInBalancedRecovery on
	// by default; KAFKA-19522 keeps a fenced one from being elected).
	FencingKRaftELR FencingRule = iota
	// FencingKRaft is KRaft without ELR (Kafka 3.x, and 4.0 by default):
	// every registration is a new incarnation with a new broker epoch, so a
	// broker that re-registers is fenced and leaves every ISR (except as an
	// ISR's last member) and its leaderships; KIP-903 puts broker epochs in
	// Fetch and AlterPartition, so the controller refuses an ISR expansion
	// built on an earlier incarnation's fetches (checkAlterPartition).
	FencingKRaft
	// FencingZooKeeper is the ZooKeeper-era controller as KIP-380 (Kafka
	// 2.2 to 3.9) left it: a broker that re-registers has a new broker
	// epoch (the znode's czxid), so the controller sees the bounce even
	// within the session and handles it as a failure and a start: the
	// broker leaves every ISR except where it is the last member, and its
	// leaderships move (where it is the last member it leads again under a
	// new leader epoch). There are no broker epochs in AlterPartition.
	FencingZooKeeper
	// FencingZooKeeperPre22 is the ZooKeeper-era controller before KIP-380
	// (Kafka 2.1 and earlier), kept for the history lessons (KIP-101's
	// stories happened under it): a broker that restarts within its
	// session keeps its ISR places (it gives up its leaderships), so it can
	// be elected with a log it lost part of.
	FencingZooKeeperPre22
	// FencingKRaftELRRecovery is lab-only: FencingKRaftELR with KIP-966's
	// "unclean recovery" (the controller asks every replica for its log,
	// GetReplicaLogInfo, and elects the longest) in place of the last
	// known leader. It is in no Kafka release.
	FencingKRaftELRRecovery
)

// ConfigFencingRule is the lab-wide setting that names the fencing rule in
// the snapshot's Configs.
const ConfigFencingRule = "fencing.rule"

// FencingRules lists the rules, newest release first, the lab-only one
// last.
func FencingRules() []FencingRule {
	return []FencingRule{FencingKRaftELR, FencingKRaft, FencingZooKeeper, FencingZooKeeperPre22, FencingKRaftELRRecovery}
}

// String returns the rule's name: "kraft-elr", "kraft", "zookeeper",
// "zookeeper-pre-2.2" or "kraft-elr-recovery".
func (r FencingRule) String() string {
	switch r {
	case FencingKRaftELR:
		return "kraft-elr"
	case FencingKRaft:
		return "kraft"
	case FencingZooKeeper:
		return "zookeeper"
	case FencingZooKeeperPre22:
		return "zookeeper-pre-2.2"
	case FencingKRaftELRRecovery:
		return "kraft-elr-recovery"
	}
	return fmt.Sprintf("fencing(%d)", int(r))
}

// ELR reports whether the rule keeps eligible leader replicas (KIP-966).
func (r FencingRule) ELR() bool { return r == FencingKRaftELR || r == FencingKRaftELRRecovery }

// ZooKeeper reports whether the rule is a ZooKeeper-era one (no broker
// epochs in AlterPartition, no fencing of a bounced broker).
func (r FencingRule) ZooKeeper() bool { return r == FencingZooKeeper || r == FencingZooKeeperPre22 }

// LabOnly reports whether the rule is in no Kafka release.
func (r FencingRule) LabOnly() bool { return r == FencingKRaftELRRecovery }

// validate reports a value that is none of the rules (INVALID_CONFIG).
func (r FencingRule) validate() error {
	_, err := ParseFencingRule(r.String())
	return err
}

// ParseFencingRule parses a rule's name; anything else is INVALID_CONFIG.
func ParseFencingRule(s string) (FencingRule, error) {
	for _, r := range FencingRules() {
		if r.String() == s {
			return r, nil
		}
	}
	return 0, kafkaerr.WithKey(fmt.Errorf("%w: unknown fencing rule %s (want kraft-elr, kraft, zookeeper, zookeeper-pre-2.2 or kraft-elr-recovery)", kerr.InvalidConfig, kafkaerr.Quote(s)),
		"config.fencing-rule", kafkaerr.Quote(s))
}

// LogInfo is what a broker reports of one of its logs, so the controller
// can recover a partition that has no eligible leader left by electing the
// replica with the longest log (KIP-966's GetReplicaLogInfo).
type LogInfo struct {
	Topic     string
	Partition int32
	// PartitionEpoch is the partition epoch the broker saw when it read the
	// log: only reports made in the current epoch count, since a log may
	// have grown or been cut before the partition lost its last eligible
	// leader.
	PartitionEpoch int32
	// LastEpoch is the leader epoch of the log's last record; -1 if empty.
	LastEpoch int32
	// LogEndOffset is the log's LEO.
	LogEndOffset int64
}

// Registration is a broker's BrokerRegistration request.
type Registration struct {
	ID       int32
	Listener string
	// CleanShutdown says the broker's last stop was clean (Kafka compares
	// the previous broker epoch the broker stored at its clean shutdown).
	CleanShutdown bool
}

// FencingRule returns the rule in force.
func (c *Controller) FencingRule() FencingRule { return FencingRule(c.ruleRead.Load()) }

// setRule changes the rule, with c.mu held.
func (c *Controller) setRule(r FencingRule) {
	c.rule = r
	c.ruleRead.Store(int32(r))
}

// SetFencingRule changes the rule from the next registration or election
// on; leaving kraft-elr clears every ELR. The rule is stored with the
// metadata, so it survives a restart of the lab.
func (c *Controller) SetFencingRule(r FencingRule) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(); err != nil {
		return err
	}
	if r == c.rule {
		return nil
	}
	if err := r.validate(); err != nil {
		return err
	}
	ch := newChange()
	prev := c.rule
	c.setRule(r)
	ch.evs = append(ch.evs, fact.Say(events.Event{Kind: events.KindConfig, Broker: events.NoBroker,
		Config: &events.ConfigChange{Key: ConfigFencingRule, Value: r.String(), Previous: prev.String()}},
		"event.config.fencing-rule", r, prev))
	ch.settings = true
	if !r.ELR() {
		for _, name := range c.topicNames() {
			for _, p := range c.topics[name].parts {
				if len(p.ELR) > 0 || len(p.LastKnownELR) > 0 {
					p.ELR, p.LastKnownELR = nil, nil
					p.PartitionEpoch++
					ch.partition(p)
				}
			}
		}
	}
	return c.commit(ch)
}

// minISR is the topic's min.insync.replicas.
func (t *topicState) minISR() int { return t.cfg.Replication().MinInsyncReplicas }

// updateELR keeps KIP-966's invariant after p's ISR changed from old: a
// replica that leaves an ISR now below min.insync.replicas joins the ELR
// (the HW cannot move without it, so it holds every committed record); one
// that joins the ISR leaves the ELR; an ISR back at min.insync.replicas
// clears the ELR (the HW may move without its members again).
//
// prevLeader is p's leader before the change (for the last known leader).
func (c *Controller) updateELR(t *topicState, p *Partition, prevLeader int32, old []int32) {
	defer c.updateLastKnownELR(p, prevLeader, old, p.ELR)
	if !c.rule.ELR() {
		p.ELR = nil
		return
	}
	if len(p.ISR) >= t.minISR() {
		p.ELR = nil
		return
	}
	elr := slices.DeleteFunc(slices.Clone(p.ELR), func(r int32) bool { return slices.Contains(p.ISR, r) })
	for _, r := range old {
		if !slices.Contains(p.ISR, r) && !slices.Contains(elr, r) {
			elr = append(elr, r)
		}
	}
	if len(elr) == 0 {
		elr = nil
	}
	p.ELR = elr
}

// updateLastKnownELR keeps p's last known ELR after its leader, ISR and
// ELR changed from prevLeader, oldISR and oldELR. With a leader, or under
// a rule without ELR, it is nil. Under kraft-elr (Kafka 4.1) it holds the
// last known leader: the leader p had when its ISR became empty
// (PartitionChangeBuilder.maybeUpdateLastKnownLeader, with
// useLastKnownLeaderInBalancedRecovery on, Kafka's default). Under the
// lab-only kraft-elr-recovery, while p has no leader, a replica that left
// the ISR and ELR without joining the other is added, and one back in them
// removed (as PartitionChangeBuilder keeps it when it does not store the
// last known leader there).
func (c *Controller) updateLastKnownELR(p *Partition, prevLeader int32, oldISR, oldELR []int32) {
	if !c.rule.ELR() || p.Leader != replication.NoLeader {
		p.LastKnownELR = nil
		return
	}
	if c.rule == FencingKRaftELR {
		if len(p.ISR) == 0 && len(oldISR) > 0 {
			// The lab fences every broker whose session expired in one
			// tick before it moves anything, so the partition may have lost
			// its leader while members were left in its ISR; Kafka fences
			// them one at a time, moving the leadership to the next one, so
			// the last to leave was its leader when the ISR emptied.
			if prevLeader == replication.NoLeader {
				prevLeader = oldISR[len(oldISR)-1]
			}
			p.LastKnownELR = []int32{prevLeader}
		}
		return
	}
	in := func(r int32) bool { return slices.Contains(p.ISR, r) || slices.Contains(p.ELR, r) }
	known := slices.DeleteFunc(slices.Clone(p.LastKnownELR), in)
	for _, r := range slices.Concat(oldISR, oldELR) {
		if !in(r) && !slices.Contains(known, r) {
			known = append(known, r)
		}
	}
	if len(known) == 0 {
		known = nil
	}
	p.LastKnownELR = known
}

// reRegister applies a registration of a broker the controller already knows
// under the rule in force. Callers hold c.mu.
func (c *Controller) reRegister(ch *change, b *Broker, reg Registration, withinSession bool) {
	id := b.ID
	switch {
	case c.rule == FencingZooKeeperPre22 && withinSession:
		// Back before its session expired: as with ZooKeeper-era Kafka
		// before 2.2, the controller never saw it gone, so it keeps its ISR
		// places (which is what lets KIP-101's restarted follower be
		// elected cleanly). It lost its in-memory state, so it gives up the
		// leaderships it held.
		ch.evs = append(ch.evs, fact.Say(events.Event{Kind: events.KindBroker, Broker: id, BrokerState: events.BrokerUp,
			Listener: b.Listener}, "event.broker.rereg.zookeeper-pre-2.2", id, b.Epoch))
		c.handOverLeaderships(ch, id, fact.Word("event.word.reason.restarted", id))
		return
	case c.rule == FencingZooKeeper && withinSession:
		// KIP-380 (Kafka 2.2+): the new registration carries a new broker
		// epoch, so the ZooKeeper-era controller sees the bounce and
		// handles it as the broker's failure (KafkaController.
		// onBrokerFailure: it leaves every ISR but where it is the last
		// member, which ZooKeeper-era Kafka never empties) and start
		// (onBrokerStartup: where it is that last member it leads again,
		// under a new leader epoch).
		ch.evs = append(ch.evs, fact.Say(events.Event{Kind: events.KindBroker, Broker: id, BrokerState: events.BrokerUp,
			Listener: b.Listener}, "event.broker.rereg.zookeeper", id, b.Epoch))
		c.leaveReplicaSets(ch, id, fact.Word("event.word.reason.restarted", id), events.ISRRestarted)
		c.handOverLeaderships(ch, id, fact.Word("event.word.reason.restarted", id))
		return
	case withinSession:
		// KRaft: a new incarnation. The old one is fenced first, so the new
		// one earns its ISR places back by catching up; KIP-903's broker
		// epochs in Fetch and AlterPartition keep an ISR expansion built on
		// the old incarnation's fetches from being accepted.
		ch.evs = append(ch.evs, fact.Say(events.Event{Kind: events.KindBroker, Broker: id, BrokerState: events.BrokerFenced,
			Listener: b.Listener}, "event.broker.rereg.kraft", id, b.Epoch, c.rule))
		c.leaveReplicaSets(ch, id, fact.Word("event.word.reason.restarted", id), events.ISRRestarted)
	default:
		ch.evs = append(ch.evs, fact.Say(events.Event{Kind: events.KindBroker, Broker: id, BrokerState: events.BrokerFenced,
			Listener: b.Listener}, "event.broker.registered", id, b.Epoch))
	}
	if c.rule.ELR() && !reg.CleanShutdown {
		c.forgetUnclean(ch, id)
	}
}

// forgetUnclean removes broker id, back from an unclean shutdown, from
// every ISR and ELR: its log may have lost records it acknowledged
// (KIP-966). Callers hold c.mu; the broker is fenced.
func (c *Controller) forgetUnclean(ch *change, id int32) {
	for _, name := range c.topicNames() {
		t := c.topics[name]
		if t.cfg.Protocol != ProtocolISR {
			continue // Raft's own log and votes decide (QuorumLeader); a pipeline member left at registration
		}
		for _, p := range t.parts {
			inISR, inELR := slices.Contains(p.ISR, id), slices.Contains(p.ELR, id)
			if !inISR && !inELR {
				continue
			}
			oldISR, oldELR := p.ISR, p.ELR
			p.ISR = slices.DeleteFunc(slices.Clone(p.ISR), func(r int32) bool { return r == id })
			p.ELR = slices.DeleteFunc(slices.Clone(p.ELR), func(r int32) bool { return r == id })
			if p.Leader == id {
				// Its ISR place is already gone, so the election cannot put
				// it in the ELR either.
				c.elect(ch, t, p, p.ISR, fact.Word("event.word.reason.unclean-restart", id),
					events.ISRChange{Cause: events.ISRUncleanRestart, Broker: id})
				c.updateLastKnownELR(p, id, oldISR, oldELR)
				continue
			}
			c.updateELR(t, p, p.Leader, nil)
			c.updateLastKnownELR(p, p.Leader, oldISR, oldELR) // id left both: known last if p has no leader
			p.PartitionEpoch++
			ch.partition(p)
			ev := events.Event{Kind: events.KindISR, Broker: id, Topic: p.Topic, Partition: p.Partition,
				ISR: slices.Clone(p.ISR), ELR: slices.Clone(p.ELR), ISRChanges: []events.ISRChange{{Cause: events.ISRUncleanRestart, Broker: id}}}
			if p.Leader == replication.NoLeader {
				ev = fact.Say(ev, "event.isr.unclean-restart.offline", id, p.tp(), p.ISR, p.ELR, c.offlineWhy(t, p))
			} else {
				ev = fact.Say(ev, "event.isr.unclean-restart", id, p.tp(), p.ISR, p.ELR)
			}
			ch.evs = append(ch.evs, ev)
		}
	}
}

// offlineWhy says why a partition has no leader and what would bring one
// back, as a message word (fact.Word).
func (c *Controller) offlineWhy(t *topicState, p *Partition) string {
	switch {
	case len(p.ISR) > 0 && len(p.ELR) > 0:
		return fact.Word("event.word.offline.isr-elr", p.ISR, p.ELR)
	case len(p.ISR) > 0:
		return fact.Word("event.word.offline.isr", p.ISR)
	case len(p.ELR) > 0:
		return fact.Word("event.word.offline.elr", p.ELR)
	case c.rule == FencingKRaftELR && len(p.LastKnownELR) == 1:
		return fact.Word("event.word.offline.last-known", p.LastKnownELR[0])
	case c.rule == FencingKRaftELRRecovery && !t.cfg.UncleanLeaderElection:
		return fact.Word("event.word.offline.unknown-or-unclean")
	case c.rule == FencingKRaftELRRecovery:
		return fact.Word("event.word.offline.unknown")
	}
	return fact.Word("event.word.offline")
}

// recoverUnclean is KIP-966's "balanced" unclean recovery, lab-only for
// ISR topics (the kraft-elr-recovery rule; GetReplicaLogInfo is in no
// release), and how a replication.protocol=pipeline topic recovers under
// either ELR rule (forgetUncleanPipelines): a partition
// with no leader, ISR or ELR, all of whose replicas are registered and
// running, elects the replica with the longest log (highest last leader
// epoch, then highest LEO, as its broker reported them at registration).
// It reports whether it elected one. Callers hold c.mu.
func (c *Controller) recoverUnclean(ch *change, t *topicState, p *Partition, reason string) bool {
	if !c.rule.ELR() || !p.NeedsRecovery() {
		return false
	}
	if t.cfg.Protocol == ProtocolISR && c.rule != FencingKRaftELRRecovery {
		// Kafka 4.1 elects the last known leader instead (elect); a
		// pipeline's recovery is HDFS's (the longest replica) under both.
		return false
	}
	best, bestInfo := replication.NoLeader, LogInfo{LastEpoch: -2, LogEndOffset: -1}
	for _, r := range p.Replicas {
		if !c.live(r) {
			return false
		}
		info, ok := c.logs[r][topicPartition{p.Topic, p.Partition}]
		if !ok || info.PartitionEpoch != p.PartitionEpoch {
			return false // wait for every replica's report of its log as it is now
		}
		if info.LastEpoch > bestInfo.LastEpoch || info.LastEpoch == bestInfo.LastEpoch && info.LogEndOffset > bestInfo.LogEndOffset {
			best, bestInfo = r, info
		}
	}
	prev := p.Leader
	p.Leader, p.ISR, p.ELR, p.LastKnownELR = best, []int32{best}, nil, nil
	p.LeaderEpoch++
	p.PartitionEpoch++
	ch.partition(p)
	ch.evs = append(ch.evs, fact.Say(events.Event{Kind: events.KindElection, Broker: best, Topic: p.Topic, Partition: p.Partition,
		Leader: &events.Leadership{Leader: best, PreviousLeader: prev, LeaderEpoch: p.LeaderEpoch},
		ISR:    slices.Clone(p.ISR)},
		"event.election.recovered", reason, p.tp(), best, bestInfo.LastEpoch, bestInfo.LogEndOffset, p.LeaderEpoch))
	return true
}

// minISRChanged clears the ELR of every partition of t whose ISR now
// reaches min.insync.replicas (the HW may move without the ELR again).
// Callers hold c.mu.
func (c *Controller) minISRChanged(ch *change, t *topicState) {
	for _, p := range t.parts {
		if len(p.ELR) > 0 && len(p.ISR) >= t.minISR() {
			var left []events.ISRChange
			for _, r := range p.ELR {
				left = append(left, events.ISRChange{Cause: events.ISRELRCleared, Broker: r})
			}
			p.ELR = nil
			p.PartitionEpoch++
			ch.partition(p)
			ch.evs = append(ch.evs, fact.Say(events.Event{Kind: events.KindISR, Broker: events.NoBroker, Topic: p.Topic, Partition: p.Partition,
				ISR: slices.Clone(p.ISR), ISRChanges: left}, "event.isr.elr-cleared", p.tp(), p.ISR, t.minISR()))
		}
	}
}

// ReportLogs records what broker id's logs hold now, for the partitions
// that need KIP-966's unclean recovery (no leader, ISR or ELR), and
// recovers those whose every replica has reported in their current
// partition epoch. A stale broker epoch is STALE_BROKER_EPOCH.
func (c *Controller) ReportLogs(id int32, brokerEpoch int64, logs []LogInfo) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(); err != nil {
		return err
	}
	b := c.brokers[id]
	if b == nil || b.Epoch != brokerEpoch {
		return fmt.Errorf("%w: broker %d sent broker epoch %d", kerr.StaleBrokerEpoch, id, brokerEpoch)
	}
	if c.logs[id] == nil {
		c.logs[id] = map[topicPartition]LogInfo{}
	}
	ch := newChange()
	for _, l := range logs {
		tp := topicPartition{l.Topic, l.Partition}
		c.logs[id][tp] = l
		if t := c.topics[l.Topic]; t != nil && l.Partition >= 0 && int(l.Partition) < len(t.parts) {
			c.recoverUnclean(ch, t, t.parts[l.Partition], fact.Word("event.word.reason.reported", id))
		}
	}
	return c.commit(ch)
}

// NeedsRecovery reports whether p waits for KIP-966's unclean recovery: no
// leader, no ISR, no ELR.
func (p *Partition) NeedsRecovery() bool {
	return p.Leader == replication.NoLeader && len(p.ISR) == 0 && len(p.ELR) == 0
}
