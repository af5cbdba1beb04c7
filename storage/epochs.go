package storage

import (
	"fmt"
	"path/filepath"
	"strconv"

	"tidemark/storage/vfs"
)

// EpochEntry is one line of the leader-epoch cache: the first offset written
// under a leader epoch.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// Epochs returns the leader-epoch cache, oldest first; empty for an empty log
// or one whose batches carry no epoch.
func (l *Log) Epochs() []EpochEntry {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return append([]EpochEntry(nil), l.epochs...)
}

// AssignLeaderEpoch records in the leader-epoch cache that epoch starts at
// startOffset, if epoch is newer than every cached one. A new leader calls it
// when it takes over, before it writes anything (Kafka's assign on
// becoming leader); appended batches assign their epochs themselves.
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

// assignEpoch records that epoch starts at offset if epoch is newer than the
// latest one cached (each appended batch calls it; Kafka's
// LeaderEpochFileCache.assign).
func (l *Log) assignEpoch(epoch int32, offset int64) error {
	if epoch < 0 {
		return nil
	}
	if n := len(l.epochs); n > 0 && epoch <= l.epochs[n-1].Epoch {
		return nil
	}
	l.epochs = append(l.epochs, EpochEntry{epoch, offset})
	return l.writeEpochCheckpoint()
}

// truncateEpochsFromEnd drops the epochs that start at or above end, after
// the log is truncated there.
func (l *Log) truncateEpochsFromEnd(end int64) error {
	n := len(l.epochs)
	for n > 0 && l.epochs[n-1].StartOffset >= end {
		n--
	}
	if n == len(l.epochs) {
		return nil
	}
	l.epochs = l.epochs[:n]
	return l.writeEpochCheckpoint()
}

// truncateEpochsFromStart drops epochs wholly below the new log start
// offset; the epoch still in force there is kept, starting at start.
func (l *Log) truncateEpochsFromStart(start int64) error {
	i := 0
	for i+1 < len(l.epochs) && l.epochs[i+1].StartOffset <= start {
		i++
	}
	changed := i > 0
	l.epochs = l.epochs[i:]
	if len(l.epochs) > 0 && l.epochs[0].StartOffset < start {
		l.epochs[0].StartOffset = start
		changed = true
	}
	if !changed {
		return nil
	}
	return l.writeEpochCheckpoint()
}

func (l *Log) writeEpochCheckpoint() error {
	lines := make([]string, len(l.epochs))
	for i, e := range l.epochs {
		lines[i] = fmt.Sprintf("%d %d", e.Epoch, e.StartOffset)
	}
	return writeCheckpoint(l.env.fs, filepath.Join(l.dir, LeaderEpochCheckpointFile), lines)
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
		out = append(out, EpochEntry{int32(epoch), start})
	}
	return out, nil
}
