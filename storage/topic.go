package storage

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxTopicNameLength is Kafka's limit on topic names.
const MaxTopicNameLength = 249

// ValidateTopicName applies Kafka's rule: 1–249 characters from
// [a-zA-Z0-9._-], and not "." or "..". A valid name can never form a path
// outside the log dir.
func ValidateTopicName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: topic name is empty", ErrInvalidTopic)
	case name == "." || name == "..":
		return fmt.Errorf("%w: topic name cannot be %q", ErrInvalidTopic, name)
	case len(name) > MaxTopicNameLength:
		return fmt.Errorf("%w: topic name is %d characters, the limit is %d", ErrInvalidTopic, len(name), MaxTopicNameLength)
	}
	for _, c := range name { // by rune: the message names the character sent, not its first byte
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%w: topic name %q has %q; only ASCII letters, digits, '.', '_' and '-' are allowed", ErrInvalidTopic, name, c)
		}
	}
	return nil
}

// TopicPartition names one partition of a topic.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// String returns Kafka's directory name for the partition, <topic>-<partition>.
func (tp TopicPartition) String() string {
	return tp.Topic + "-" + strconv.Itoa(int(tp.Partition))
}

// Validate checks the topic name and that the partition is not negative.
func (tp TopicPartition) Validate() error {
	if err := ValidateTopicName(tp.Topic); err != nil {
		return err
	}
	if tp.Partition < 0 {
		return fmt.Errorf("%w: partition %d is negative", ErrInvalidTopic, tp.Partition)
	}
	return nil
}

// parseTopicPartition reads a <topic>-<partition> directory name; ok is false
// for anything else (the log dir also holds checkpoint files).
func parseTopicPartition(dir string) (TopicPartition, bool) {
	i := strings.LastIndexByte(dir, '-')
	if i <= 0 {
		return TopicPartition{}, false
	}
	p, err := strconv.ParseInt(dir[i+1:], 10, 32)
	if err != nil || p < 0 || strconv.Itoa(int(p)) != dir[i+1:] {
		return TopicPartition{}, false
	}
	tp := TopicPartition{Topic: dir[:i], Partition: int32(p)}
	if tp.Validate() != nil {
		return TopicPartition{}, false
	}
	return tp, true
}
