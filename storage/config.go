package storage

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Config holds a log's settings, named as Kafka's topic configs.
type Config struct {
	// SegmentBytes (segment.bytes) rolls a new segment once the active one
	// would grow past it. Kafka's default is 1 GiB; the lab uses a few KiB
	// to show rolling.
	SegmentBytes int64
	// SegmentMs (segment.ms) rolls a non-empty active segment once it is this
	// old. Default 7 days.
	SegmentMs time.Duration
	// SegmentIndexBytes (segment.index.bytes) bounds each .index file; a
	// full index rolls the segment. Default 10 MiB.
	SegmentIndexBytes int64
	// IndexIntervalBytes (index.interval.bytes) is how many bytes are
	// appended between two offset-index entries. Default 4096.
	IndexIntervalBytes int64
	// FlushMessages (flush.messages) fsyncs, before the append returns, the
	// append that brings the unflushed records to this many. Default
	// math.MaxInt64: rely on the page cache, as Kafka does.
	FlushMessages int64
	// FlushMs (flush.ms) fsyncs once the oldest unflushed append is this
	// old: at the next append, or at the broker's next FlushIfDue. It counts
	// whole milliseconds, as Kafka does, so under 1 ms (e.g. 1ns) is Kafka's
	// flush.ms=0: every append is flushed. Zero or negative: never by time
	// (Kafka's default).
	FlushMs time.Duration
	// RetentionMs (retention.ms) deletes whole segments whose newest record
	// is older than this. Negative: keep forever. Default 7 days.
	RetentionMs time.Duration
	// RetentionBytes (retention.bytes) deletes whole oldest segments while
	// the log is larger than this. Negative: no size limit (the default).
	RetentionBytes int64
	// MaxMessageBytes (max.message.bytes) is the largest batch accepted.
	// Default 1 MiB + 12 bytes, Kafka's default.
	MaxMessageBytes int32
	// Cleanup is cleanup.policy: which of retention's deletion and the
	// log cleaner's compaction apply. The zero value is delete.
	Cleanup CleanupPolicy
	// DeleteRetention (delete.retention.ms) is how long the cleaner keeps
	// a tombstone once it has cleaned past it. Default 1 day.
	DeleteRetention time.Duration
	// MinCleanableDirtyRatio (min.cleanable.dirty.ratio): the cleaner
	// runs once the dirty part of the cleanable log is at least this
	// share of it. Default 0.5.
	MinCleanableDirtyRatio float64
	// CompressionType (compression.type): "" or "producer" keeps the
	// producer's codec; a codec name (CodecOf) makes the leader recompress
	// every batch to it.
	CompressionType string
	// LogAppendTime (message.timestamp.type=LogAppendTime): the leader
	// stamps each batch with its append time.
	LogAppendTime bool
}

// CleanupPolicy is cleanup.policy.
type CleanupPolicy uint8

// The cleanup policies: delete (retention removes old segments), compact
// (the cleaner keeps each key's latest record), or both.
const (
	CleanupDelete CleanupPolicy = iota
	CleanupCompact
	CleanupCompactDelete
)

// Compacts reports whether the log cleaner compacts the log.
func (p CleanupPolicy) Compacts() bool { return p != CleanupDelete }

// Deletes reports whether retention.ms and retention.bytes delete segments.
func (p CleanupPolicy) Deletes() bool { return p != CleanupCompact }

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config {
	return Config{
		SegmentBytes:           1 << 30,
		SegmentMs:              7 * 24 * time.Hour,
		SegmentIndexBytes:      10 << 20,
		IndexIntervalBytes:     4096,
		FlushMessages:          math.MaxInt64,
		FlushMs:                0,
		RetentionMs:            7 * 24 * time.Hour,
		RetentionBytes:         -1,
		MaxMessageBytes:        1048588,
		DeleteRetention:        24 * time.Hour,
		MinCleanableDirtyRatio: 0.5,
	}
}

// MinSegmentBytes is the smallest segment.bytes accepted: the lab shows tiny
// segments, but one must still hold a batch header.
const MinSegmentBytes = 1024

// Validate reports the first setting that is out of range.
func (c Config) Validate() error {
	var errs []error
	if c.SegmentBytes < MinSegmentBytes || c.SegmentBytes > math.MaxInt32 {
		errs = append(errs, fmt.Errorf("segment.bytes %d: must be in [%d, %d]", c.SegmentBytes, MinSegmentBytes, math.MaxInt32))
	}
	if c.SegmentMs <= 0 {
		errs = append(errs, fmt.Errorf("segment.ms %v: must be positive", c.SegmentMs))
	}
	if c.SegmentIndexBytes < 2*indexEntrySize {
		errs = append(errs, fmt.Errorf("segment.index.bytes %d: must hold at least two entries (%d bytes)", c.SegmentIndexBytes, 2*indexEntrySize))
	}
	if c.IndexIntervalBytes < 0 {
		errs = append(errs, fmt.Errorf("index.interval.bytes %d: must not be negative", c.IndexIntervalBytes))
	}
	if c.FlushMessages < 1 {
		errs = append(errs, fmt.Errorf("flush.messages %d: must be at least 1", c.FlushMessages))
	}
	if c.MaxMessageBytes < batchHeaderSize {
		errs = append(errs, fmt.Errorf("max.message.bytes %d: must be at least %d", c.MaxMessageBytes, batchHeaderSize))
	}
	if c.MinCleanableDirtyRatio < 0 || c.MinCleanableDirtyRatio > 1 {
		errs = append(errs, fmt.Errorf("min.cleanable.dirty.ratio %v: must be in [0, 1]", c.MinCleanableDirtyRatio))
	}
	if _, ok := CodecOf(c.CompressionType); !ok && c.CompressionType != "" && c.CompressionType != "producer" {
		errs = append(errs, fmt.Errorf("compression.type %q: must be producer, uncompressed, gzip, snappy, lz4 or zstd", c.CompressionType))
	}
	return errors.Join(errs...)
}

// maxIndexEntries is how many offset-index entries fit in segment.index.bytes.
func (c Config) maxIndexEntries() int {
	return int(c.SegmentIndexBytes / indexEntrySize)
}
