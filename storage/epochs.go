package storage

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"

	"tidemark/leaderepoch"
	"tidemark/storage/vfs"
)

// EpochEntry is one line of the leader-epoch cache: the first offset written
// under a leader epoch. Its rules are package leaderepoch's, shared with the
// replication rules and the UI.
type EpochEntry = leaderepoch.Entry

// Epochs returns the leader-epoch cache, oldest first; empty for an empty log
// or one whose batches carry no epoch.
func (l *Log) Epochs() []EpochEntry {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return append([]EpochEntry(nil), l.epochs...)
}

// AssignLeaderEpoch records in the leader-epoch cache that epoch starts at
// startOffset (leaderepoch.Assign). A new leader calls it when it takes
// over, before it writes anything (Kafka's assign on becoming leader);
// appended batches assign their epochs themselves, by the same rule.
func (l *Log) AssignLeaderEpoch(epoch int32, startOffset int64) error {
	return l.mutate("assign a leader epoch in", func() error {
		if l.closed {
			return ErrClosed
		}
		if startOffset < l.logStartOffset.Load() || startOffset > l.leo() {
			return &OffsetOutOfRangeError{startOffset, l.logStartOffset.Load(), l.leo()}
		}
		return l.assignEpoch(epoch, startOffset)
	})
}

// SetLeaderEpochs makes the leader-epoch cache exactly cache and writes
// leader-epoch-checkpoint if that changes it: the replication rules own the
// cache, and the broker writes what they decided. cache must be in order
// (leaderepoch.Valid) and lie within the log. added is what it wrote that
// the cache did not hold: cache's entries from the first that differs (none
// when only entries were dropped, or nothing changed).
func (l *Log) SetLeaderEpochs(cache []EpochEntry) (added []EpochEntry, err error) {
	if !leaderepoch.Valid(cache) {
		return nil, fmt.Errorf("storage: leader-epoch cache %v is not in order", cache)
	}
	err = l.mutate("write the leader epochs of", func() error {
		if l.closed {
			return ErrClosed
		}
		if n := len(cache); n > 0 && cache[n-1].StartOffset > l.leo() {
			return &OffsetOutOfRangeError{cache[n-1].StartOffset, l.logStartOffset.Load(), l.leo()}
		}
		if slices.Equal(cache, l.epochs) {
			return nil
		}
		same := 0
		for same < min(len(cache), len(l.epochs)) && cache[same] == l.epochs[same] {
			same++
		}
		added = slices.Clone(cache[same:])
		l.epochs = slices.Clone(cache)
		return l.writeEpochCheckpoint()
	})
	if err != nil {
		return nil, err
	}
	return added, nil
}

// assignEpoch records that epoch starts at offset (each appended batch
// calls it; Kafka's LeaderEpochFileCache.assign). changed says the cache
// took it (it is then the cache's last entry).
func (l *Log) assignEpoch(epoch int32, offset int64) error {
	_, err := l.assignEpochChanged(epoch, offset)
	return err
}

func (l *Log) assignEpochChanged(epoch int32, offset int64) (changed bool, err error) {
	e, changed := leaderepoch.Assign(l.epochs, EpochEntry{Epoch: epoch, StartOffset: offset})
	if !changed {
		return false, nil
	}
	l.epochs = e
	return true, l.writeEpochCheckpoint()
}

// truncateEpochsFromEnd drops the epochs that start at or above end, after
// the log is truncated there.
func (l *Log) truncateEpochsFromEnd(end int64) error {
	e, changed := leaderepoch.TruncateFromEnd(l.epochs, end)
	if !changed {
		return nil
	}
	l.epochs = e
	return l.writeEpochCheckpoint()
}

// truncateEpochsFromStart drops epochs wholly below the new log start
// offset; the epoch still in force there is kept, starting at start.
func (l *Log) truncateEpochsFromStart(start int64) error {
	e, changed := leaderepoch.TruncateFromStart(l.epochs, start)
	if !changed {
		return nil
	}
	l.epochs = e
	return l.writeEpochCheckpoint()
}

func (l *Log) writeEpochCheckpoint() error {
	lines := make([]string, len(l.epochs))
	for i, e := range l.epochs {
		lines[i] = fmt.Sprintf("%d %d", e.Epoch, e.StartOffset)
	}
	return writeLogCheckpoint(l.env, filepath.Join(l.dir, LeaderEpochCheckpointFile), lines)
}

// readEpochCheckpoint loads a partition's leader-epoch-checkpoint, keeping
// only a well-ordered list (epochs and start offsets increasing).
func readEpochCheckpoint(fsys vfs.FS, dir string) ([]EpochEntry, error) {
	entries, err := readCheckpoint(fsys, filepath.Join(dir, LeaderEpochCheckpointFile), 2)
	if err != nil {
		return nil, err
	}
	var out []EpochEntry
	for _, e := range entries {
		epoch, err1 := strconv.ParseInt(e[0], 10, 32)
		start, err2 := strconv.ParseInt(e[1], 10, 64)
		if err1 != nil || err2 != nil || epoch < 0 || start < 0 {
			return nil, fmt.Errorf("%s: bad entry %q %q", LeaderEpochCheckpointFile, e[0], e[1])
		}
		if n := len(out); n > 0 && (int32(epoch) <= out[n-1].Epoch || start < out[n-1].StartOffset) {
			return nil, fmt.Errorf("%s: entries out of order at epoch %d", LeaderEpochCheckpointFile, epoch)
		}
		out = append(out, EpochEntry{Epoch: int32(epoch), StartOffset: start})
	}
	return out, nil
}
