package quorum

import (
	"fmt"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// diskStorage is raft.Storage over the state file: the HardState, the
// voters and where each entry lies, with the entries themselves read back
// from the file when Raft needs them (to send to a follower, or to hand out
// as committed). raft.MemoryStorage would keep every batch ever produced in
// memory. Not safe for concurrent use; Node serializes its calls.
//
// The log starts after a snapshot: at first the initial one at index 1,
// term 1 that names the voters (see the package doc), after a compaction
// the last entry compacted away (whose records are in the segment log).
type diskStorage struct {
	wal  *wal
	hs   raftpb.HardState
	cs   raftpb.ConfState
	snap checkpoint
	ents []entryRef // index snap.index+1+i
}

var _ raft.Storage = (*diskStorage)(nil)

// InitialState returns the HardState and the voters.
func (s *diskStorage) InitialState() (raftpb.HardState, raftpb.ConfState, error) {
	return s.hs, s.cs, nil
}

// Entries reads the entries [lo, hi) back, at most maxSize bytes of them
// but at least one.
func (s *diskStorage) Entries(lo, hi, maxSize uint64) ([]raftpb.Entry, error) {
	last := s.lastIndex()
	switch {
	case lo < s.firstIndex():
		return nil, raft.ErrCompacted
	case hi > last+1 || lo > hi:
		return nil, fmt.Errorf("%w: entries [%d, %d) past the last index %d", raft.ErrUnavailable, lo, hi, last)
	}
	out := make([]raftpb.Entry, 0, hi-lo)
	var size uint64
	for i := lo; i < hi; i++ {
		e, err := s.wal.read(s.ents[i-s.firstIndex()])
		if err != nil {
			return nil, err
		}
		size += uint64(e.Size())
		if len(out) > 0 && size > maxSize {
			break
		}
		out = append(out, e)
	}
	return out, nil
}

// Term returns entry i's term.
func (s *diskStorage) Term(i uint64) (uint64, error) {
	switch {
	case i == s.snap.index:
		return s.snap.term, nil
	case i < s.snap.index:
		return 0, raft.ErrCompacted
	case i > s.lastIndex():
		return 0, raft.ErrUnavailable
	}
	return s.ents[i-s.firstIndex()].term, nil
}

// LastIndex returns the last entry's index (the snapshot's when empty).
func (s *diskStorage) LastIndex() (uint64, error) { return s.lastIndex(), nil }

func (s *diskStorage) lastIndex() uint64 { return s.snap.index + uint64(len(s.ents)) }

// FirstIndex returns the first entry's index.
func (s *diskStorage) FirstIndex() (uint64, error) { return s.firstIndex(), nil }

func (s *diskStorage) firstIndex() uint64 { return s.snap.index + 1 }

// Snapshot returns the last snapshot: its data is the segment log's end
// offset at its index (SnapshotData); the owner adds the records before it
// sends it (see Config.Restore).
func (s *diskStorage) Snapshot() (raftpb.Snapshot, error) {
	return raftpb.Snapshot{Data: encodeSnapshotData(SnapshotData{End: s.snap.end}),
		Metadata: raftpb.SnapshotMetadata{Index: s.snap.index, Term: s.snap.term, ConfState: s.cs}}, nil
}

// append records where new entries were written; an entry replaces the
// one at its index and every later one (a new leader overwrote them).
func (s *diskStorage) append(refs []entryRef) error {
	for _, r := range refs {
		if r.index < s.firstIndex() || r.index > s.lastIndex()+1 {
			return fmt.Errorf("entry %d does not follow %d", r.index, s.lastIndex())
		}
		s.ents = append(s.ents[:r.index-s.firstIndex()], r)
	}
	return nil
}
