package storage

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"

	"tidemark/storage/vfs"
)

// cleanedSuffix names a segment's cleaned copy while it is written; it
// replaces the .log by a rename, and a leftover one (a crash mid-write) is
// removed by the next clean.
const cleanedSuffix = ".log.cleaned"

// CleanResult is what one pass of the log cleaner saw and did. The
// cleanable log is the sealed segments below the HW: its clean section
// [LogStart, FirstDirty) was compacted before, its dirty section
// [FirstDirty, CleanableEnd) was not.
type CleanResult struct {
	Ran          bool // the dirty ratio reached min.cleanable.dirty.ratio, and the pass ran
	LogStart     int64
	FirstDirty   int64 // before the pass
	CleanableEnd int64 // the clean section ends here after the pass
	CleanBytes   int64 // before the pass
	DirtyBytes   int64
	DirtyRatio   float64
	// Segments is how many segments were rewritten; the counts are of
	// records dropped: older values of a key, tombstones past
	// delete.retention.ms, and records without a key (a compacted topic
	// keeps records by key).
	Segments          int
	KeysSeen          int
	Superseded        int
	TombstonesRemoved int
	KeylessRemoved    int
	BytesBefore       int64
	BytesAfter        int64
}

// CleanerSections returns the log's clean and dirty sections as the cleaner
// last left them (for the lanes): the clean section is [LogStart,
// FirstDirty); the rest of the log is dirty.
func (l *Log) CleanerSections() (logStart, firstDirty int64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.logStartOffset.Load(), max(l.cleanedTo, l.logStartOffset.Load())
}

// Clean runs the log cleaner once, as Kafka's LogCleaner does for a log
// whose cleanup.policy includes compact: over the sealed segments below
// upperBound (the HW), if the dirty section is at least
// min.cleanable.dirty.ratio of them, it keeps only each key's latest
// record (by offset), drops tombstones in the clean section older than
// delete.retention.ms, and rewrites each segment in place. Offsets never
// change: a batch keeps its base and last offset even when records inside
// it go, and a run of batches left empty becomes one empty batch spanning
// their offsets, so readers skip the gap and the log stays contiguous. The
// cleaner's position is kept in memory (after a restart the next pass
// cleans everything once more, which changes nothing).
func (l *Log) Clean(upperBound int64) (CleanResult, error) {
	var res CleanResult
	err := l.mutate("clean", func() error {
		if l.closed {
			return ErrClosed
		}
		var err error
		res, err = l.cleanLocked(upperBound)
		return err
	})
	return res, err
}

// DirtyRatio returns where the log's dirty section starts and its dirty
// ratio now, as the cleaner's next pass over the sealed segments below
// upperBound (the HW) would see it: what the lanes show between passes.
func (l *Log) DirtyRatio(upperBound int64) (firstDirty int64, ratio float64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	res, _ := l.sectionsLocked(upperBound)
	return res.FirstDirty, res.DirtyRatio
}

// sectionsLocked measures the cleanable log below upperBound: its clean
// and dirty bytes and ratio; n is how many segments are cleanable (0: none,
// CleanableEnd is then FirstDirty).
func (l *Log) sectionsLocked(upperBound int64) (res CleanResult, n int) {
	start := l.logStartOffset.Load()
	res = CleanResult{LogStart: start, FirstDirty: max(l.cleanedTo, start)}
	// The cleanable segments: sealed, wholly below the HW.
	for n < len(l.segments)-1 && l.segments[n+1].baseOffset <= upperBound {
		n++
	}
	if !l.env.cfg.Cleanup.Compacts() || n == 0 {
		res.CleanableEnd = res.FirstDirty
		return res, 0
	}
	res.CleanableEnd = l.segments[n].baseOffset
	for i, s := range l.segments[:n] {
		next := l.segments[i+1].baseOffset
		switch {
		case next <= res.FirstDirty:
			res.CleanBytes += s.size
		default:
			res.DirtyBytes += s.size
		}
	}
	if total := res.CleanBytes + res.DirtyBytes; total > 0 {
		res.DirtyRatio = float64(res.DirtyBytes) / float64(total)
	}
	return res, n
}

func (l *Log) cleanLocked(upperBound int64) (CleanResult, error) {
	cfg := l.env.cfg
	res, n := l.sectionsLocked(upperBound)
	if n == 0 {
		return res, nil
	}
	segs := l.segments[:n]
	end := res.CleanableEnd
	// Kafka's LogCleanerManager cleans a log whose ratio exceeds the minimum.
	if res.DirtyBytes == 0 || res.DirtyRatio <= cfg.MinCleanableDirtyRatio {
		res.CleanableEnd = res.FirstDirty
		return res, nil
	}
	// Pass 1: each key's latest offset in the dirty section (Kafka's
	// offset map; the clean section's keys are already unique).
	latest := map[string]int64{}
	for i, s := range segs {
		if l.segments[i+1].baseOffset <= res.FirstDirty {
			continue
		}
		err := eachRecordIn(s, func(h BatchHeader, off int64, key []byte, hasKey, tombstone bool) {
			if hasKey && off >= res.FirstDirty {
				latest[string(key)] = off
			}
		})
		if err != nil {
			return res, err
		}
	}
	res.KeysSeen = len(latest)
	// Pass 2: rewrite every cleanable segment (the clean section too: a
	// key seen again in the dirty section loses its older record there).
	horizon := l.env.now().Add(-cfg.DeleteRetention).UnixMilli()
	for i, s := range segs {
		inClean := l.segments[i+1].baseOffset <= res.FirstDirty
		dropTombstones := inClean && s.maxTimestamp >= 0 && s.maxTimestamp < horizon
		before, after, changed, err := l.rewriteSegment(s, latest, dropTombstones, &res)
		if err != nil {
			return res, err
		}
		res.BytesBefore += before
		res.BytesAfter += after
		if changed {
			res.Segments++
		}
	}
	if err := vfs.SyncDir(l.env.fs, l.dir); err != nil {
		return res, err
	}
	l.cleanedTo = end
	res.Ran = true
	return res, nil
}

// eachRecordIn calls fn for every record of a sealed segment, in order.
func eachRecordIn(s *segment, fn func(h BatchHeader, off int64, key []byte, hasKey, tombstone bool)) error {
	return eachBatchIn(s, func(h BatchHeader, batch []byte) error {
		if h.Attributes&controlBatchBit != 0 || h.NumRecords == 0 {
			return nil
		}
		raw, err := decompress(h.Attributes&compressionMask, batch[batchHeaderSize:])
		if err != nil {
			return fmt.Errorf("%w: cleaning %s: %v", ErrCorruptMessage, s.path(LogFileSuffix), err)
		}
		return eachRawRecord(raw, h.NumRecords, func(rec []byte, off int32, key []byte, hasKey, tombstone bool) {
			fn(h, h.BaseOffset+int64(off), key, hasKey, tombstone)
		})
	})
}

// eachBatchIn calls fn with every batch of segment s (its header and bytes).
func eachBatchIn(s *segment, fn func(h BatchHeader, batch []byte) error) error {
	if err := s.ensureOpen(); err != nil {
		return err
	}
	s.mu.Lock()
	f := s.log
	s.mu.Unlock()
	var buf []byte
	for pos := int64(0); pos < s.size; {
		h, err := s.readHeader(pos, s.size)
		if err != nil {
			return err
		}
		buf = growTo(buf, int(h.Size()))
		if _, err := f.ReadAt(buf, pos); err != nil {
			return err
		}
		if err := fn(h, buf); err != nil {
			return err
		}
		pos += h.Size()
	}
	return nil
}

// eachRawRecord walks n length-prefixed records of a decompressed records
// section: rec is the whole record with its length prefix, off its offset
// delta, key nil when hasKey is false, tombstone a null value.
func eachRawRecord(raw []byte, n int32, fn func(rec []byte, off int32, key []byte, hasKey, tombstone bool)) error {
	bad := fmt.Errorf("%w: a record does not decode", ErrCorruptMessage)
	for range n {
		length, ln := binary.Varint(raw)
		if ln <= 0 || length < 1 || int64(len(raw)-ln) < length {
			return bad
		}
		rec := raw[:ln+int(length)]
		body := rec[ln:]
		p := 1 // attributes
		var v [4]int64
		for i := range v { // timestamp delta, offset delta, key length, (value length after the key)
			if i == 3 && v[2] > 0 {
				p += int(v[2])
			}
			if p > len(body) {
				return bad
			}
			x, k := binary.Varint(body[p:])
			if k <= 0 {
				return bad
			}
			v[i], p = x, p+k
		}
		hasKey := v[2] >= 0
		var key []byte
		if hasKey {
			at := p - varintLen(v[3]) - int(v[2])
			key = body[at : at+int(v[2])]
		}
		fn(rec, int32(v[1]), key, hasKey, v[3] < 0)
		raw = raw[len(rec):]
	}
	return nil
}

// varintLen is the length of x as a zigzag varint.
func varintLen(x int64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutVarint(b[:], x)
}

// rewriteSegment writes segment s's records that compaction keeps to a
// cleaned copy and swaps it in, when anything was dropped. Callers hold
// the log's write lock.
func (l *Log) rewriteSegment(s *segment, latest map[string]int64, dropTombstones bool, res *CleanResult) (before, after int64, changed bool, err error) {
	path := s.path(LogFileSuffix)
	tmp := s.path(cleanedSuffix)
	f, err := l.env.fs.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return 0, 0, false, err
	}
	defer func() {
		if f != nil {
			f.Close()
			l.env.fs.Remove(tmp)
		}
	}()
	w := bufio.NewWriterSize(f, 64<<10)
	var written int64
	write := func(b []byte) error {
		written += int64(len(b))
		_, err := w.Write(b)
		return err
	}
	// empty is a run of batches left without records, written as one
	// empty batch once the run ends.
	var empty *BatchHeader
	flushEmpty := func() error {
		if empty == nil {
			return nil
		}
		b, err := encodeBatch(*empty, 0, 0, nil)
		empty = nil
		if err != nil {
			return err
		}
		return write(b)
	}
	err = eachBatchIn(s, func(h BatchHeader, batch []byte) error {
		before += int64(len(batch))
		if h.Attributes&controlBatchBit != 0 || h.NumRecords == 0 {
			if err := flushEmpty(); err != nil {
				return err
			}
			return write(batch)
		}
		codec := h.Attributes & compressionMask
		raw, err := decompress(codec, batch[batchHeaderSize:])
		if err != nil {
			return fmt.Errorf("%w: cleaning %s: %v", ErrCorruptMessage, path, err)
		}
		var kept []byte
		var nKept int32
		err = eachRawRecord(raw, h.NumRecords, func(rec []byte, off int32, key []byte, hasKey, tombstone bool) {
			abs := h.BaseOffset + int64(off)
			switch {
			case !hasKey:
				res.KeylessRemoved++
			case latest[string(key)] > abs:
				res.Superseded++
			case tombstone && dropTombstones:
				res.TombstonesRemoved++
			default:
				kept = append(kept, rec...)
				nKept++
			}
		})
		if err != nil {
			return err
		}
		switch {
		case nKept == h.NumRecords:
			if err := flushEmpty(); err != nil {
				return err
			}
			return write(batch)
		case nKept == 0:
			// Joined to the run before it when nothing tells them apart.
			if empty != nil && empty.ProducerID == h.ProducerID && empty.ProducerEpoch == h.ProducerEpoch &&
				empty.PartitionLeaderEpoch == h.PartitionLeaderEpoch && empty.NextOffset() == h.BaseOffset && h.ProducerID < 0 {
				empty.LastOffsetDelta = int32(h.LastOffset() - empty.BaseOffset)
				empty.MaxTimestamp = max(empty.MaxTimestamp, h.MaxTimestamp)
				return nil
			}
			if err := flushEmpty(); err != nil {
				return err
			}
			e := h
			e.Attributes &^= compressionMask
			empty = &e
			return nil
		}
		if err := flushEmpty(); err != nil {
			return err
		}
		b, err := encodeBatch(h, codec, nKept, kept)
		if err != nil {
			return err
		}
		return write(b)
	})
	if err == nil {
		err = flushEmpty()
	}
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		return before, before, false, err
	}
	if written == before {
		return before, before, false, nil // nothing dropped: the copy is not needed
	}
	if err := f.Sync(); err != nil {
		return before, before, false, err
	}
	f.Close()
	f = nil
	// Swap: the segment's files are closed (a reader holding a region of
	// the old file retries its fetch), the copy renamed over the .log, and
	// the indexes rebuilt from it.
	s.close()
	if err := l.env.fs.Rename(tmp, path); err != nil {
		return before, before, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loaded = false
	if err := s.openLocked(); err != nil {
		return before, written, true, err
	}
	if _, err := s.rebuild(false); err != nil {
		return before, written, true, err
	}
	s.loaded = true
	if s.log != nil {
		s.log.Close()
		s.log = nil
	}
	return before, written, true, nil
}
