package storage

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"tidemark/storage/vfs"
)

// env is what a log's segments share: the clock, the logger, the file
// system, the log dir's record of synced file lengths and its health, and
// the log's config.
type env struct {
	now     func() time.Time
	logger  *slog.Logger
	fs      vfs.FS
	tracker *syncTracker
	health  *dirHealth
	cfg     Config
	// idleFileTimeout: Options.IdleFileTimeout.
	idleFileTimeout time.Duration
	// shortOfFiles: Options.ShortOfFiles (nil: never).
	shortOfFiles func() bool
}

func (e *env) indexIntervalBytes() int64 { return e.cfg.IndexIntervalBytes }

// Log is one partition's log on disk: its segments, log start offset,
// recovery point and leader-epoch cache.
//
// One goroutine appends, truncates and deletes (the writer); any number read
// at the same time. mu guards the segment list and every field below it;
// readers hold it shared. Lock order: Log.mu before LogDir.mu (a log writes
// the dir's checkpoints while it holds its own lock) before segment.mu.
type Log struct {
	dir string
	tp  TopicPartition
	dl  *LogDir // its checkpoints are rewritten when the log's values change

	mu       sync.RWMutex
	env      *env
	segments []*segment // sorted by base offset; the last is the active segment
	// bases is every segment's base offset, in the same order: a lookup's
	// binary search reads these one or two cache lines instead of one
	// segment struct per probe, which with hundreds of segments are cache
	// misses that grow with the log. setSegments keeps it.
	bases []int64
	// basesVersion counts the changes to bases (setSegments): a reader
	// that last saw version v knows without the lock whether the segments
	// changed (SegmentsVersion).
	basesVersion atomic.Uint64
	// logStartOffset is the first offset a reader may ask for;
	// recoveryPoint: every offset below it has been fsynced. Both change
	// under mu but are atomic, so the log dir's checkpoint writer reads them
	// without it.
	logStartOffset atomic.Int64
	recoveryPoint  atomic.Int64
	// offlineLEO is what LogEndOffset reports after an append failed and
	// could not be rolled back on disk (-1 otherwise): the LEO from before
	// the failed append, which the log never moved past as far as any
	// caller knew.
	offlineLEO int64
	epochs     []EpochEntry
	// unflushed counts records appended since the last fsync, for
	// flush.messages; firstUnflushed is when the oldest of them was appended.
	unflushed      int64
	firstUnflushed time.Time
	recovery       RecoveryReport
	closed         bool
	// cleanedTo is where the log cleaner's last pass ended: below it the
	// log is clean (cleaner.go). 0 until a pass runs.
	cleanedTo int64
}

// AppendInfo describes one append.
type AppendInfo struct {
	FirstOffset  int64 // offset of the first record appended
	LastOffset   int64 // offset of the last record appended
	LogEndOffset int64 // the LEO after the append
	Batches      int
	Bytes        int64
	MaxTimestamp int64
	Rolled       bool // a new segment was started
	// Epochs are the leader-epoch cache entries the append added (a
	// batch of an epoch the cache did not hold), in order; nil for none.
	Epochs []EpochEntry
}

// TopicPartition returns the partition this log holds.
func (l *Log) TopicPartition() TopicPartition { return l.tp }

// Dir returns the log's directory, <log dir>/<topic>-<partition>.
func (l *Log) Dir() string { return l.dir }

// Config returns the log's current settings.
func (l *Log) Config() Config {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.env.cfg
}

// SetConfig changes the log's settings at run time; they apply from the next
// append (an oversized active segment rolls then).
func (l *Log) SetConfig(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.env.cfg = cfg
	return nil
}

// LogEndOffset returns the LEO: the offset the next appended record gets.
// An append that failed never moves it.
func (l *Log) LogEndOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.offlineLEO >= 0 {
		return l.offlineLEO
	}
	return l.leo()
}

func (l *Log) leo() int64 { return l.segments[len(l.segments)-1].nextOffset }

// LogStartOffset returns the first offset that may be read; equal to the LEO
// for an empty log.
func (l *Log) LogStartOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.logStartOffset.Load()
}

// RecoveryPoint returns the offset below which everything is fsynced.
func (l *Log) RecoveryPoint() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.recoveryPoint.Load()
}

// Size returns the total bytes of the log's .log files.
func (l *Log) Size() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var n int64
	for _, s := range l.segments {
		n += s.size
	}
	return n
}

// Recovery returns what the last open did to bring the log back.
func (l *Log) Recovery() RecoveryReport {
	l.mu.RLock()
	defer l.mu.RUnlock()
	r := l.recovery
	r.SegmentsRecovered = append([]int64(nil), r.SegmentsRecovered...)
	r.SegmentsDeleted = append([]int64(nil), r.SegmentsDeleted...)
	return r
}

// AppendAsLeader appends a record set (one or more RecordBatch v2 batches, as
// a producer sends) and stamps each batch with its base offset (the LEO at
// that moment) and the leader epoch. records is modified in place. Each
// batch must pass its CRC and be within max.message.bytes; a producer's
// batch holds dense offsets (last offset delta = records - 1).
//
// An append is all or nothing. A rejected record set writes nothing. If the
// file system fails (a write, an fsync, a roll, a checkpoint), the append
// returns a *StorageError (KAFKA_STORAGE_ERROR), the log dir goes offline,
// the LEO stays where it was, and the bytes already written are cut off
// again, so neither a reader nor a restart sees part of a failed append.
//
// Once flush.messages unflushed records have accumulated, or the oldest
// unflushed append is flush.ms old, the append fsyncs before it returns
// (Kafka's UnifiedLog.append): with flush.messages=1 every acknowledged
// append is on stable storage.
func (l *Log) AppendAsLeader(records []byte, leaderEpoch int32) (AppendInfo, error) {
	return l.append(records, leaderEpoch, true, false)
}

// AppendValidatedAsLeader is AppendAsLeader for a record set that
// ValidateProducedBatch (or ValidateProducedBatchTail) has accepted and that
// has not changed since: its CRC-32C is not computed a second time, as
// Kafka's segment append trusts what LogValidator checked. Headers are still
// read (offsets are assigned from them); everything else is as for
// AppendAsLeader.
func (l *Log) AppendValidatedAsLeader(records []byte, leaderEpoch int32) (AppendInfo, error) {
	return l.append(records, leaderEpoch, true, true)
}

// AppendAsFollower appends batches fetched from the leader as they are:
// offsets and partition leader epochs were assigned by the leader. Each
// batch must start where the previous one ended, the first at the LEO.
// Failures and flushing are as for AppendAsLeader.
func (l *Log) AppendAsFollower(records []byte) (AppendInfo, error) {
	return l.append(records, -1, false, false)
}

// append appends records as a leader (stamping offsets and leaderEpoch) or
// as a follower; crcChecked says the caller validated every batch's CRC.
func (l *Log) append(records []byte, leaderEpoch int32, asLeader, crcChecked bool) (AppendInfo, error) {
	if err := l.env.health.check(); err != nil {
		return AppendInfo{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	leo := l.leo()
	info, err := l.appendLocked(records, leaderEpoch, asLeader, crcChecked)
	switch {
	case err == nil:
		return info, nil
	case isIOError(err):
		l.rollbackLocked(leo)
		return AppendInfo{}, l.env.health.fail("append to", l.tp, err)
	case l.leo() != leo:
		// A later batch of the record set failed its CRC: undo the earlier
		// ones, so the request stays all or nothing.
		l.rollbackLocked(leo)
		if ioErr := l.env.health.check(); ioErr != nil {
			return AppendInfo{}, ioErr
		}
	}
	return AppendInfo{}, err
}

// rollbackLocked undoes an append that hit an I/O error: it truncates the
// log back to leo, the LEO before the append, and cuts whatever a failed
// write left past the active segment's end (even a whole batch, if the
// write wrote it and still failed), so that a restart does not find it.
// The disk is failing, so this is best effort: if it fails too, the log
// keeps reporting leo and a restart may find the append's whole batches.
func (l *Log) rollbackLocked(leo int64) {
	var err error
	if l.leo() > leo {
		_, err = l.truncateLocked(leo)
	}
	if s := l.active(); s.log != nil {
		err = errors.Join(err, s.log.Truncate(s.size))
	}
	if err != nil || l.leo() != leo {
		l.offlineLEO = leo
		l.env.logger.Error("rolling back a failed append", "logEndOffset", leo, "err", err)
	}
}

func (l *Log) appendLocked(records []byte, leaderEpoch int32, asLeader, crcChecked bool) (info AppendInfo, err error) {
	if l.closed {
		return info, ErrClosed
	}
	if len(records) == 0 {
		return info, fmt.Errorf("%w: empty record set", ErrCorruptMessage)
	}
	// Check every header before writing anything, so that a request the
	// headers condemn writes nothing. The headers are kept (on the stack for
	// the usual few batches) so each is parsed once.
	var stack [4]BatchHeader
	headers := stack[:0]
	next := l.leo()
	var numRecords int64
	for rest := records; len(rest) > 0; {
		var h BatchHeader
		if h, _, rest, err = nextBatch(rest); err != nil {
			return info, err
		}
		if h.Size() > int64(l.env.cfg.MaxMessageBytes) {
			return info, fmt.Errorf("%w: batch of %d bytes, max.message.bytes is %d", ErrMessageTooLarge, h.Size(), l.env.cfg.MaxMessageBytes)
		}
		if asLeader {
			if h.NumRecords < 1 || int64(h.LastOffsetDelta) != int64(h.NumRecords)-1 {
				return info, fmt.Errorf("%w: a produced batch needs dense offsets (%d records, last offset delta %d)", ErrCorruptMessage, h.NumRecords, h.LastOffsetDelta)
			}
			next += int64(h.NumRecords)
		} else {
			if h.BaseOffset != next {
				return info, fmt.Errorf("%w: batch at offset %d does not start at the log end offset %d", ErrCorruptMessage, h.BaseOffset, next)
			}
			next = h.NextOffset()
		}
		numRecords += int64(h.NumRecords)
		headers = append(headers, h)
	}
	now := l.env.now()
	info.FirstOffset, info.MaxTimestamp = -1, -1
	pos := 0
	for _, h := range headers {
		batch := records[pos : pos+int(h.Size())]
		pos += len(batch)
		if err = l.appendBatch(h, batch, leaderEpoch, asLeader, crcChecked, now, &info); err != nil {
			return info, err
		}
	}
	info.LogEndOffset = l.leo()
	if l.unflushed == 0 {
		l.firstUnflushed = now
	}
	l.unflushed += numRecords
	flushed := info.Rolled // a roll flushes the sealed segment
	if l.flushDueLocked(now) {
		if err := l.flushLocked(); err != nil {
			return info, err
		}
		flushed = true
	}
	if flushed {
		return info, l.dl.writeRecoveryPoints()
	}
	return info, nil
}

// appendBatch writes one batch whose header was checked, rolling first if
// needed, and adds it to info. Its CRC is checked by the segment's append
// unless crcChecked.
func (l *Log) appendBatch(h BatchHeader, batch []byte, leaderEpoch int32, asLeader, crcChecked bool, now time.Time, info *AppendInfo) error {
	if asLeader {
		var err error
		if batch, h, err = brokerRewrite(l.env.cfg, h, batch, now.UnixMilli()); err != nil {
			return err
		}
		h.BaseOffset, h.PartitionLeaderEpoch = l.leo(), leaderEpoch
		stampBatch(batch, h.BaseOffset, h.PartitionLeaderEpoch)
	}
	rolled, err := l.maybeRoll(h, now)
	if err != nil {
		return err
	}
	info.Rolled = info.Rolled || rolled
	if err := l.active().append(h, batch, !crcChecked); err != nil {
		return err
	}
	if changed, err := l.assignEpochChanged(h.PartitionLeaderEpoch, h.BaseOffset); err != nil {
		return err
	} else if changed {
		info.Epochs = append(info.Epochs, EpochEntry{Epoch: h.PartitionLeaderEpoch, StartOffset: h.BaseOffset})
	}
	if info.FirstOffset < 0 {
		info.FirstOffset = h.BaseOffset
	}
	info.LastOffset = h.LastOffset()
	info.MaxTimestamp = max(info.MaxTimestamp, h.MaxTimestamp)
	info.Batches++
	info.Bytes += h.Size()
	return nil
}

func (l *Log) active() *segment { return l.segments[len(l.segments)-1] }

// setSegments makes segs (sorted by base offset) the log's segments. Every
// change to the list goes through it, so bases stays in step. Callers hold
// l.mu for writing, or own the log still being opened.
func (l *Log) setSegments(segs []*segment) {
	l.segments = segs
	l.bases = l.bases[:0]
	for _, s := range segs {
		l.bases = append(l.bases, s.baseOffset)
	}
	l.basesVersion.Add(1)
}

// SegmentsVersion returns a number that changes whenever the log's list of
// segments does (a roll, a truncation or retention deleting segments,
// recovery), read without the log's lock.
func (l *Log) SegmentsVersion() uint64 { return l.basesVersion.Load() }

// SegmentBases returns every segment's base offset, oldest first (a copy).
func (l *Log) SegmentBases() []int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return append([]int64(nil), l.bases...)
}

// maybeRoll starts a new segment before appending h if the active one is
// non-empty and would pass segment.bytes, is older than segment.ms, has a
// full index, or cannot hold h's offsets relative to its base. Like Kafka,
// rolling flushes the old segment, which moves the recovery point to the new
// segment's base offset.
func (l *Log) maybeRoll(h BatchHeader, now time.Time) (bool, error) {
	s := l.active()
	if s.size == 0 {
		return false, nil
	}
	cfg := l.env.cfg
	if s.size+h.Size() <= cfg.SegmentBytes &&
		now.Sub(s.created) < cfg.SegmentMs &&
		len(s.index) < cfg.maxIndexEntries() &&
		int64(len(s.timeIndex)) < cfg.SegmentIndexBytes/timeIndexEntrySize &&
		h.LastOffset()-s.baseOffset <= 1<<31-1 {
		return false, nil
	}
	if err := l.roll(h.BaseOffset); err != nil {
		return false, err
	}
	return true, nil
}

// roll seals the active segment and starts one at base. The new segment's
// files are made first: running out of descriptors (EMFILE) there leaves
// the log as it was, so the failure can be transient (dirHealth.fail).
func (l *Log) roll(base int64) error {
	old := l.active()
	s, err := createSegment(l.dir, base, l.env)
	if err != nil {
		return err
	}
	if err := old.seal(); err != nil {
		s.close()
		return err
	}
	l.setSegments(append(l.segments, s))
	l.recoveryPoint.Store(max(l.recoveryPoint.Load(), base))
	return nil
}

// Roll starts a new empty segment at the LEO (unless the active one is
// empty), as segment.bytes or segment.ms would.
func (l *Log) Roll() error {
	return l.mutate("roll", func() error {
		if l.closed {
			return ErrClosed
		}
		if l.active().size == 0 {
			return nil
		}
		if err := l.roll(l.leo()); err != nil {
			return err
		}
		return l.dl.writeRecoveryPoints()
	})
}

// mutate runs fn under the log's write lock unless the log dir is offline,
// and takes the dir offline if fn hits an I/O error; op names what fn does.
func (l *Log) mutate(op string, fn func() error) error {
	if err := l.env.health.check(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.env.health.fail(op, l.tp, fn())
}

// flushDueLocked applies flush.messages and flush.ms. flush.ms counts whole
// milliseconds, as Kafka does, so a FlushMs under 1 ms is Kafka's
// flush.ms=0: every append is flushed.
func (l *Log) flushDueLocked(now time.Time) bool {
	if l.unflushed == 0 {
		return false
	}
	cfg := l.env.cfg
	return l.unflushed >= cfg.FlushMessages ||
		cfg.FlushMs > 0 && now.Sub(l.firstUnflushed) >= cfg.FlushMs.Truncate(time.Millisecond)
}

// Synced records that the first size bytes of the file name in the log's
// directory, one the log does not write itself (a quorum replica's
// raft-state), are on stable storage, so a PowerLoss of the log dir cuts
// that file back to them as it cuts the segments.
func (l *Log) Synced(name string, size int64) {
	l.env.tracker.set(filepath.Join(l.dir, name), size)
}

// Flush fsyncs every segment written since the last flush and moves the
// recovery point to the LEO.
func (l *Log) Flush() error {
	return l.mutate("flush", func() error {
		if err := l.flushLocked(); err != nil {
			return err
		}
		return l.dl.writeRecoveryPoints()
	})
}

// FlushIfDue flushes if flush.messages or flush.ms says so; the broker calls
// it from a timer (appends flush themselves when they make a flush due). It
// reports whether it flushed.
func (l *Log) FlushIfDue() (flushed bool, err error) {
	// Most calls find nothing due: answer those without the closure and the
	// second lock round mutate costs (it runs per replica per broker tick).
	if err := l.env.health.check(); err != nil {
		return false, err
	}
	l.mu.Lock()
	due := !l.closed && l.flushDueLocked(l.env.now())
	l.mu.Unlock()
	if !due {
		return false, nil
	}
	err = l.mutate("flush", func() error {
		if l.closed || !l.flushDueLocked(l.env.now()) {
			return nil
		}
		if err := l.flushLocked(); err != nil {
			return err
		}
		flushed = true
		return l.dl.writeRecoveryPoints()
	})
	return flushed, err
}

func (l *Log) flushLocked() error {
	if l.closed {
		return ErrClosed
	}
	for _, s := range l.segments {
		if err := s.sync(); err != nil {
			return err
		}
	}
	l.recoveryPoint.Store(l.leo())
	l.unflushed = 0
	return nil
}

// FileRegion is a byte range of a segment file: the network layer can send
// it with zero copy (sendfile with an explicit offset, so concurrent readers
// never share a file position). The file may be closed by a later
// truncation or deletion, or once idle (Options.IdleFileTimeout); sending
// then fails and the reader retries.
type FileRegion struct {
	File     *os.File
	Position int64
	Size     int64
}

// ReadAll copies the region into memory (the user-space path).
func (r FileRegion) ReadAll() ([]byte, error) {
	if r.Size == 0 {
		return nil, nil
	}
	b := make([]byte, r.Size)
	_, err := r.File.ReadAt(b, r.Position)
	return b, err
}

// FetchData is the result of a read: whole batches from one segment.
type FetchData struct {
	Region FileRegion
	// FirstOffset is the base offset of the first batch; it may be below the
	// requested offset, since batches are returned whole.
	FirstOffset int64
	// NextOffset is one past the last offset in the region; FirstOffset and
	// NextOffset are equal when the region is empty.
	NextOffset int64
}

// Read returns whole batches starting with the one that holds offset, from a
// single segment, stopping before any batch that reaches maxOffset (the high
// watermark for consumers, the LEO for followers), up to maxBytes — but
// always at least one whole batch if one is readable, as Kafka does. Reading
// at the LEO (or at maxOffset) returns an empty region. An offset outside
// [log start offset, LEO] is an *OffsetOutOfRangeError.
func (l *Log) Read(offset, maxOffset int64, maxBytes int64) (FetchData, error) {
	if err := l.env.health.check(); err != nil {
		return FetchData{}, err
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	d, err := l.readLocked(offset, maxOffset, maxBytes)
	return d, l.env.health.fail("read", l.tp, err)
}

func (l *Log) readLocked(offset, maxOffset int64, maxBytes int64) (FetchData, error) {
	if l.closed {
		return FetchData{}, ErrClosed
	}
	if offset < l.logStartOffset.Load() || offset > l.leo() {
		return FetchData{}, &OffsetOutOfRangeError{offset, l.logStartOffset.Load(), l.leo()}
	}
	empty := FetchData{FirstOffset: offset, NextOffset: offset}
	if offset >= min(maxOffset, l.leo()) {
		return empty, nil
	}
	loc, err := l.locate(offset, nil)
	if err != nil {
		return FetchData{}, err
	}
	s := loc.seg
	out := FetchData{Region: FileRegion{File: vfs.OSFile(s.log), Position: loc.pos}, FirstOffset: loc.header.BaseOffset, NextOffset: loc.header.BaseOffset}
	pos := loc.pos
	h := loc.header
	for {
		if h.LastOffset() >= maxOffset || (out.Region.Size > 0 && out.Region.Size+h.Size() > maxBytes) {
			break
		}
		out.Region.Size += h.Size()
		out.NextOffset = h.NextOffset()
		pos += h.Size()
		if pos >= s.size || out.Region.Size+batchHeaderSize > maxBytes {
			break
		}
		if h, err = s.readHeader(pos, s.size); err != nil {
			return FetchData{}, err
		}
	}
	if out.Region.Size == 0 {
		return empty, nil
	}
	return out, nil
}

// ReadBatches decodes up to maxBatches whole batches starting with the one
// that holds offset and ending before maxOffset, across segments — the
// decoded path, for the UI.
func (l *Log) ReadBatches(offset, maxOffset int64, maxBatches int) ([]Batch, error) {
	var out []Batch
	err := l.EachBatch(offset, maxOffset, maxBatches, func(b Batch) bool {
		out = append(out, b)
		return true
	})
	return out, err
}

// EachBatch decodes batches as ReadBatches does and hands each to fn, one
// at a time, until fn returns false: a reader that keeps only part of each
// (a record's first bytes, a digest) holds one batch at a time, not all of
// them, however large their records.
func (l *Log) EachBatch(offset, maxOffset int64, maxBatches int, fn func(Batch) bool) error {
	for n := 0; n < maxBatches; n++ {
		d, err := l.Read(offset, maxOffset, 1)
		if err != nil {
			return err
		}
		if d.Region.Size == 0 {
			return nil
		}
		b, err := d.Region.ReadAll()
		if err != nil {
			return err
		}
		batch, err := DecodeBatch(b)
		if err != nil {
			return err
		}
		batch.Position = d.Region.Position
		if !fn(batch) {
			return nil
		}
		offset = d.NextOffset
	}
	return nil
}

// location is where a batch is: its segment, position and header.
type location struct {
	seg    *segment
	pos    int64
	header BatchHeader
}

// locate finds the batch that holds offset, which must be in [log start,
// LEO): binary search over segment base offsets, binary search in the
// segment's offset index, then a scan of batch headers. If trace is not
// nil, every step is recorded in it. Callers hold l.mu.
func (l *Log) locate(offset int64, trace *LookupTrace) (location, error) {
	var segProbes, idxProbes *[]SearchProbe
	if trace != nil {
		segProbes, idxProbes = &trace.SegmentProbes, &trace.IndexProbes
	}
	i := floorSearch(len(l.bases), offset, func(i int) int64 { return l.bases[i] }, segProbes)
	if i < 0 {
		i = 0
	}
	// A segment can end below the next one's base (a compacted gap); the
	// offset then lives in the next segment.
	for i+1 < len(l.segments) && l.segments[i].nextOffset <= offset {
		i++
	}
	s := l.segments[i]
	if err := s.ensureOpen(); err != nil {
		return location{}, err
	}
	pos, found := lookupIndex(s.index, s.baseOffset, offset, idxProbes)
	if trace != nil {
		trace.SegmentBaseOffset = s.baseOffset
		trace.SegmentFile = segmentFileName(s.baseOffset, LogFileSuffix)
		trace.IndexEntryFound = found
		if found >= 0 {
			e := s.index[found]
			trace.IndexEntry = &e
		}
		trace.StartPosition = pos
	}
	for pos < s.size {
		h, err := s.readHeader(pos, s.size)
		if err != nil && isIOError(err) {
			return location{}, err
		}
		if err != nil {
			return location{}, fmt.Errorf("%w: reading batch header at %s:%d: %v", ErrCorruptMessage, s.path(LogFileSuffix), pos, err)
		}
		if trace != nil {
			trace.Scanned = append(trace.Scanned, ScanStep{Position: pos, BaseOffset: h.BaseOffset, LastOffset: h.LastOffset(), Size: h.Size()})
			trace.BytesScanned += batchHeaderSize
		}
		if h.LastOffset() >= offset {
			return location{seg: s, pos: pos, header: h}, nil
		}
		pos += h.Size()
	}
	return location{}, fmt.Errorf("%w: offset %d not found in segment %d", ErrOffsetOutOfRange, offset, s.baseOffset)
}

// LookupTrace is every step of finding one offset, for the segment
// explorer: the binary search over segments, the binary search in the
// chosen segment's .index, and the forward scan over batch headers.
type LookupTrace struct {
	Offset            int64
	SegmentProbes     []SearchProbe
	SegmentBaseOffset int64
	SegmentFile       string
	IndexProbes       []SearchProbe
	IndexEntryFound   int         // index of the entry used; -1: none, the scan starts at 0
	IndexEntry        *IndexEntry // the entry used, nil if none
	StartPosition     int64
	Scanned           []ScanStep
	BytesScanned      int64 // header bytes read by the scan
	Position          int64 // where the batch holding Offset starts
	Batch             BatchHeader
}

// ScanStep is one batch header read during the scan.
type ScanStep struct {
	Position   int64
	BaseOffset int64
	LastOffset int64
	Size       int64
}

// Lookup finds offset the way a fetch does and returns each step taken.
func (l *Log) Lookup(offset int64) (LookupTrace, error) {
	if err := l.env.health.check(); err != nil {
		return LookupTrace{}, err
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	t, err := l.lookupLocked(offset)
	return t, l.env.health.fail("look up in", l.tp, err)
}

func (l *Log) lookupLocked(offset int64) (LookupTrace, error) {
	if l.closed {
		return LookupTrace{}, ErrClosed
	}
	if offset < l.logStartOffset.Load() || offset >= l.leo() {
		return LookupTrace{}, &OffsetOutOfRangeError{offset, l.logStartOffset.Load(), l.leo()}
	}
	t := LookupTrace{Offset: offset}
	loc, err := l.locate(offset, &t)
	if err != nil {
		return LookupTrace{}, err
	}
	t.Position, t.Batch = loc.pos, loc.header
	return t, nil
}

// OffsetForTimestamp returns the first offset whose record timestamp is at
// or after ts (ListOffsets by timestamp): the first segment whose largest
// timestamp reaches ts, the last .timeindex entry at or below ts, then a scan
// from that entry's offset. ok is false if no record is that late.
func (l *Log) OffsetForTimestamp(ts int64) (offset int64, ok bool, err error) {
	if err := l.env.health.check(); err != nil {
		return 0, false, err
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	offset, ok, err = l.offsetForTimestampLocked(ts)
	return offset, ok, l.env.health.fail("look up a timestamp in", l.tp, err)
}

func (l *Log) offsetForTimestampLocked(ts int64) (offset int64, ok bool, err error) {
	if l.closed {
		return 0, false, ErrClosed
	}
	for _, s := range l.segments {
		if err := s.ensureLoaded(); err != nil {
			return 0, false, err
		}
		if s.maxTimestamp < ts || s.nextOffset <= l.logStartOffset.Load() {
			continue
		}
		if err := s.ensureOpen(); err != nil {
			return 0, false, err
		}
		from := max(s.baseOffset, l.logStartOffset.Load())
		i := floorSearch(len(s.timeIndex), ts, func(i int) int64 { return s.timeIndex[i].Timestamp }, nil)
		if i >= 0 {
			from = max(from, s.baseOffset+int64(s.timeIndex[i].RelativeOffset))
		}
		pos, _ := lookupIndex(s.index, s.baseOffset, from, nil)
		for pos < s.size {
			h, err := s.readHeader(pos, s.size)
			if err != nil {
				return 0, false, err
			}
			if h.MaxTimestamp >= ts && h.LastOffset() >= l.logStartOffset.Load() {
				buf := make([]byte, h.Size())
				if _, err := s.log.ReadAt(buf, pos); err != nil {
					return 0, false, err
				}
				b, err := DecodeBatch(buf)
				if err != nil {
					return 0, false, err
				}
				for _, r := range b.Records {
					if r.Timestamp >= ts && r.Offset >= l.logStartOffset.Load() {
						return r.Offset, true, nil
					}
				}
			}
			pos += h.Size()
		}
	}
	return 0, false, nil
}

// SegmentInfo describes one segment's files, for the segment explorer.
type SegmentInfo struct {
	BaseOffset int64
	NextOffset int64
	Files      [3]string // .log, .index, .timeindex names
	// LogBytes is the .log file's length; SyncedLogBytes how much of it is
	// known to be on stable storage.
	LogBytes       int64
	SyncedLogBytes int64
	Index          []IndexEntry
	TimeIndex      []TimeIndexEntry
	MaxTimestamp   int64 // -1 for an empty segment
	Active         bool
}

// Segments describes every segment, oldest first.
func (l *Log) Segments() ([]SegmentInfo, error) {
	if err := l.env.health.check(); err != nil {
		return nil, err
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return nil, ErrClosed
	}
	out := make([]SegmentInfo, 0, len(l.segments))
	for i, s := range l.segments {
		if err := s.ensureLoaded(); err != nil {
			return nil, l.env.health.fail("load a segment of", l.tp, err)
		}
		synced, ok := l.env.tracker.get(s.path(LogFileSuffix))
		if !ok {
			synced = s.size // untouched since open: on disk before this process started
		}
		out = append(out, SegmentInfo{
			BaseOffset: s.baseOffset,
			NextOffset: s.nextOffset,
			Files: [3]string{segmentFileName(s.baseOffset, LogFileSuffix),
				segmentFileName(s.baseOffset, IndexFileSuffix), segmentFileName(s.baseOffset, TimeIndexFileSuffix)},
			LogBytes:       s.size,
			SyncedLogBytes: min(synced, s.size),
			Index:          append([]IndexEntry(nil), s.index...),
			TimeIndex:      append([]TimeIndexEntry(nil), s.timeIndex...),
			MaxTimestamp:   s.maxTimestamp,
			Active:         i == len(l.segments)-1,
		})
	}
	return out, nil
}

// TruncateTo removes every record at or above offset, as a follower does
// before it fetches from a new leader. A batch is removed whole, so the LEO
// becomes the base offset of the batch holding offset if offset falls inside
// one. Later segments are deleted, the indexes and the leader-epoch cache are
// cut back, and the cut is fsynced. Truncating below the log start offset
// empties the log and starts it again at offset. It returns the new LEO.
func (l *Log) TruncateTo(offset int64) (leo int64, err error) {
	err = l.mutate("truncate", func() error {
		if leo, err = l.truncateLocked(offset); err != nil {
			return err
		}
		return l.dl.writeTruncationCheckpoints()
	})
	return leo, err
}

func (l *Log) truncateLocked(offset int64) (int64, error) {
	if l.closed {
		return 0, ErrClosed
	}
	if offset < 0 {
		return 0, fmt.Errorf("%w: cannot truncate to negative offset %d", ErrOffsetOutOfRange, offset)
	}
	if offset >= l.leo() {
		return l.leo(), nil
	}
	l.cleanedTo = min(l.cleanedTo, offset) // what comes back above it is dirty
	if offset <= l.logStartOffset.Load() {
		return offset, l.truncateFullyLocked(offset)
	}
	loc, err := l.locate(offset, nil)
	if err != nil {
		return 0, err
	}
	var keep []*segment
	for _, s := range l.segments {
		if s.baseOffset > loc.seg.baseOffset {
			if err := s.remove(); err != nil {
				return 0, err
			}
			continue
		}
		keep = append(keep, s)
	}
	l.setSegments(keep)
	s := loc.seg
	if s.indexFile == nil {
		if err := s.openIndexWriters(false); err != nil {
			return 0, err
		}
	}
	if err := s.truncateAt(loc.pos, loc.header.BaseOffset); err != nil {
		return 0, err
	}
	if err := s.sync(); err != nil {
		return 0, err
	}
	if err := vfs.SyncDir(l.env.fs, l.dir); err != nil {
		return 0, err
	}
	l.recoveryPoint.Store(min(l.recoveryPoint.Load(), l.leo()))
	return l.leo(), l.truncateEpochsFromEnd(l.leo())
}

// TruncateFullyAndStartAt deletes every record and restarts the log empty
// at offset (which may be past the LEO), as a follower does when the
// leader's log starts beyond its own end (Kafka's truncateFullyAndStartAt).
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	if offset < 0 {
		return fmt.Errorf("%w: cannot restart at negative offset %d", ErrOffsetOutOfRange, offset)
	}
	return l.mutate("truncate fully", func() error {
		if l.closed {
			return ErrClosed
		}
		if err := l.truncateFullyLocked(offset); err != nil {
			return err
		}
		return l.dl.writeTruncationCheckpoints()
	})
}

// truncateFullyLocked deletes every segment and starts an empty one at offset.
func (l *Log) truncateFullyLocked(offset int64) error {
	l.cleanedTo = 0
	for _, s := range l.segments {
		if err := s.remove(); err != nil {
			return err
		}
	}
	s, err := createSegment(l.dir, offset, l.env)
	if err != nil {
		// The old segments are gone: even out of descriptors, the log no
		// longer matches its files, so the dir goes offline.
		return offlineAnyway{err}
	}
	l.setSegments([]*segment{s})
	l.logStartOffset.Store(offset)
	l.recoveryPoint.Store(offset)
	l.epochs = nil
	return l.writeEpochCheckpoint()
}

// SetLogStartOffset moves the log start offset forward (Kafka's
// DeleteRecords) to offset, which must not pass upperBound (the high
// watermark) or the LEO, and deletes segments that now lie wholly below it.
func (l *Log) SetLogStartOffset(offset, upperBound int64) error {
	return l.mutate("delete records from", func() error {
		if l.closed {
			return ErrClosed
		}
		if offset > min(upperBound, l.leo()) {
			return &OffsetOutOfRangeError{offset, l.logStartOffset.Load(), min(upperBound, l.leo()) + 1}
		}
		if offset <= l.logStartOffset.Load() {
			return nil
		}
		l.logStartOffset.Store(offset)
		for len(l.segments) > 1 && l.segments[1].baseOffset <= offset {
			if err := l.segments[0].remove(); err != nil {
				return err
			}
			l.setSegments(l.segments[1:])
		}
		if err := l.truncateEpochsFromStart(offset); err != nil {
			return err
		}
		return l.dl.writeLogStartOffsets()
	})
}

// ApplyRetention deletes whole oldest segments that retention.ms (newest
// record older than now minus retention.ms) or retention.bytes (the log
// would still be at least retention.bytes without it) allow. It never
// deletes the active segment nor a segment holding offsets at or above
// upperBound (the high watermark), and moves the log start offset to the
// new first segment. It returns the deleted segments.
func (l *Log) ApplyRetention(upperBound int64) (deleted []SegmentInfo, err error) {
	err = l.mutate("apply retention to", func() error {
		if deleted, err = l.retentionLocked(upperBound); err != nil || len(deleted) == 0 {
			l.closeIdleFilesLocked()
			return err
		}
		l.closeIdleFilesLocked()
		return l.dl.writeLogStartOffsets()
	})
	return deleted, err
}

// closeIdleFilesLocked closes the .log files of sealed segments no reader
// needed for Options.IdleFileTimeout. The retention check runs it: the
// broker calls it once a second per replica, as Kafka's log manager runs
// its periodic maintenance. Callers hold l.mu for writing.
func (l *Log) closeIdleFilesLocked() (closed int) {
	if l.closed || l.env.idleFileTimeout < 0 {
		return 0
	}
	now, idle := l.env.now(), l.env.idleFileTimeout
	if l.env.shortOfFiles != nil && l.env.shortOfFiles() {
		idle = min(idle, ShortIdleFileTimeout)
	}
	for _, s := range l.segments[:len(l.segments)-1] {
		if s.closeIfIdle(now, idle) {
			closed++
		}
	}
	return closed
}

func (l *Log) retentionLocked(upperBound int64) ([]SegmentInfo, error) {
	if l.closed {
		return nil, ErrClosed
	}
	cfg := l.env.cfg
	var total int64
	for _, s := range l.segments {
		total += s.size
	}
	now := l.env.now()
	var deleted []SegmentInfo
	for len(l.segments) > 1 {
		s, next := l.segments[0], l.segments[1]
		if next.baseOffset > upperBound {
			break
		}
		if err := s.ensureLoaded(); err != nil {
			return deleted, err
		}
		byTime := cfg.RetentionMs >= 0 && s.maxTimestamp >= 0 && now.UnixMilli()-s.maxTimestamp > cfg.RetentionMs.Milliseconds()
		bySize := cfg.RetentionBytes >= 0 && total-s.size >= cfg.RetentionBytes
		belowStart := next.baseOffset <= l.logStartOffset.Load()
		if !cfg.Cleanup.Deletes() { // cleanup.policy=compact: only DeleteRecords deletes
			byTime, bySize = false, false
		}
		if !byTime && !bySize && !belowStart {
			break
		}
		deleted = append(deleted, SegmentInfo{BaseOffset: s.baseOffset, NextOffset: s.nextOffset, LogBytes: s.size, MaxTimestamp: s.maxTimestamp,
			Files: [3]string{segmentFileName(s.baseOffset, LogFileSuffix), segmentFileName(s.baseOffset, IndexFileSuffix), segmentFileName(s.baseOffset, TimeIndexFileSuffix)}})
		total -= s.size
		if err := s.remove(); err != nil {
			return deleted, err
		}
		l.setSegments(l.segments[1:])
		l.logStartOffset.Store(max(l.logStartOffset.Load(), next.baseOffset))
	}
	if len(deleted) > 0 {
		if err := vfs.SyncDir(l.env.fs, l.dir); err != nil {
			return deleted, err
		}
		return deleted, l.truncateEpochsFromStart(l.logStartOffset.Load())
	}
	return nil, nil
}

// close closes the files; with clean set it first flushes, so the next open
// needs no recovery — unless the log dir is offline: then nothing more is
// written.
func (l *Log) close(clean bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	var err error
	if clean && l.env.health.check() == nil {
		err = l.env.health.fail("flush", l.tp, l.flushLocked())
	}
	for _, s := range l.segments {
		s.close()
	}
	l.closed = true
	return err
}

// sortSegments orders segments by base offset.
func sortSegments(segs []*segment) {
	sort.Slice(segs, func(i, j int) bool { return segs[i].baseOffset < segs[j].baseOffset })
}

// isSegmentFile reports whether name is a segment file, and its base offset.
func isSegmentFile(name, suffix string) (int64, bool) {
	if len(name) != 20+len(suffix) || filepath.Ext(name) != suffix {
		return 0, false
	}
	var base int64
	for _, c := range name[:20] {
		if c < '0' || c > '9' {
			return 0, false
		}
		base = base*10 + int64(c-'0')
		if base < 0 {
			return 0, false
		}
	}
	return base, true
}
