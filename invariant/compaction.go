package invariant

// Topic is what the checks need of a topic's configs.
type Topic struct {
	// Compact: cleanup.policy includes compact, so the log cleaner may
	// remove a record that a later record of its key supersedes, a
	// tombstone older than DeleteRetentionMs, and a record without a key.
	Compact bool
	// DeleteRetentionMs is delete.retention.ms.
	DeleteRetentionMs int64
}

// Compaction says which records the log cleaner may have removed from a
// compacted topic's logs (storage.Log.Clean): a record is removable once
// a record of the same key at a higher offset is known (an acknowledged
// write, or a record some replica holds), a tombstone once it is older
// than delete.retention.ms, and a record without a key always (a compacted
// topic refuses keyless writes; any there predate the policy). A key's
// latest acknowledged value that is gone is still lost. On a topic that
// does not compact nothing is removable.
type Compaction struct {
	topic  Topic
	nowMs  int64
	latest map[string]int64 // each key's highest offset known
}

// NewCompaction is topic's compaction as of nowMs, the clock the cleaner
// reads (the lab's), with no record known yet.
func NewCompaction(topic Topic, nowMs int64) *Compaction {
	return &Compaction{topic: topic, nowMs: nowMs, latest: map[string]int64{}}
}

// Saw notes a record of key at offset: an acknowledged write, or one a
// replica's log holds. Keyless records supersede nothing; a nil
// Compaction (a topic that does not compact) notes nothing.
func (c *Compaction) Saw(key string, offset int64) {
	if c == nil || key == "" {
		return
	}
	if o, ok := c.latest[key]; !ok || offset > o {
		c.latest[key] = offset
	}
}

// Removable reports whether the cleaner may have removed the record of
// key at offset (tombstone: its value is null; timestampMs: its timestamp,
// which the cleaner compares with delete.retention.ms).
func (c *Compaction) Removable(key string, offset int64, tombstone bool, timestampMs int64) bool {
	switch {
	case c == nil || !c.topic.Compact:
		return false
	case key == "":
		return true
	case c.latest[key] > offset:
		return true
	}
	// The cleaner drops a tombstone whose segment's newest timestamp is
	// older than now - delete.retention.ms; the segment's newest is at
	// least the tombstone's own.
	return tombstone && timestampMs < c.nowMs-c.topic.DeleteRetentionMs
}
