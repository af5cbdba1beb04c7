package quorum

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"tidemark/internal/crc32c"
	"tidemark/storage/vfs"
)

// StateFile is the name of the file, in the partition's directory, that
// holds a replica's Raft state: its HardState (term, vote, commit) and its
// Raft log entries, appended as records. Raft needs both on stable storage
// before it sends a message that depends on them. A compaction rewrites it
// (to a temporary file, then renamed over it) starting with a snapshot
// record, so it holds only the entries not yet applied or kept for slow
// followers.
const StateFile = "raft-state"

// Record kinds in the state file.
const (
	recHardState byte = 1
	recEntry     byte = 2
	// recApplied is an apply checkpoint: the entries up to an index are in
	// the segment log, which ends at an offset then.
	recApplied byte = 3
	// recSnapshot starts a compacted file: the entries up to its index are
	// gone from the file and in the segment log, which ends at its offset.
	recSnapshot byte = 4
)

// recordHeader is a record's CRC-32C (of kind and payload), payload length
// and kind.
const recordHeader = 4 + 4 + 1

// maxRecord bounds one record: an entry is one produced batch, which
// max.message.bytes bounds far below this.
const maxRecord = 1 << 30

// wal is the state file opened for appending. It is not safe for
// concurrent use; Node serializes its calls.
type wal struct {
	fs   vfs.FS
	path string
	f    vfs.File
	size int64
	buf  []byte
	// synced is told the file's length after every fsync (Config.Synced).
	synced func(int64)
	// pending are apply checkpoints waiting for the next write.
	pending []byte
}

// replayed is what openWAL read back.
type replayed struct {
	hs      raftpb.HardState
	snap    checkpoint // the initial one unless the file starts with a snapshot
	entries []entryRef // in file order; a later entry replaces from its index on
	applied []checkpoint
	// torn is how many bytes at the end did not form a whole record (a
	// crash or power loss mid-write); they were cut off.
	torn int64
}

// openWAL opens (creating it if missing) dir's state file, reads every
// whole record back and cuts a torn tail, so appends continue after the
// last good record.
func openWAL(fsys vfs.FS, dir string, synced func(int64)) (*wal, replayed, error) {
	path := filepath.Join(dir, StateFile)
	f, err := fsys.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, replayed{}, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, replayed{}, err
	}
	r := replayed{snap: initialSnap}
	good, err := replay(io.NewSectionReader(f, 0, st.Size()), &r)
	if err != nil {
		f.Close()
		return nil, replayed{}, fmt.Errorf("%s: %w", path, err)
	}
	if r.torn = st.Size() - good; r.torn > 0 {
		if err := f.Truncate(good); err != nil {
			f.Close()
			return nil, replayed{}, err
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return nil, replayed{}, err
		}
	}
	// What a crash left is on disk (the page cache survived it); a power
	// loss from now on cuts back to here at most.
	synced(good)
	return &wal{fs: fsys, path: path, f: f, size: good, synced: synced}, r, nil
}

// replay reads records until the end or the first one that is not whole
// and intact, and returns the length of the good prefix.
func replay(rd io.Reader, r *replayed) (int64, error) {
	var good int64
	hdr := make([]byte, recordHeader)
	for {
		if _, err := io.ReadFull(rd, hdr); err != nil {
			return good, nil // end, or a torn header
		}
		n := binary.BigEndian.Uint32(hdr[4:8])
		if n > maxRecord {
			return good, nil
		}
		payload := make([]byte, n)
		if _, err := io.ReadFull(rd, payload); err != nil {
			return good, nil
		}
		crc := crc32c.Update(crc32c.Checksum(hdr[8:9]), payload)
		if crc != binary.BigEndian.Uint32(hdr[0:4]) {
			return good, nil
		}
		switch hdr[8] {
		case recHardState:
			if err := r.hs.Unmarshal(payload); err != nil {
				return 0, fmt.Errorf("hard state at byte %d: %w", good, err)
			}
		case recEntry:
			var e raftpb.Entry
			if err := e.Unmarshal(payload); err != nil {
				return 0, fmt.Errorf("entry at byte %d: %w", good, err)
			}
			r.entries = append(r.entries, entryRef{index: e.Index, term: e.Term, pos: good + recordHeader, size: n})
		case recApplied, recSnapshot:
			c, ok := decodeCheckpoint(payload)
			if !ok {
				return 0, fmt.Errorf("checkpoint at byte %d: %d bytes", good, n)
			}
			if hdr[8] == recSnapshot {
				r.snap, r.entries, r.applied = c, nil, nil
			} else {
				r.applied = append(r.applied, c)
			}
		default:
			return 0, fmt.Errorf("unknown record kind %d at byte %d", hdr[8], good)
		}
		good += recordHeader + int64(n)
	}
}

// entryRef is where an entry's record lies in the state file: Raft's log
// is read back from the file when it needs an entry, so a replica keeps
// only these 32 bytes per entry in memory, not the batches.
type entryRef struct {
	index, term uint64
	pos         int64 // of the payload
	size        uint32
}

// checkpoint says that the entries up to index (of term) are in the
// segment log, which ends at offset end.
type checkpoint struct {
	index, term uint64
	end         int64
}

// initialSnap is every replica's starting point (see the package doc).
var initialSnap = checkpoint{index: 1, term: 1}

const checkpointSize = 8 + 8 + 8

func (c checkpoint) Size() int { return checkpointSize }

func (c checkpoint) MarshalTo(b []byte) (int, error) {
	binary.BigEndian.PutUint64(b[0:], c.index)
	binary.BigEndian.PutUint64(b[8:], c.term)
	binary.BigEndian.PutUint64(b[16:], uint64(c.end))
	return checkpointSize, nil
}

func decodeCheckpoint(b []byte) (checkpoint, bool) {
	if len(b) != checkpointSize {
		return checkpoint{}, false
	}
	return checkpoint{index: binary.BigEndian.Uint64(b), term: binary.BigEndian.Uint64(b[8:]),
		end: int64(binary.BigEndian.Uint64(b[16:]))}, true
}

// appendApplied queues an apply checkpoint for the next write (it costs no
// write of its own, and is not synced): it only saves work after a restart,
// and a lost one makes the owner re-apply from an earlier checkpoint, which
// gives the same log.
func (w *wal) appendApplied(c checkpoint) error {
	var err error
	w.pending, err = appendRecord(w.pending, recApplied, c)
	return err
}

// rewrite replaces the state file by one that starts at snap and holds hs,
// the entries after snap and the apply checkpoints after it: written to a
// temporary file, fsynced, renamed over the state file and the directory
// fsynced, so a crash at any point leaves one whole file. It returns where
// the entries now lie.
func (w *wal) rewrite(snap checkpoint, hs raftpb.HardState, entries []raftpb.Entry, applied []checkpoint) ([]entryRef, error) {
	buf, err := appendRecord(nil, recSnapshot, snap)
	if err != nil {
		return nil, err
	}
	refs := make([]entryRef, len(entries))
	for i := range entries {
		at := len(buf)
		if buf, err = appendRecord(buf, recEntry, &entries[i]); err != nil {
			return nil, err
		}
		refs[i] = entryRef{index: entries[i].Index, term: entries[i].Term, pos: int64(at) + recordHeader,
			size: uint32(len(buf) - at - recordHeader)}
	}
	if buf, err = appendRecord(buf, recHardState, &hs); err != nil {
		return nil, err
	}
	for _, c := range applied {
		if buf, err = appendRecord(buf, recApplied, c); err != nil {
			return nil, err
		}
	}
	path := w.path
	tmp := path + ".tmp"
	f, err := w.fs.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	if _, err = f.WriteAt(buf, 0); err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = w.fs.Rename(tmp, path)
	}
	if err == nil {
		err = vfs.SyncDir(w.fs, filepath.Dir(path))
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	w.f.Close()
	w.f, w.size = f, int64(len(buf))
	w.pending = w.pending[:0] // applied holds them
	w.synced(w.size)
	return refs, nil
}

// append writes entries and, if not empty, the hard state, and fsyncs
// when sync is set (raft.MustSync says when Raft needs it). It returns
// where each entry was written.
func (w *wal) append(entries []raftpb.Entry, hs raftpb.HardState, sync bool) ([]entryRef, error) {
	w.buf = append(w.buf[:0], w.pending...)
	w.pending = w.pending[:0]
	refs := make([]entryRef, len(entries))
	var err error
	for i := range entries {
		at := len(w.buf)
		if w.buf, err = appendRecord(w.buf, recEntry, &entries[i]); err != nil {
			return nil, err
		}
		refs[i] = entryRef{index: entries[i].Index, term: entries[i].Term, pos: w.size + int64(at) + recordHeader,
			size: uint32(len(w.buf) - at - recordHeader)}
	}
	if !raft.IsEmptyHardState(hs) {
		if w.buf, err = appendRecord(w.buf, recHardState, &hs); err != nil {
			return nil, err
		}
	}
	if len(w.buf) > 0 {
		if _, err := w.f.WriteAt(w.buf, w.size); err != nil {
			return nil, err
		}
		w.size += int64(len(w.buf))
	}
	if sync {
		if err := w.f.Sync(); err != nil {
			return nil, err
		}
		w.synced(w.size)
	}
	return refs, nil
}

// read reads back the entry at ref.
func (w *wal) read(ref entryRef) (raftpb.Entry, error) {
	buf := make([]byte, ref.size)
	if _, err := w.f.ReadAt(buf, ref.pos); err != nil {
		return raftpb.Entry{}, err
	}
	var e raftpb.Entry
	if err := e.Unmarshal(buf); err != nil {
		return raftpb.Entry{}, err
	}
	if e.Index != ref.index {
		return raftpb.Entry{}, fmt.Errorf("entry %d read back as %d", ref.index, e.Index)
	}
	return e, nil
}

type marshaler interface {
	Size() int
	MarshalTo([]byte) (int, error)
}

func appendRecord(buf []byte, kind byte, m marshaler) ([]byte, error) {
	start := len(buf)
	n := m.Size()
	buf = append(buf, make([]byte, recordHeader+n)...)
	rec := buf[start:]
	if _, err := m.MarshalTo(rec[recordHeader:]); err != nil {
		return buf[:start], err
	}
	binary.BigEndian.PutUint32(rec[4:8], uint32(n))
	rec[8] = kind
	binary.BigEndian.PutUint32(rec[0:4], crc32c.Update(crc32c.Checksum(rec[8:9]), rec[recordHeader:]))
	return buf, nil
}

// close writes the queued checkpoints and closes the file.
func (w *wal) close() error {
	if len(w.pending) > 0 {
		if _, err := w.f.WriteAt(w.pending, w.size); err != nil {
			w.f.Close()
			return err
		}
	}
	return w.f.Close()
}
