package controller

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"tidemark/events"
	"tidemark/internal/fact"
)

// CreatePartitions grows a topic to count partitions (Kafka's
// CreatePartitions): the new ones are assigned over the unfenced brokers
// as CreateTopic assigns them, continuing its round robin, each led by its
// first replica with the whole assignment in sync. A topic never shrinks:
// a count at or below the current one is INVALID_PARTITIONS, as in Kafka.
// Adding partitions changes where the default partitioner sends a key
// (murmur2(key) % partitions), which is why Kafka warns about it. The
// budgets apply as to a new topic (POLICY_VIOLATION). It returns the topic
// as it is afterwards.
func (c *Controller) CreatePartitions(topic string, count int32) (Topic, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(); err != nil {
		return Topic{}, err
	}
	t := c.topics[topic]
	if t == nil {
		return Topic{}, fmt.Errorf("%w: no topic %q", kerr.UnknownTopicOrPartition, topic)
	}
	have := int32(len(t.parts))
	switch {
	case count == have:
		return Topic{}, fmt.Errorf("%w: topic %q already has %d partitions", kerr.InvalidPartitions, topic, have)
	case count < have:
		return Topic{}, fmt.Errorf("%w: topic %q has %d partitions; a topic's partitions can only be added, never removed", kerr.InvalidPartitions, topic, have)
	case count > MaxPartitions:
		return Topic{}, fmt.Errorf("%w: %d partitions: must be at most %d", kerr.InvalidPartitions, count, MaxPartitions)
	}
	var brokers []int32
	for _, id := range c.brokerIDs() {
		if c.live(id) {
			brokers = append(brokers, id)
		}
	}
	rf := t.replicationFactor()
	if rf > len(brokers) {
		return Topic{}, fmt.Errorf("%w: replication factor %d but only %d unfenced brokers", kerr.InvalidReplicationFactor, rf, len(brokers))
	}
	if err := c.checkReplicaBudget(topic, count-have, int16(rf)); err != nil {
		return Topic{}, err
	}
	added := make([]*Partition, 0, count-have)
	for p := have; p < count; p++ {
		replicas := make([]int32, rf)
		for i := range replicas {
			replicas[i] = brokers[(int(p)+i)%len(brokers)]
		}
		added = append(added, &Partition{Topic: topic, Partition: p, Replicas: replicas, Leader: replicas[0], ISR: slices.Clone(replicas)})
	}
	if err := c.checkBrokerBudget(topic, added); err != nil {
		return Topic{}, err
	}
	t.parts = append(t.parts, added...)
	ch := newChange()
	ch.topics[topic] = true // the stored partition count
	for _, p := range added {
		ch.partition(p)
	}
	// The UI's snapshot takes the whole topic again (it keeps the replica
	// logs of the partitions it already had).
	ch.evs = append(ch.evs, fact.Say(events.Event{Kind: events.KindTopic, Broker: events.NoBroker, Topic: topic, TopicCreated: eventTopic(t)},
		"event.topic.partitions-added", topic, have, count))
	if err := c.commit(ch); err != nil {
		t.parts = t.parts[:have]
		return Topic{}, err
	}
	return t.snapshot(), nil
}
