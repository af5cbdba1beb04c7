package broker

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"tidemark/storage"
)

// FetchMaxBytes is the lab's fetch.max.bytes: the most record bytes one
// Fetch response carries, whatever the request's MaxBytes asks (Kafka's
// default is 55 MiB; the lab's segments and batches are small). As in Kafka,
// the first partition with data may go over it by one whole batch.
const FetchMaxBytes = 16 << 20

// dedupeFetchTopics answers each partition of a Fetch once, as Kafka does
// (its FetchRequest.fetchData is a LinkedHashMap keyed by partition): at the
// place the partition first appears, with the fetch parameters of its last
// occurrence. Without it a request naming one partition 100,000 times costs
// 100,000 reads and response entries. Repeated topics are merged. A request
// without repeats is returned as it is.
func dedupeFetchTopics(topics []kmsg.FetchRequestTopic) []kmsg.FetchRequestTopic {
	n := 0
	for _, t := range topics {
		n += len(t.Partitions)
	}
	if n < 2 {
		return topics
	}
	type at struct{ topic, partition int }
	seen := make(map[storage.TopicPartition]at)
	topicAt := make(map[string]int, len(topics))
	out := make([]kmsg.FetchRequestTopic, 0, len(topics))
	for _, t := range topics {
		for _, p := range t.Partitions {
			tp := storage.TopicPartition{Topic: t.Topic, Partition: p.Partition}
			if a, ok := seen[tp]; ok {
				out[a.topic].Partitions[a.partition] = p
				continue
			}
			ti, ok := topicAt[t.Topic]
			if !ok {
				ti = len(out)
				topicAt[t.Topic] = ti
				nt := t
				nt.Partitions = nil
				out = append(out, nt)
			}
			seen[tp] = at{ti, len(out[ti].Partitions)}
			out[ti].Partitions = append(out[ti].Partitions, p)
		}
	}
	if len(seen) == n && len(out) == len(topics) {
		return topics
	}
	return out
}

// resolveTopicIDs names the topics of a Fetch v13+ (which carries topic
// ids, not names) from names, the metadata this broker applied; an id it
// does not know gets unknownTopicIDName, answered UNKNOWN_TOPIC_ID. Older
// versions carry names.
func resolveTopicIDs(req *kmsg.FetchRequest, names map[[16]byte]string) {
	if req.Version < 13 {
		return
	}
	for i := range req.Topics {
		t := &req.Topics[i]
		name, ok := names[t.TopicID]
		if !ok {
			name = unknownTopicIDName(t.TopicID)
		}
		t.Topic = name
	}
}

// topicIDs maps the topic names of the applied metadata to their ids and
// back. The maps are shared (replaced, never changed, by the next apply):
// callers must not modify them.
func (b *Broker) topicIDs() (ids map[string][16]byte, names map[[16]byte]string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.topicIDsByName, b.topicNamesByID
}
