package replication

// UndefinedEpoch is the epoch Kafka answers when it cannot name one (-1).
const UndefinedEpoch int32 = -1

// UndefinedOffset is the offset Kafka answers when it cannot name one (-1).
const UndefinedOffset int64 = -1

// EpochEntry is one line of the leader-epoch cache: leader epoch Epoch
// wrote its first record at StartOffset. Entries are kept in increasing order
// of both fields.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// EpochEndOffset names the end offset (exclusive) of a leader epoch, as
// OffsetsForLeaderEpoch and a Fetch response's diverging epoch carry it.
type EpochEndOffset struct {
	Epoch     int32
	EndOffset int64
}

// EndOffsetForEpoch answers an OffsetsForLeaderEpoch request for requested
// from an epoch cache and the log's LEO, with Kafka's semantics: the largest
// epoch ≤ requested that the cache knows, and its end offset — the start
// offset of the next epoch, or logEndOffset for the latest epoch. A requested
// epoch older than every entry answers (requested, first start offset). An
// empty cache, requested < 0, or requested newer than every entry answers
// (UndefinedEpoch, UndefinedOffset).
func EndOffsetForEpoch(cache []EpochEntry, logEndOffset int64, requested int32) EpochEndOffset {
	undefined := EpochEndOffset{Epoch: UndefinedEpoch, EndOffset: UndefinedOffset}
	if requested < 0 || len(cache) == 0 {
		return undefined
	}
	if cache[len(cache)-1].Epoch == requested {
		return EpochEndOffset{Epoch: requested, EndOffset: logEndOffset}
	}
	// higher: the first entry with an epoch above requested.
	higher := -1
	for i, e := range cache {
		if e.Epoch > requested {
			higher = i
			break
		}
	}
	switch higher {
	case -1:
		return undefined
	case 0:
		return EpochEndOffset{Epoch: requested, EndOffset: cache[0].StartOffset}
	}
	return EpochEndOffset{Epoch: cache[higher-1].Epoch, EndOffset: cache[higher].StartOffset}
}

// LatestEpoch returns the epoch of the cache's last entry; UndefinedEpoch for
// an empty cache.
func LatestEpoch(cache []EpochEntry) int32 {
	if len(cache) == 0 {
		return UndefinedEpoch
	}
	return cache[len(cache)-1].Epoch
}

// assignEpoch records that epoch e starts at e.StartOffset, as Kafka's
// LeaderEpochFileCache.assign does: nothing changes if the latest entry
// already has that epoch at or before that offset; otherwise entries that
// would break the ordering (epoch ≥ e.Epoch or start ≥ e.StartOffset) are
// dropped first, which also drops epochs that never got a record.
func assignEpoch(cache []EpochEntry, e EpochEntry) ([]EpochEntry, bool) {
	if n := len(cache); n > 0 && cache[n-1].Epoch == e.Epoch && cache[n-1].StartOffset <= e.StartOffset {
		return cache, false
	}
	out := make([]EpochEntry, 0, len(cache)+1)
	for _, c := range cache {
		if c.Epoch < e.Epoch && c.StartOffset < e.StartOffset {
			out = append(out, c)
		}
	}
	return append(out, e), true
}

// truncateEpochsFromEnd drops the entries that start at or after endOffset,
// as the log truncation that goes with it removes their records.
func truncateEpochsFromEnd(cache []EpochEntry, endOffset int64) ([]EpochEntry, bool) {
	n := len(cache)
	for n > 0 && cache[n-1].StartOffset >= endOffset {
		n--
	}
	if n == len(cache) {
		return cache, false
	}
	return append([]EpochEntry(nil), cache[:n]...), true
}
