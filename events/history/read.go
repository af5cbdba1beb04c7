package history

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"

	"tidemark/events"
)

// Page is a run of the history's events, oldest first, with Base: the state
// after the event before the first of them (after Events[0].Seq-1), so
// applying Events to Base in order rebuilds the state after each.
// First and Last are the history's Bounds when the page was read.
type Page struct {
	Base        events.Snapshot
	Events      []events.Event
	First, Last uint64
}

// segView is a segment as a reader sees it: what was committed when the
// reader looked. The index only grows, so its committed prefix is stable.
type segView struct {
	base, last uint64
	size       int64
	index      []indexEntry
	path       string
}

// view copies what readers need under mu.
func (s *Store) view() (segs []segView, first, last uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, seg := range s.segs {
		ix := seg.index
		n := len(ix)
		for n > 0 && ix[n-1].pos >= seg.size {
			n-- // appended but not committed yet
		}
		segs = append(segs, segView{base: seg.base, last: seg.last, size: seg.size, index: ix[:n:n], path: seg.path})
	}
	if len(segs) > 0 {
		first, last = s.first, segs[len(segs)-1].last
	}
	return segs, first, last
}

// scan reads seg's records from pos on, calling fn with each until it
// returns false. A segment dropped meanwhile is ErrNotKept.
func scan(seg segView, pos int64, fn func(typ byte, payload []byte) bool) error {
	f, err := os.Open(seg.path)
	if errors.Is(err, os.ErrNotExist) {
		return ErrNotKept
	}
	if err != nil {
		return err
	}
	defer f.Close()
	r := &recordReader{r: bufio.NewReaderSize(io.NewSectionReader(f, pos, seg.size-pos), 32<<10)}
	for {
		typ, payload, err := r.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if !fn(typ, payload) {
			return nil
		}
	}
}

// SnapshotAt rebuilds the state after event seq: the checkpoint before it
// with at most CheckpointEvery events applied. It is ErrNotKept for a seq
// before First-1, after Last, or inside a Gap.
func (s *Store) SnapshotAt(seq uint64) (events.Snapshot, error) {
	segs, first, last := s.view()
	if len(segs) == 0 || seq+1 < first || seq > last {
		return events.Snapshot{}, ErrNotKept
	}
	return snapshotAt(segs, seq)
}

func snapshotAt(segs []segView, seq uint64) (events.Snapshot, error) {
	i := len(segs) - 1
	for i > 0 && segs[i].base > seq {
		i--
	}
	seg := segs[i]
	var from *indexEntry
	for j := range seg.index {
		if e := &seg.index[j]; e.checkpoint && e.seq <= seq {
			from = e
		}
	}
	if from == nil {
		return events.Snapshot{}, ErrNotKept
	}
	var snap events.Snapshot
	var err error
	started := false
	scanErr := scan(seg, from.pos, func(typ byte, payload []byte) bool {
		switch {
		case !started:
			started = true
			err = json.Unmarshal(payload, &snap)
			return err == nil && snap.Seq < seq
		case typ == recGap:
			err = ErrNotKept
			return false
		case typ == recEvent:
			var e events.Event
			if err = json.Unmarshal(payload, &e); err != nil {
				return false
			}
			if e.Seq != snap.Seq+1 {
				err = ErrNotKept
				return false
			}
			snap.Apply(e)
			return snap.Seq < seq
		}
		return true // a later checkpoint: the events carry on after it
	})
	if err == nil {
		err = scanErr
	}
	if err == nil && snap.Seq != seq {
		err = ErrNotKept
	}
	return snap, err
}

// Page returns up to limit events before Seq before (0: the newest), oldest
// first, whose encoded size stays within maxBytes (at least one event),
// and the state they start from. A page never spans a Gap: it starts
// after one. before at or below First gives no events and Base at First-1.
func (s *Store) Page(before uint64, limit int, maxBytes int) (Page, error) {
	segs, first, last := s.view()
	p := Page{First: first, Last: last}
	if len(segs) == 0 {
		return p, ErrNotKept
	}
	hi := last
	if before > 0 {
		hi = min(before-1, last)
	}
	if hi < first {
		b, err := snapshotAt(segs, first-1)
		p.Base = b
		return p, err
	}
	limit = max(limit, 1)
	lo := first
	if hi-first+1 > uint64(limit) {
		lo = hi - uint64(limit) + 1
	}
	raws, err := readRange(segs, lo, hi)
	if err != nil {
		return p, err
	}
	size, i := 0, len(raws)
	for i > 0 && (i == len(raws) || size+len(raws[i-1]) <= maxBytes) {
		size += len(raws[i-1])
		i--
	}
	raws = raws[i:]
	p.Events = make([]events.Event, len(raws))
	for j, raw := range raws {
		if err := json.Unmarshal(raw, &p.Events[j]); err != nil {
			return p, err
		}
	}
	at := hi
	if len(p.Events) > 0 {
		at = p.Events[0].Seq - 1
	}
	p.Base, err = snapshotAt(segs, at)
	return p, err
}

// readRange returns the encoded events with Seq lo to hi, those after the
// last gap among them.
func readRange(segs []segView, lo, hi uint64) ([][]byte, error) {
	var out [][]byte
	next := uint64(0) // the Seq expected next; 0 before the first
	for _, seg := range segs {
		if seg.last < lo || seg.base >= hi {
			continue
		}
		var pos int64
		for _, e := range seg.index {
			if e.checkpoint && e.seq < lo || !e.checkpoint && e.seq <= lo {
				pos = e.pos
			}
		}
		done := false
		err := scan(seg, pos, func(typ byte, payload []byte) bool {
			if typ == recGap {
				out, next = out[:0], 0
				return true
			}
			if typ != recEvent {
				return true
			}
			seq, ok := eventSeq(payload)
			if !ok || seq < lo {
				return true
			}
			if seq > hi {
				done = true
				return false
			}
			if next != 0 && seq != next {
				out = out[:0] // a hole: the page starts after it
			}
			out = append(out, append([]byte(nil), payload...))
			next = seq + 1
			return true
		})
		if err != nil {
			return nil, err
		}
		if done {
			break
		}
	}
	return out, nil
}
