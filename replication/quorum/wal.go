package quorum

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"tidemark/storage/vfs"
)

// StateFile is the name of the file, in the partition's directory, that
// holds a replica's Raft state: its HardState (term, vote, commit) and its
// Raft log entries, appended as records. Raft needs both on stable storage
// before it sends a message that depends on them.
const StateFile = "raft-state"

// Record kinds in the state file.
const (
	recHardState byte = 1
	recEntry     byte = 2
)

// recordHeader is a record's CRC-32C (of kind and payload), payload length
// and kind.
const recordHeader = 4 + 4 + 1

// maxRecord bounds one record: an entry is one produced batch, which
// max.message.bytes bounds far below this.
const maxRecord = 1 << 30

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// wal is the state file opened for appending. It is not safe for
// concurrent use; Node serializes its calls.
type wal struct {
	f    vfs.File
	size int64
	buf  []byte
}

// replayed is what openWAL read back.
type replayed struct {
	hs      raftpb.HardState
	entries []entryRef // in file order; a later entry replaces from its index on
	// torn is how many bytes at the end did not form a whole record (a
	// crash or power loss mid-write); they were cut off.
	torn int64
}

// openWAL opens (creating it if missing) dir's state file, reads every
// whole record back and cuts a torn tail, so appends continue after the
// last good record.
func openWAL(fsys vfs.FS, dir string) (*wal, replayed, error) {
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
	var r replayed
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
	return &wal{f: f, size: good}, r, nil
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
		crc := crc32.Update(crc32.Checksum(hdr[8:9], castagnoli), castagnoli, payload)
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

// append writes entries and, if not empty, the hard state, and fsyncs
// when sync is set (raft.MustSync says when Raft needs it). It returns
// where each entry was written.
func (w *wal) append(entries []raftpb.Entry, hs raftpb.HardState, sync bool) ([]entryRef, error) {
	w.buf = w.buf[:0]
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
		return refs, w.f.Sync()
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
	binary.BigEndian.PutUint32(rec[0:4], crc32.Update(crc32.Checksum(rec[8:9], castagnoli), castagnoli, rec[recordHeader:]))
	return buf, nil
}

func (w *wal) close() error { return w.f.Close() }
