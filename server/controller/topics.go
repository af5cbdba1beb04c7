package controller

import (
	"crypto/rand"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/events"
	"tidemark/internal/fact"
	"tidemark/storage"
)

// MaxPartitions is the most partitions a topic may have in the lab.
const MaxPartitions = 1000

// CreateTopic creates a topic and assigns its replicas over the unfenced
// brokers as Kafka does without racks: with the brokers sorted, partition p
// gets brokers[(p+i) % n] for i in 0..replicationFactor-1, so leaderships
// spread evenly. The first replica leads; the ISR is all replicas; both
// epochs start at 0. Errors: INVALID_TOPIC_EXCEPTION (bad name, or one that
// collides with another once '.' and '_' are treated alike, as Kafka's metric
// names do), TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS (outside [1, 1000]),
// INVALID_REPLICATION_FACTOR (outside [1, unfenced brokers]), INVALID_CONFIG,
// POLICY_VIOLATION (the lab's and each broker's partition-replica
// budgets, budget.go).
func (c *Controller) CreateTopic(name string, partitions int32, replicationFactor int16, configs map[string]string) (Topic, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(); err != nil {
		return Topic{}, err
	}
	if err := storage.ValidateTopicName(name); err != nil {
		return Topic{}, err
	}
	if c.topics[name] != nil {
		return Topic{}, fmt.Errorf("%w: topic %q", kerr.TopicAlreadyExists, name)
	}
	for other := range c.topics {
		if collisionName(other) == collisionName(name) {
			return Topic{}, fmt.Errorf("%w: topic %q collides with existing topic %q ('.' and '_' clash)", kerr.InvalidTopicException, name, other)
		}
	}
	if partitions < 1 || partitions > MaxPartitions {
		return Topic{}, fmt.Errorf("%w: %d partitions: must be in [1, %d]", kerr.InvalidPartitions, partitions, MaxPartitions)
	}
	var brokers []int32
	for _, id := range c.brokerIDs() {
		if c.live(id) {
			brokers = append(brokers, id)
		}
	}
	if replicationFactor < 1 || int(replicationFactor) > len(brokers) {
		return Topic{}, fmt.Errorf("%w: replication factor %d: must be in [1, %d], the number of unfenced brokers",
			kerr.InvalidReplicationFactor, replicationFactor, len(brokers))
	}
	cfg, err := ParseTopicConfig(configs)
	if err != nil {
		return Topic{}, err
	}
	if err := cfg.Validate(int(replicationFactor)); err != nil {
		return Topic{}, err
	}
	if err := c.checkReplicaBudget(name, partitions, replicationFactor); err != nil {
		return Topic{}, err
	}
	t := &topicState{name: name, configs: cloneConfigs(configs), cfg: cfg, parts: make([]*Partition, partitions)}
	if _, err := rand.Read(t.id[:]); err != nil {
		return Topic{}, fmt.Errorf("%w: topic id: %v", kerr.UnknownServerError, err)
	}
	n := len(brokers)
	for p := range t.parts {
		replicas := make([]int32, replicationFactor)
		for i := range replicas {
			replicas[i] = brokers[(p+i)%n]
		}
		t.parts[p] = &Partition{Topic: name, Partition: int32(p), Replicas: replicas, Leader: replicas[0], ISR: slices.Clone(replicas)}
	}
	if err := c.checkBrokerBudget(name, t.parts); err != nil {
		return Topic{}, err
	}
	c.topics[name], c.names = t, nil
	ch := newChange()
	ch.topics[name] = true
	for _, p := range t.parts {
		ch.partition(p)
	}
	ch.evs = append(ch.evs, fact.Say(events.Event{Kind: events.KindTopic, Broker: events.NoBroker, Topic: name, TopicCreated: eventTopic(t)},
		fact.Plural("event.topic.created", int(partitions)), name, partitions, replicationFactor))
	if err := c.commit(ch); err != nil {
		return Topic{}, err
	}
	return t.snapshot(), nil
}

// collisionName is the name Kafka compares to find topics that would clash
// in metric names.
func collisionName(name string) string { return strings.ReplaceAll(name, ".", "_") }

// cloneConfigs copies m, returning nil for an empty map so that "no configs"
// has one spelling.
func cloneConfigs(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}

// eventTopic is t as the UI's Snapshot holds it, with an empty replica log for
// every replica so that later replica events have somewhere to land.
func eventTopic(t *topicState) *events.Topic {
	et := &events.Topic{Name: t.name, Configs: maps.Clone(t.configs), Partitions: make([]events.Partition, len(t.parts))}
	for i, p := range t.parts {
		logs := make([]events.Replica, len(p.Replicas))
		for j, r := range p.Replicas {
			logs[j] = events.Replica{Broker: r}
		}
		et.Partitions[i] = events.Partition{Partition: p.Partition, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch,
			Replicas: slices.Clone(p.Replicas), ISR: slices.Clone(p.ISR), ReplicaLogs: logs}
	}
	return et
}

// DeleteTopic deletes a topic and its metadata (UNKNOWN_TOPIC_OR_PARTITION if
// there is none). Deleting the replicas' logs is the brokers' job once they
// see it gone.
func (c *Controller) DeleteTopic(name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(); err != nil {
		return err
	}
	t := c.topics[name]
	if t == nil {
		return fmt.Errorf("%w: no topic %q", kerr.UnknownTopicOrPartition, name)
	}
	delete(c.topics, name)
	c.names = nil
	ch := newChange()
	ch.deleted = append(ch.deleted, deletedTopic{name: name, partitions: int32(len(t.parts))})
	ch.evs = append(ch.evs, fact.Say(events.Event{Kind: events.KindTopic, Broker: events.NoBroker, Topic: name},
		"event.topic.deleted", name))
	return c.commit(ch)
}

// AlterConfigs changes a topic's configs incrementally (Kafka's
// IncrementalAlterConfigs): a non-nil value sets the key, a nil value
// deletes it (back to the default). The result must be valid as a whole
// (INVALID_CONFIG; min.insync.replicas no larger than the replication
// factor), else nothing changes. Turning unclean.leader.election.enable on
// elects a leader at once for every offline partition with a live replica.
// It returns the topic as it is afterwards.
func (c *Controller) AlterConfigs(topic string, changes map[string]*string) (Topic, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(); err != nil {
		return Topic{}, err
	}
	t := c.topics[topic]
	if t == nil {
		return Topic{}, fmt.Errorf("%w: no topic %q", kerr.UnknownTopicOrPartition, topic)
	}
	next := maps.Clone(t.configs)
	if next == nil {
		next = map[string]string{}
	}
	keys := slices.Sorted(maps.Keys(changes))
	for _, k := range keys {
		if lookupKey(k) == nil {
			return Topic{}, unknownConfig(k)
		}
		if v := changes[k]; v != nil {
			next[k] = *v
		} else {
			delete(next, k)
		}
	}
	cfg, err := ParseTopicConfig(next)
	if err != nil {
		return Topic{}, err
	}
	if err := cfg.Validate(t.replicationFactor()); err != nil {
		return Topic{}, err
	}
	// A partition's replicas hold state only their protocol understands
	// (Raft's log and votes, ISR epochs), so the protocol is fixed.
	if cfg.Protocol != t.cfg.Protocol {
		return Topic{}, fmt.Errorf("%w: %s is set when a topic is created and cannot change (topic %q is %s)",
			kerr.InvalidConfig, ConfigReplicationProtocol, topic, t.cfg.Protocol)
	}
	ch := newChange()
	for _, k := range keys {
		prev, had := t.configs[k]
		now, has := next[k]
		if had == has && prev == now {
			continue
		}
		ev := events.Event{Kind: events.KindConfig, Broker: events.NoBroker, Topic: topic,
			Config: &events.ConfigChange{Key: k, Value: now, Previous: prev}}
		if has {
			ev = fact.Say(ev, "event.config.topic", topic, k, now)
		} else {
			ev = fact.Say(ev, "event.config.topic.default", topic, k)
		}
		ch.evs = append(ch.evs, ev)
	}
	if len(ch.evs) == 0 {
		return t.snapshot(), nil
	}
	t.configs, t.cfg = cloneConfigs(next), cfg
	ch.topics[topic] = true
	c.minISRChanged(ch, t)
	if cfg.UncleanLeaderElection {
		c.electOfflineIn(ch, t, fact.Word("event.word.reason.unclean-enabled"))
	}
	if err := c.commit(ch); err != nil {
		return Topic{}, err
	}
	return t.snapshot(), nil
}
