package replication

import "tidemark/leaderepoch"

// The leader-epoch cache's rules live in package leaderepoch, shared with
// the log on disk and the UI's snapshot; these names keep the rules' own
// vocabulary.

// UndefinedEpoch is the epoch Kafka answers when it cannot name one (-1).
const UndefinedEpoch = leaderepoch.UndefinedEpoch

// UndefinedOffset is the offset Kafka answers when it cannot name one (-1).
const UndefinedOffset = leaderepoch.UndefinedOffset

// EpochEntry is one line of the leader-epoch cache.
type EpochEntry = leaderepoch.Entry

// EpochEndOffset names the end offset (exclusive) of a leader epoch.
type EpochEndOffset = leaderepoch.EndOffset

// EndOffsetForEpoch is leaderepoch.EndOffsetFor: OffsetsForLeaderEpoch's
// answer for requested from a cache and the log's LEO.
func EndOffsetForEpoch(cache []EpochEntry, logEndOffset int64, requested int32) EpochEndOffset {
	return leaderepoch.EndOffsetFor(cache, logEndOffset, requested)
}

// LatestEpoch returns the epoch of the cache's last entry; UndefinedEpoch
// for an empty cache.
func LatestEpoch(cache []EpochEntry) int32 { return leaderepoch.Latest(cache) }

func assignEpoch(cache []EpochEntry, e EpochEntry) ([]EpochEntry, bool) {
	return leaderepoch.Assign(cache, e)
}

func truncateEpochsFromEnd(cache []EpochEntry, endOffset int64) ([]EpochEntry, bool) {
	return leaderepoch.TruncateFromEnd(cache, endOffset)
}

func truncateEpochsFromStart(cache []EpochEntry, start int64) ([]EpochEntry, bool) {
	return leaderepoch.TruncateFromStart(cache, start)
}
