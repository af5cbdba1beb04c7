package broker

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

// autoCreateTopics is auto.create.topics.enable (Kafka's default, true,
// unless the lab was started with it off).
func (b *Broker) autoCreateTopics() bool { return !b.cfg.NoAutoCreateTopics }

// autoCreate creates the topics a Metadata request asked for that do not
// exist, as Kafka does when auto.create.topics.enable is on and the
// request allows it: with num.partitions and default.replication.factor
// (bounded by the unfenced brokers), through the controller, so the
// lab's budgets apply. It returns the error of each topic that could not
// be created; a topic another request created meanwhile is no error.
func (b *Broker) autoCreate(names []string) map[string]error {
	errs := map[string]error{}
	a, err := b.admin()
	if err != nil {
		for _, n := range names {
			errs[n] = kerr.UnknownTopicOrPartition
		}
		return errs
	}
	md, err := b.cfg.Controller.Metadata()
	if err != nil {
		for _, n := range names {
			errs[n] = err
		}
		return errs
	}
	live := 0
	for _, br := range md.Brokers {
		if !br.Fenced {
			live++
		}
	}
	rf := int16(max(1, min(DefaultReplicationFactor, live)))
	for _, n := range names {
		if _, err := a.CreateTopic(n, DefaultNumPartitions, rf, nil); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			b.errLog.log("auto-creating a topic", "topic", n, "err", err)
			errs[n] = err
		}
	}
	return errs
}
