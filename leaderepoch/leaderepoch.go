// Package leaderepoch holds the rules of Kafka's leader-epoch cache
// (LeaderEpochFileCache), once: the replication rules, the log on disk and
// the UI's snapshot all keep a cache, and all change it through these
// functions, so the three never disagree. It imports nothing, so the WASM
// panel can use it too.
//
// A cache is a list of entries, each saying that leader epoch Epoch wrote
// its first record at StartOffset, kept in increasing order of both.
package leaderepoch

// Entry is one line of the leader-epoch cache.
type Entry struct {
	Epoch       int32 `json:"epoch"`
	StartOffset int64 `json:"start_offset"`
}

// EndOffset names the end offset (exclusive) of a leader epoch, as
// OffsetsForLeaderEpoch and a Fetch response's diverging epoch carry it.
type EndOffset struct {
	Epoch     int32
	EndOffset int64
}

// UndefinedEpoch is the epoch Kafka answers when it cannot name one (-1).
const UndefinedEpoch int32 = -1

// UndefinedOffset is the offset Kafka answers when it cannot name one (-1).
const UndefinedOffset int64 = -1

// Assign records that epoch e.Epoch starts at e.StartOffset, as Kafka's
// LeaderEpochFileCache.assign does: nothing changes (false) if the latest
// entry already has that epoch at or before that offset, or if e.Epoch is
// negative (a batch without an epoch); otherwise entries that would break
// the ordering (epoch ≥ e.Epoch or start ≥ e.StartOffset) are dropped
// first, which also drops epochs that never got a record. cache is not
// changed; the result is a new slice.
func Assign(cache []Entry, e Entry) ([]Entry, bool) {
	if e.Epoch < 0 {
		return cache, false
	}
	if n := len(cache); n > 0 && cache[n-1].Epoch == e.Epoch && cache[n-1].StartOffset <= e.StartOffset {
		return cache, false
	}
	out := make([]Entry, 0, len(cache)+1)
	for _, c := range cache {
		if c.Epoch < e.Epoch && c.StartOffset < e.StartOffset {
			out = append(out, c)
		}
	}
	return append(out, e), true
}

// TruncateFromEnd drops the entries that start at or after end, as the log
// truncation that goes with it removes their records (Kafka's
// truncateFromEndAsyncFlush); false if none did.
func TruncateFromEnd(cache []Entry, end int64) ([]Entry, bool) {
	n := len(cache)
	for n > 0 && cache[n-1].StartOffset >= end {
		n--
	}
	if n == len(cache) {
		return cache, false
	}
	return append([]Entry(nil), cache[:n]...), true
}

// TruncateFromStart drops the entries wholly below a new log start offset;
// the epoch still in force there is kept, starting at start (Kafka's
// truncateFromStartAsyncFlush); false if nothing changed.
func TruncateFromStart(cache []Entry, start int64) ([]Entry, bool) {
	i := 0
	for i+1 < len(cache) && cache[i+1].StartOffset <= start {
		i++
	}
	if i == 0 && (len(cache) == 0 || cache[0].StartOffset >= start) {
		return cache, false
	}
	out := append([]Entry(nil), cache[i:]...)
	if out[0].StartOffset < start {
		out[0].StartOffset = start
	}
	return out, true
}

// EndOffsetFor answers an OffsetsForLeaderEpoch request for requested from
// a cache and the log's LEO, with Kafka's semantics: the largest epoch ≤
// requested that the cache knows, and its end offset — the start offset of
// the next epoch, or logEndOffset for the latest epoch. A requested epoch
// older than every entry answers (requested, first start offset). An empty
// cache, requested < 0, or requested newer than every entry answers
// (UndefinedEpoch, UndefinedOffset).
func EndOffsetFor(cache []Entry, logEndOffset int64, requested int32) EndOffset {
	undefined := EndOffset{Epoch: UndefinedEpoch, EndOffset: UndefinedOffset}
	if requested < 0 || len(cache) == 0 {
		return undefined
	}
	if cache[len(cache)-1].Epoch == requested {
		return EndOffset{Epoch: requested, EndOffset: logEndOffset}
	}
	higher := -1 // the first entry with an epoch above requested
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
		return EndOffset{Epoch: requested, EndOffset: cache[0].StartOffset}
	}
	return EndOffset{Epoch: cache[higher-1].Epoch, EndOffset: cache[higher].StartOffset}
}

// Latest returns the epoch of the cache's last entry; UndefinedEpoch for an
// empty cache.
func Latest(cache []Entry) int32 {
	if len(cache) == 0 {
		return UndefinedEpoch
	}
	return cache[len(cache)-1].Epoch
}

// Valid reports whether cache is in order: epochs and start offsets
// increasing (start offsets may repeat only when Assign would have dropped
// the earlier entry, so not at all), no negative values.
func Valid(cache []Entry) bool {
	for i, e := range cache {
		if e.Epoch < 0 || e.StartOffset < 0 {
			return false
		}
		if i > 0 && (e.Epoch <= cache[i-1].Epoch || e.StartOffset <= cache[i-1].StartOffset) {
			return false
		}
	}
	return true
}
