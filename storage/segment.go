package storage

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"tidemark/storage/vfs"
)

// File suffixes of a segment, as in Kafka.
const (
	LogFileSuffix       = ".log"
	IndexFileSuffix     = ".index"
	TimeIndexFileSuffix = ".timeindex"
)

// segmentFileName returns Kafka's name for a segment file: the base offset
// zero-padded to 20 digits, then the suffix.
func segmentFileName(base int64, suffix string) string {
	return fmt.Sprintf("%020d%s", base, suffix)
}

// segment is one .log file with its two indexes. The Log's lock guards every
// field except the lazily loaded ones, which mu guards: segments below the
// recovery point are not read at open (that is what keeps recovery fast), so
// their file and indexes are loaded on first use.
type segment struct {
	dir        string
	baseOffset int64
	env        *env

	// nextOffset is one past the last offset in the segment (the LEO for the
	// active segment); baseOffset when empty.
	nextOffset int64
	created    time.Time

	// size is the readable length of the .log file: it moves only after a
	// whole batch is written, so readers never see a partial batch.
	size int64

	mu     sync.Mutex // guards the lazy fields below
	loaded bool       // the indexes are in memory
	// log is the open .log file; nil for a sealed segment not read lately:
	// like Kafka's lazy index, a sealed segment's file is opened on first
	// read (ensureOpen) and closed again once idle (closeIfIdle), so a
	// broker of thousands of partitions holds descriptors only for the
	// active segments and those being read.
	log vfs.File
	// lastRead is when a reader last needed the .log (the env's clock,
	// Unix nanoseconds); readers share the Log's lock, so it is atomic.
	lastRead  atomic.Int64
	index     []IndexEntry
	timeIndex []TimeIndexEntry
	// maxTimestamp and offsetOfMaxTimestamp: the largest batch max timestamp
	// so far and the last offset of the batch that has it; -1 when empty.
	maxTimestamp         int64
	offsetOfMaxTimestamp int64

	// Only the active segment is written. Its new index entries wait in
	// memory and go to the files in one write at the next sync: a crash
	// loses at most entries that recovery rebuilds anyway.
	indexFile, timeIndexFile     vfs.File
	indexOnDisk, timeIndexOnDisk int // entries already written to the files
	bytesSinceIndexEntry         int64
	dirty                        bool // written since the last fsync
	// unopened: the segment is a new log's first one and its files do not
	// exist yet; the first write creates them (create). Until then it is
	// empty and nothing reads its files.
	unopened bool
}

func (s *segment) path(suffix string) string {
	return filepath.Join(s.dir, segmentFileName(s.baseOffset, suffix))
}

// createSegment makes the three empty files of a new active segment and
// makes their directory entries durable. In a new log's directory (see
// syncTracker.newDirs) it makes none: the segment's first write creates
// them, so a topic of a thousand partitions costs a thousand mkdirs rather
// than four thousand file operations, and nothing is fsynced before there
// is data to keep.
func createSegment(dir string, base int64, e *env) (*segment, error) {
	s := &segment{dir: dir, baseOffset: base, nextOffset: base, env: e, created: e.now(),
		loaded: true, maxTimestamp: -1, offsetOfMaxTimestamp: -1}
	if e.tracker.isNew(dir) {
		s.unopened = true
		return s, nil
	}
	if err := s.create(); err != nil {
		return nil, err
	}
	if err := vfs.SyncDir(e.fs, dir); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// create makes the segment's three files, empty, and opens them.
func (s *segment) create() error {
	var err error
	if s.log, err = s.env.fs.OpenFile(s.path(LogFileSuffix), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644); err != nil {
		return err
	}
	s.unopened = false
	if err := s.openIndexWriters(true); err != nil {
		// Back to unopened, so a later append tries again (after EMFILE the
		// dir stays online): the empty .log left is truncated then.
		s.close()
		s.unopened = true
		return err
	}
	for _, suffix := range []string{LogFileSuffix, IndexFileSuffix, TimeIndexFileSuffix} {
		s.env.tracker.set(s.path(suffix), 0)
	}
	return nil
}

func (s *segment) openIndexWriters(truncate bool) error {
	if s.unopened {
		return nil // create opens them
	}
	flags := os.O_WRONLY | os.O_CREATE
	if truncate {
		flags |= os.O_TRUNC
	}
	var err error
	if s.indexFile, err = s.env.fs.OpenFile(s.path(IndexFileSuffix), flags, 0o644); err != nil {
		return err
	}
	s.timeIndexFile, err = s.env.fs.OpenFile(s.path(TimeIndexFileSuffix), flags, 0o644)
	return err
}

// ensureLoaded reads both indexes of a segment that was not read at open,
// without keeping any file open. A damaged index is rebuilt from the .log
// file.
func (s *segment) ensureLoaded() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loadLocked()
}

// ensureOpen loads the segment and opens its .log file if it is closed, for
// a read, and records the read so closeIfIdle keeps the file open a while.
func (s *segment) ensureOpen() error {
	s.lastRead.Store(s.env.now().UnixNano())
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.loadLocked(); err != nil {
		return err
	}
	return s.openLocked()
}

// openLocked opens the .log file unless it is open or not yet created.
func (s *segment) openLocked() error {
	if s.log != nil || s.unopened {
		return nil
	}
	f, err := s.env.fs.OpenFile(s.path(LogFileSuffix), os.O_RDWR, 0)
	if err != nil {
		return err
	}
	s.log = f
	return nil
}

func (s *segment) loadLocked() error {
	if s.loaded {
		return nil
	}
	// An unreadable index is rebuilt from the .log file, like a damaged one.
	idx, _ := vfs.ReadFile(s.env.fs, s.path(IndexFileSuffix))
	tidx, _ := vfs.ReadFile(s.env.fs, s.path(TimeIndexFileSuffix))
	var ok1, ok2 bool
	s.index, ok1 = parseIndex(idx, s.size)
	s.timeIndex, ok2 = parseTimeIndex(tidx)
	if !ok1 || !ok2 {
		s.env.logger.Warn("rebuilding a damaged index", "segment", s.path(LogFileSuffix))
		if err := s.openLocked(); err != nil {
			return err
		}
		if _, err := s.rebuild(false); err != nil {
			return err
		}
	}
	s.maxTimestamp, s.offsetOfMaxTimestamp = -1, -1
	if n := len(s.timeIndex); n > 0 {
		s.maxTimestamp = s.timeIndex[n-1].Timestamp
		s.offsetOfMaxTimestamp = s.baseOffset + int64(s.timeIndex[n-1].RelativeOffset)
	}
	s.loaded = true
	return nil
}

// closeIfIdle closes the .log file of a sealed segment (no index writers
// open) that no reader needed for idle, and reports whether it did. The
// Log's write lock is held, so no reader is between ensureOpen and its
// last read; a FileRegion handed out earlier and sent later than idle
// after its read fails, and the fetch is retried (see FileRegion).
func (s *segment) closeIfIdle(now time.Time, idle time.Duration) bool {
	if s.indexFile != nil || now.UnixNano()-s.lastRead.Load() < int64(idle) {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.log == nil {
		return false
	}
	s.log.Close()
	s.log = nil
	return true
}

// readHeader reads the batch header at pos; io.ErrUnexpectedEOF if the file
// ends inside it.
func (s *segment) readHeader(pos, limit int64) (BatchHeader, error) {
	if limit-pos < batchHeaderSize {
		return BatchHeader{}, io.ErrUnexpectedEOF
	}
	// A lookup reads several headers: on the OS's own files the buffer
	// stays on the stack, which it cannot when passed through the vfs.File
	// interface.
	if f, ok := s.log.(*os.File); ok {
		var buf [batchHeaderSize]byte
		if _, err := f.ReadAt(buf[:], pos); err != nil {
			return BatchHeader{}, err
		}
		return parseBatchHeader(buf[:])
	}
	buf := make([]byte, batchHeaderSize)
	if _, err := s.log.ReadAt(buf, pos); err != nil {
		return BatchHeader{}, err
	}
	return parseBatchHeader(buf)
}

// rebuild re-reads the whole .log file: it validates each batch (length,
// magic, CRC-32C, offsets), cuts the file at the first invalid or torn byte,
// and rebuilds both indexes and the tail state. It returns the headers of
// the valid batches, in order. With active set it leaves the index writers
// open for appends.
func (s *segment) rebuild(active bool) ([]BatchHeader, error) {
	st, err := s.log.Stat()
	if err != nil {
		return nil, err
	}
	fileSize := st.Size()
	s.index, s.timeIndex = nil, nil
	s.maxTimestamp, s.offsetOfMaxTimestamp = -1, -1
	s.bytesSinceIndexEntry = 0
	s.nextOffset = s.baseOffset
	var headers []BatchHeader
	var pos int64
	var buf []byte
	for pos < fileSize {
		h, err := s.readHeader(pos, fileSize)
		if err == nil && h.Size() > fileSize-pos {
			err = io.ErrUnexpectedEOF
		}
		// The base offset and the epoch are outside the CRC; the log
		// cleaner keeps offsets contiguous (an emptied run of batches
		// stays as one empty batch), so a batch that does not continue
		// the offsets exactly, or goes back an epoch, is damage.
		if err == nil && (h.BaseOffset != s.nextOffset || h.LastOffset()-s.baseOffset > 1<<31-1) {
			err = fmt.Errorf("%w: batch at offset %d does not follow offset %d", ErrCorruptMessage, h.BaseOffset, s.nextOffset-1)
		}
		if err == nil && len(headers) > 0 && h.PartitionLeaderEpoch < headers[len(headers)-1].PartitionLeaderEpoch {
			err = fmt.Errorf("%w: batch at offset %d has epoch %d after epoch %d", ErrCorruptMessage, h.BaseOffset, h.PartitionLeaderEpoch, headers[len(headers)-1].PartitionLeaderEpoch)
		}
		if err == nil {
			buf = growTo(buf, int(h.Size()))
			if _, err = s.log.ReadAt(buf, pos); err == nil {
				_, err = checkBatch(buf)
			}
		}
		if err != nil {
			if !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, ErrCorruptMessage) {
				return nil, err
			}
			s.env.logger.Warn("recovery cut a torn or corrupt log tail",
				"segment", s.path(LogFileSuffix), "position", pos, "bytesRemoved", fileSize-pos, "reason", err)
			break
		}
		s.indexBatch(h, pos)
		headers = append(headers, h)
		pos += h.Size()
	}
	if pos < fileSize {
		if err := s.log.Truncate(pos); err != nil {
			return nil, err
		}
	}
	s.size = pos
	if !active {
		s.maybeAppendTimeIndex() // a sealed segment's last entry is its max timestamp
	}
	if err := s.writeIndexFiles(active); err != nil {
		return nil, err
	}
	return headers, s.sync()
}

func growTo(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}

// indexBatch updates the in-memory indexes for a batch written at pos, by
// Kafka's rule: an offset-index entry (the batch's last offset, its
// position) once more than index.interval.bytes were appended since the last
// entry, and a time-index entry at the same moment if the max timestamp grew.
// It reports whether entries were added.
func (s *segment) indexBatch(h BatchHeader, pos int64) (added bool) {
	if h.MaxTimestamp > s.maxTimestamp {
		s.maxTimestamp, s.offsetOfMaxTimestamp = h.MaxTimestamp, h.LastOffset()
	}
	if s.bytesSinceIndexEntry > s.env.indexIntervalBytes() {
		s.index = append(s.index, IndexEntry{relativeOffset(s.baseOffset, h.LastOffset()), int32(pos)})
		s.maybeAppendTimeIndex()
		s.bytesSinceIndexEntry = 0
		added = true
	}
	s.bytesSinceIndexEntry += h.Size()
	s.nextOffset = h.NextOffset()
	return added
}

// maybeAppendTimeIndex adds (max timestamp so far, its offset) if the
// timestamp grew since the last entry: time-index timestamps never decrease.
func (s *segment) maybeAppendTimeIndex() bool {
	if s.maxTimestamp < 0 {
		return false
	}
	n := len(s.timeIndex)
	rel := relativeOffset(s.baseOffset, s.offsetOfMaxTimestamp)
	if n > 0 && (s.timeIndex[n-1].Timestamp >= s.maxTimestamp || s.timeIndex[n-1].RelativeOffset >= rel) {
		return false
	}
	s.timeIndex = append(s.timeIndex, TimeIndexEntry{s.maxTimestamp, rel})
	return true
}

// writeIndexFiles rewrites both index files from memory.
func (s *segment) writeIndexFiles(keepOpen bool) error {
	if s.unopened {
		if err := s.create(); err != nil {
			return err
		}
	}
	s.closeIndexWriters()
	if err := s.openIndexWriters(true); err != nil {
		// The index writers are closed now: even out of descriptors the
		// segment is not as it was, so the dir goes offline.
		return offlineAnyway{err}
	}
	var b []byte
	for _, e := range s.index {
		b = e.appendTo(b)
	}
	if _, err := s.indexFile.Write(b); err != nil {
		return err
	}
	b = b[:0]
	for _, e := range s.timeIndex {
		b = e.appendTo(b)
	}
	if _, err := s.timeIndexFile.Write(b); err != nil {
		return err
	}
	s.indexOnDisk, s.timeIndexOnDisk = len(s.index), len(s.timeIndex)
	s.dirty = true
	if !keepOpen {
		if err := s.sync(); err != nil {
			return err
		}
		s.closeIndexWriters()
	}
	return nil
}

// append writes one whole batch at the end of the active segment. With
// verify, its CRC-32C is checked right after the write, while the batch is
// still past the readable end: the kernel's copy has just brought the batch
// into the CPU cache, so the checksum reads it from there rather than from
// memory (checking first costs twice as much on a batch not already in
// cache; with crc32c's fold, BenchmarkAppend measured 0.84 checking first
// against 0.92 checking after). A batch that fails is cut off again before
// anything can read it.
func (s *segment) append(h BatchHeader, batch []byte, verify bool) error {
	if s.unopened {
		if err := s.create(); err != nil {
			return err
		}
	}
	pos := s.size
	if _, err := s.log.WriteAt(batch, pos); err != nil {
		return err
	}
	if verify {
		if err := checkCRC(h, batch); err != nil {
			return errors.Join(err, s.log.Truncate(pos))
		}
	}
	s.indexBatch(h, pos)
	s.dirty = true
	s.size = pos + int64(len(batch))
	return nil
}

// sealTimeIndex records the final max timestamp when a segment stops being
// active, so its last time-index entry is its largest timestamp.
func (s *segment) sealTimeIndex() {
	if s.maybeAppendTimeIndex() {
		s.dirty = true
	}
}

// writePendingIndexEntries writes the index entries added since the last
// write, one write per file.
func (s *segment) writePendingIndexEntries() error {
	if s.indexFile != nil && len(s.index) > s.indexOnDisk {
		var b []byte
		for _, e := range s.index[s.indexOnDisk:] {
			b = e.appendTo(b)
		}
		if _, err := s.indexFile.WriteAt(b, int64(s.indexOnDisk)*indexEntrySize); err != nil {
			return err
		}
		s.indexOnDisk = len(s.index)
	}
	if s.timeIndexFile != nil && len(s.timeIndex) > s.timeIndexOnDisk {
		var b []byte
		for _, e := range s.timeIndex[s.timeIndexOnDisk:] {
			b = e.appendTo(b)
		}
		if _, err := s.timeIndexFile.WriteAt(b, int64(s.timeIndexOnDisk)*timeIndexEntrySize); err != nil {
			return err
		}
		s.timeIndexOnDisk = len(s.timeIndex)
	}
	return nil
}

// seal makes the segment inactive: final time-index entry, fsync, index
// writers closed.
func (s *segment) seal() error {
	s.sealTimeIndex()
	if err := s.sync(); err != nil {
		return err
	}
	s.closeIndexWriters()
	return nil
}

// sync fsyncs whatever was written since the last sync and records the
// lengths now on stable storage.
func (s *segment) sync() error {
	if !s.dirty {
		return nil
	}
	if err := s.writePendingIndexEntries(); err != nil {
		return err
	}
	for _, f := range []vfs.File{s.log, s.indexFile, s.timeIndexFile} {
		if f == nil {
			continue
		}
		if err := f.Sync(); err != nil {
			return err
		}
	}
	if err := s.env.tracker.syncNew(s.env.fs, s.dir); err != nil {
		return err
	}
	s.env.tracker.set(s.path(LogFileSuffix), s.size)
	s.env.tracker.set(s.path(IndexFileSuffix), int64(len(s.index))*indexEntrySize)
	s.env.tracker.set(s.path(TimeIndexFileSuffix), int64(len(s.timeIndex))*timeIndexEntrySize)
	s.dirty = false
	return nil
}

// truncateAt cuts the segment at byte position pos, which must be a batch
// boundary, to hold offsets below next. The cut is fsynced at once so that a
// later power cut cannot bring removed batches back.
func (s *segment) truncateAt(pos, next int64) error {
	if s.unopened { // empty, so pos is 0: nothing on disk to cut
		s.size, s.nextOffset = pos, next
		return nil
	}
	if err := s.log.Truncate(pos); err != nil {
		return err
	}
	s.size = pos
	s.nextOffset = next
	for len(s.index) > 0 && int64(s.index[len(s.index)-1].Position) >= pos {
		s.index = s.index[:len(s.index)-1]
	}
	for len(s.timeIndex) > 0 && s.baseOffset+int64(s.timeIndex[len(s.timeIndex)-1].RelativeOffset) >= next {
		s.timeIndex = s.timeIndex[:len(s.timeIndex)-1]
	}
	// Recompute the max timestamp exactly: the last time-index entry covers
	// everything up to the last offset-index entry; scan the rest.
	s.maxTimestamp, s.offsetOfMaxTimestamp = -1, -1
	if n := len(s.timeIndex); n > 0 {
		s.maxTimestamp = s.timeIndex[n-1].Timestamp
		s.offsetOfMaxTimestamp = s.baseOffset + int64(s.timeIndex[n-1].RelativeOffset)
	}
	var from int64
	if n := len(s.index); n > 0 {
		from = int64(s.index[n-1].Position)
	}
	for p := from; p < pos; {
		h, err := s.readHeader(p, pos)
		if err != nil {
			return err
		}
		if h.MaxTimestamp > s.maxTimestamp {
			s.maxTimestamp, s.offsetOfMaxTimestamp = h.MaxTimestamp, h.LastOffset()
		}
		p += h.Size()
	}
	s.bytesSinceIndexEntry = 0
	active := s.indexFile != nil
	return s.writeIndexFiles(active) // marks dirty, and syncs when not active
}

func (s *segment) closeIndexWriters() {
	for _, f := range []*vfs.File{&s.indexFile, &s.timeIndexFile} {
		if *f != nil {
			(*f).Close()
			*f = nil
		}
	}
}

func (s *segment) close() {
	s.closeIndexWriters()
	s.mu.Lock()
	if s.log != nil {
		s.log.Close()
		s.log = nil
	}
	s.mu.Unlock()
}

// remove closes the segment and deletes its files.
func (s *segment) remove() error {
	s.close()
	var errs []error
	for _, suffix := range []string{LogFileSuffix, IndexFileSuffix, TimeIndexFileSuffix} {
		p := s.path(suffix)
		if err := s.env.fs.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
		s.env.tracker.forget(p)
	}
	return errors.Join(errs...)
}
