package web

import (
	"context"
	"time"

	"tidemark/events"
	"tidemark/server/cluster"
	"tidemark/storage"
)

// The small interfaces below are the controls the API drives. The value given
// as Options.Lab may implement any of them; New looks them up once and a route
// whose interface is missing answers 501 NOT_IMPLEMENTED. Their errors carry
// Kafka's codes (kerr, matched with errors.As) and become the error body.

// TopicAdmin creates, deletes and reconfigures topics. Every call returns once
// the change is in the lab's Snapshot.
type TopicAdmin interface {
	// CreateTopic creates a topic (TOPIC_ALREADY_EXISTS, INVALID_TOPIC_EXCEPTION,
	// INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR, INVALID_CONFIG).
	CreateTopic(name string, partitions int32, replicationFactor int16, configs map[string]string) error
	// DeleteTopic deletes a topic and its logs (UNKNOWN_TOPIC_OR_PARTITION).
	DeleteTopic(name string) error
	// AlterConfigs sets (non-nil value) or removes (nil value) topic configs,
	// all or none (INVALID_CONFIG).
	AlterConfigs(topic string, changes map[string]*string) error
}

// PartitionCounter says how many partitions a topic has in the lab's
// visible state (false when there is no such topic) without copying the
// whole Snapshot: the produce route asks on every request, ~200 a second
// at 1,000 records/s. A Lab without it is asked for its Snapshot instead.
type PartitionCounter interface {
	TopicPartitions(name string) (int, bool)
}

// Record is one record to produce. A nil Key has no key; a nil Value is a
// tombstone (Kafka's null value).
type Record struct {
	Key   []byte
	Value []byte
}

// ProduceResult is where a produce went: the partition, the leader that took
// it and the offsets it got (-1 when nothing was appended); the cluster's.
type ProduceResult = cluster.ProduceResult

// Producer produces as a Kafka producer does.
type Producer interface {
	// Produce sends records to a partition's leader and waits as acks says (0,
	// 1, or -1 for all); partition -1 picks one from the first record's key.
	// A failed produce may still say where records were appended.
	Produce(ctx context.Context, topic string, partition int32, acks int16, records []Record, timeout time.Duration) (ProduceResult, error)
}

// ConsumedRecord is one record as a consumer reads it.
type ConsumedRecord struct {
	Offset      int64
	LeaderEpoch int32
	Timestamp   int64 // milliseconds since the Unix epoch
	Key         []byte
	Value       []byte
}

// Consumer reads as a Kafka consumer does.
type Consumer interface {
	// Consume returns up to limit records from offset on (offset -1: the log
	// start), read from the leader and only below its high watermark, and
	// that HW (OFFSET_OUT_OF_RANGE past it).
	Consume(topic string, partition int32, offset int64, limit int) ([]ConsumedRecord, int64, error)
}

// RecordStreamer is a Consumer that hands records over one at a time as
// it decodes them, so the records route holds one batch, not a whole
// answer (a Consumer without it is read through Consume).
type RecordStreamer interface {
	// ConsumeEach calls fn with the records Consume would return, in
	// order, until fn returns false, and returns the HW. fn must not keep
	// a record's key or value.
	ConsumeEach(topic string, partition int32, offset int64, limit int, fn func(ConsumedRecord) bool) (int64, error)
}

// Faults injects and repairs faults. Broker ids are 1..N; in links, node 0 is
// the controller.
type Faults interface {
	// Crash stops a broker as a killed process; what it wrote stays in the page cache.
	Crash(id int32) error
	// PowerLoss stops a broker and loses everything it had not fsynced; it
	// returns the bytes lost per file.
	PowerLoss(id int32) (map[string]int64, error)
	// Restart starts a stopped broker, which recovers from its log dir.
	Restart(id int32) error
	// Cut cuts the link from→to, and to→from too unless oneWay.
	Cut(from, to int32, oneWay bool) error
	// Heal restores every link.
	Heal()
}

// LabClock pauses, resumes, steps and sets the rate of the lab clock.
type LabClock interface {
	// Pause stops the lab clock (no-op when paused).
	Pause()
	// Resume lets it run with real time again (no-op when running).
	Resume()
	// Step moves a paused clock by d and runs what that time brings
	// (INVALID_REQUEST when the clock runs).
	Step(d time.Duration) error
	// StepToEvent moves a paused clock until the next event the event list
	// shows, or until limit has passed (INVALID_REQUEST when the clock
	// runs); it returns how far it moved and the events reached (none:
	// nothing happened within limit).
	StepToEvent(limit time.Duration) (time.Duration, []events.Event, error)
	// SetRate makes the running clock go rate lab seconds per real second:
	// 0.25, 1 or 4 (INVALID_REQUEST otherwise).
	SetRate(rate float64) error
	// StepFetch makes broker id's followers send one Fetch each to their leaders.
	StepFetch(ctx context.Context, id int32) error
}

// Inspector opens a running broker's replica for reading, for the partition
// view and the segment explorer.
type Inspector interface {
	// ReplicaLog returns broker's log of the partition and the replica's high
	// watermark (BROKER_NOT_AVAILABLE when the broker is not running,
	// UNKNOWN_TOPIC_OR_PARTITION when it hosts no such replica).
	ReplicaLog(broker int32, topic string, partition int32) (ReplicaLog, int64, error)
}

// ReplicaLog is what the partition view and the segment explorer read of a
// replica's log: offsets, the leader-epoch cache, batches, segments and a
// traced lookup. It is read-only, so a page cannot write to a broker's log
// (*storage.Log implements it).
type ReplicaLog interface {
	Dir() string
	LogStartOffset() int64
	LogEndOffset() int64
	RecoveryPoint() int64
	Epochs() []storage.EpochEntry
	EachBatch(offset, maxOffset int64, maxBatches int, fn func(storage.Batch) bool) error
	Segments() ([]storage.SegmentInfo, error)
	Lookup(offset int64) (storage.LookupTrace, error)
}
