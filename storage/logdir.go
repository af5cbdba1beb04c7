package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"tidemark/storage/vfs"
)

// Options configures a LogDir.
type Options struct {
	// Now is the clock for segment.ms, flush.ms and retention.ms; default
	// time.Now. Tests inject a stepped clock.
	Now func() time.Time
	// Logger receives recovery and fault reports; default slog.Default().
	Logger *slog.Logger
	// ConfigFor gives the config of each log found on disk at open; default
	// DefaultConfig for all.
	ConfigFor func(TopicPartition) Config
	// FS is the file system every file of the dir is read and written
	// through; default vfs.Default, the OS's. Tests pass an errorfs.FS to
	// make chosen operations fail.
	FS vfs.FS
	// IdleFileTimeout is how long (on Now's clock) a sealed segment's .log
	// file stays open after its last read; then the retention check closes
	// it and the next read opens it again. Only active segments keep their
	// files open for good, so descriptors follow partitions, not segments.
	// 0 means DefaultIdleFileTimeout; negative: never closed.
	IdleFileTimeout time.Duration
	// ShortOfFiles reports whether the process is running short of file
	// descriptors (the broker asks the process's account, internal/fds);
	// while it does, sealed segments are closed once idle for
	// ShortIdleFileTimeout instead. nil: never short.
	ShortOfFiles func() bool
}

// ShortIdleFileTimeout is how long a sealed segment's .log file stays open
// after its last read while the process is short of descriptors
// (Options.ShortOfFiles): idle sealed segments are what is given back
// first, before connections and topics are refused.
const ShortIdleFileTimeout = time.Second

// DefaultIdleFileTimeout is Options.IdleFileTimeout's default: long enough
// that a consumer or follower reading through old segments keeps the one
// it reads open, short enough that a read of the whole log gives its
// descriptors back within a minute.
const DefaultIdleFileTimeout = 30 * time.Second

// LogDir is one broker's log directory: a <topic>-<partition> directory per
// log, plus the per-directory checkpoint files recovery-point-offset-checkpoint,
// replication-offset-checkpoint and log-start-offset-checkpoint, and the
// clean-shutdown marker.
//
// The first I/O or fsync error in the dir takes it offline, as Kafka does:
// see Offline and StorageError.
type LogDir struct {
	path    string
	opts    Options
	fs      vfs.FS
	tracker *syncTracker
	health  *dirHealth

	mu   sync.Mutex // guards logs, creating, hws and closed; held while writing checkpoints
	logs map[TopicPartition]*Log
	// creating holds the partitions whose logs CreateLog is making now; the
	// channel closes when it is done.
	creating map[TopicPartition]chan struct{}
	hws      map[TopicPartition]int64
	clean    bool // the last shutdown was clean
	closed   bool
}

// OpenLogDir opens (creating if needed) a log dir and every log in it. If
// the clean-shutdown marker is missing, each log is recovered from the
// segment holding its recovery point. The marker is removed, so a crash from
// now on is detected at the next open. An I/O error is a *StorageError.
func OpenLogDir(path string, opts Options) (_ *LogDir, err error) {
	defer func() {
		if err != nil && isIOError(err) && !errors.Is(err, ErrKafkaStorage) {
			err = &StorageError{Dir: path, Op: "open", Err: err}
		}
	}()
	if opts.FS == nil {
		opts.FS = vfs.Default
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.IdleFileTimeout == 0 {
		opts.IdleFileTimeout = DefaultIdleFileTimeout
	}
	if opts.ConfigFor == nil {
		opts.ConfigFor = func(TopicPartition) Config { return DefaultConfig() }
	}
	fsys := opts.FS
	if err := fsys.MkdirAll(path, 0o755); err != nil {
		return nil, err
	}
	d := &LogDir{path: path, opts: opts, fs: fsys, tracker: newSyncTracker(), health: newDirHealth(path, opts.Logger),
		logs: map[TopicPartition]*Log{}, creating: map[TopicPartition]chan struct{}{}}
	marker := filepath.Join(path, CleanShutdownFile)
	_, err = fsys.Stat(marker)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	d.clean = err == nil
	rps, err := readOffsetCheckpoint(fsys, filepath.Join(path, RecoveryPointCheckpointFile))
	if err != nil {
		return nil, err
	}
	starts, err := readOffsetCheckpoint(fsys, filepath.Join(path, LogStartCheckpointFile))
	if err != nil {
		return nil, err
	}
	if d.hws, err = readOffsetCheckpoint(fsys, filepath.Join(path, ReplicationCheckpointFile)); err != nil {
		return nil, err
	}
	entries, err := fsys.ReadDir(path)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		tp, ok := parseTopicPartition(e.Name())
		if !ok {
			continue
		}
		cfg := opts.ConfigFor(tp)
		if err := cfg.Validate(); err != nil {
			return nil, fmt.Errorf("%s: %w", tp, err)
		}
		l, err := d.openLog(tp, cfg, rps[tp], starts[tp])
		if err != nil {
			d.Crash()
			return nil, fmt.Errorf("opening log %s: %w", tp, err)
		}
		d.logs[tp] = l
	}
	// Recovery moved every recovery point to its LEO: record that before the
	// marker goes, then a crash from here on is recovered from there.
	if err := d.writeRecoveryPoints(); err != nil {
		return nil, err
	}
	if err := d.writeLogStartOffsets(); err != nil {
		return nil, err
	}
	if d.clean {
		if err := fsys.Remove(marker); err != nil {
			return nil, err
		}
		if err := vfs.SyncDir(fsys, path); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// Path returns the log dir's path.
func (d *LogDir) Path() string { return d.path }

// WasCleanShutdown reports whether the marker was present at open.
func (d *LogDir) WasCleanShutdown() bool { return d.clean }

// CreateLog returns the log of tp, creating its directory if needed. Logs
// of different partitions may be created concurrently (the broker creates
// a new topic's replicas in parallel); the dir's lock is not held during
// their I/O.
func (d *LogDir) CreateLog(tp TopicPartition, cfg Config) (*Log, error) {
	if err := tp.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := d.health.check(); err != nil {
		return nil, err
	}
	for {
		d.mu.Lock()
		if d.closed {
			d.mu.Unlock()
			return nil, ErrClosed
		}
		if l, ok := d.logs[tp]; ok {
			d.mu.Unlock()
			return l, nil
		}
		if wait, ok := d.creating[tp]; ok {
			d.mu.Unlock()
			<-wait
			continue
		}
		done := make(chan struct{})
		d.creating[tp] = done
		d.mu.Unlock()

		l, err := d.newLog(tp, cfg)
		d.mu.Lock()
		delete(d.creating, tp)
		close(done)
		if err == nil && d.closed {
			l.close(false)
			l, err = nil, ErrClosed
		}
		if err == nil {
			d.logs[tp] = l
		}
		d.mu.Unlock()
		return l, d.health.fail("create log", tp, err)
	}
}

// newLog makes the directory of tp and its empty log. A directory that is
// already there (a crash came between its creation and the controller's
// record of the log, or it was half deleted) is opened and recovered
// instead.
//
// A brand-new log needs no fsync yet: nothing in it has been acknowledged
// as durable, and if a power cut takes the directory, the broker creates
// it again, empty, from the metadata. Its directory entries (its own in the
// log dir, its files' in it) become durable at its first flush (see
// syncTracker.newDirs), so creating a thousand partitions costs no
// directory fsync at all instead of two per partition.
func (d *LogDir) newLog(tp TopicPartition, cfg Config) (*Log, error) {
	dir := filepath.Join(d.path, tp.String())
	err := d.fs.Mkdir(dir, 0o755)
	if errors.Is(err, fs.ErrExist) {
		if err := vfs.SyncDir(d.fs, d.path); err != nil {
			return nil, err
		}
		return d.openLog(tp, cfg, 0, 0)
	}
	if err != nil {
		return nil, err
	}
	d.tracker.markNew(dir)
	l := d.logFor(tp, cfg)
	s, err := createSegment(dir, 0, l.env)
	if err != nil {
		return nil, err
	}
	l.setSegments([]*segment{s})
	l.recovery = RecoveryReport{Clean: d.clean}
	return l, nil
}

// Log returns the log of tp; ok is false if there is none.
func (d *LogDir) Log(tp TopicPartition) (l *Log, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	l, ok = d.logs[tp]
	return l, ok
}

// Logs returns every log, sorted by topic and partition; none for an empty dir.
func (d *LogDir) Logs() []*Log {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]*Log, 0, len(d.logs))
	for _, l := range d.logs {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].tp, out[j].tp
		return a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition
	})
	return out
}

// DeleteLog closes a log and removes its directory.
func (d *LogDir) DeleteLog(tp TopicPartition) error {
	return d.DeleteLogs([]TopicPartition{tp})
}

// DeleteLogs closes the logs of tps (a deleted topic's) and removes their
// directories, then makes that durable and rewrites the per-dir checkpoints
// once for all of them: deleting a thousand partitions costs one directory
// fsync and three checkpoint writes, not a thousand of each.
func (d *LogDir) DeleteLogs(tps []TopicPartition) error {
	if err := d.health.check(); err != nil {
		return err
	}
	var errs []error
	removed := false
	for _, tp := range tps {
		ok, err := d.removeLog(tp)
		if err != nil {
			return d.health.fail("delete log", tp, err)
		}
		removed = removed || ok
	}
	if !removed {
		return nil
	}
	if err := vfs.SyncDir(d.fs, d.path); err != nil {
		return d.health.fail("delete logs", TopicPartition{}, err)
	}
	errs = append(errs, d.writeTruncationCheckpoints())
	d.mu.Lock()
	errs = append(errs, d.writeHighWatermarksLocked())
	d.mu.Unlock()
	return d.health.fail("delete logs", TopicPartition{}, errors.Join(errs...))
}

// removeLog closes tp's log and removes its directory; false if there is
// no such log.
func (d *LogDir) removeLog(tp TopicPartition) (bool, error) {
	d.mu.Lock()
	l, ok := d.logs[tp]
	delete(d.logs, tp)
	delete(d.hws, tp)
	d.mu.Unlock()
	if !ok {
		return false, nil
	}
	l.close(false)
	d.tracker.forgetDir(l.dir)
	for _, s := range l.segments {
		for _, suffix := range []string{LogFileSuffix, IndexFileSuffix, TimeIndexFileSuffix} {
			d.tracker.forget(s.path(suffix))
		}
	}
	return true, d.fs.RemoveAll(l.dir)
}

// HighWatermark returns the high watermark last written for tp to
// replication-offset-checkpoint; ok is false if none was.
func (d *LogDir) HighWatermark(tp TopicPartition) (hw int64, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	hw, ok = d.hws[tp]
	return hw, ok
}

// WriteHighWatermarks records high watermarks in
// replication-offset-checkpoint (the broker calls it periodically, as Kafka
// does every replica.high.watermark.checkpoint.interval.ms).
func (d *LogDir) WriteHighWatermarks(hws map[TopicPartition]int64) error {
	if err := d.health.check(); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for tp, hw := range hws {
		if _, ok := d.logs[tp]; ok {
			d.hws[tp] = hw
		}
	}
	return d.health.fail("write "+ReplicationCheckpointFile, TopicPartition{}, d.writeHighWatermarksLocked())
}

func (d *LogDir) writeHighWatermarksLocked() error {
	if d.closed {
		return ErrClosed
	}
	return writeOffsetCheckpoint(d.fs, filepath.Join(d.path, ReplicationCheckpointFile), d.hws)
}

// writeRecoveryPoints rewrites recovery-point-offset-checkpoint; a log
// calls it after each flush, under its own lock. Kafka writes it on a timer;
// writing it at once keeps the lab exact.
func (d *LogDir) writeRecoveryPoints() error {
	return d.writeOffsets(RecoveryPointCheckpointFile, func(l *Log) int64 { return l.recoveryPoint.Load() })
}

// writeLogStartOffsets rewrites log-start-offset-checkpoint.
func (d *LogDir) writeLogStartOffsets() error {
	return d.writeOffsets(LogStartCheckpointFile, func(l *Log) int64 { return l.logStartOffset.Load() })
}

// writeTruncationCheckpoints rewrites both: a truncation can move either.
func (d *LogDir) writeTruncationCheckpoints() error {
	if err := d.writeRecoveryPoints(); err != nil {
		return err
	}
	return d.writeLogStartOffsets()
}

// writeOffsets writes one per-dir checkpoint from every log's value; get
// must not take the log's lock (the caller may hold it).
func (d *LogDir) writeOffsets(name string, get func(*Log) int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return ErrClosed
	}
	m := make(map[TopicPartition]int64, len(d.logs))
	for tp, l := range d.logs {
		m[tp] = get(l)
	}
	return writeOffsetCheckpoint(d.fs, filepath.Join(d.path, name), m)
}

// Close shuts down cleanly: every log is flushed, the checkpoints are
// written, then the clean-shutdown marker, so the next open skips recovery.
// An offline dir is only closed: nothing more is written, Close returns the
// error that took it offline, and the next open recovers.
func (d *LogDir) Close() error {
	var errs []error
	for _, l := range d.Logs() {
		errs = append(errs, l.close(true))
	}
	if err := d.health.check(); err != nil {
		d.mu.Lock()
		d.closed = true
		d.mu.Unlock()
		return err
	}
	errs = append(errs, d.writeRecoveryPoints(), d.writeLogStartOffsets())
	d.mu.Lock()
	errs = append(errs, d.writeHighWatermarksLocked())
	d.closed = true
	d.mu.Unlock()
	if err := errors.Join(errs...); err != nil {
		return d.health.fail("close", TopicPartition{}, err)
	}
	return d.health.fail("close", TopicPartition{}, writeFileAtomic(d.fs, filepath.Join(d.path, CleanShutdownFile), nil))
}

// Crash closes every file without flushing or writing the marker, as a
// killed process would: bytes already written stay in the page cache and so
// on disk. The next open recovers.
func (d *LogDir) Crash() {
	for _, l := range d.Logs() {
		l.close(false)
	}
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
}

// PowerLoss crashes the log dir and then cuts every file written through it
// back to the length that was last fsynced, as losing the page cache would.
// It acts on the disk itself (vfs.Root of the dir's file system), so
// injected faults do not stop it. It returns how many bytes were lost per
// file (relative to the log dir).
func (d *LogDir) PowerLoss() (map[string]int64, error) {
	d.Crash()
	disk := vfs.Root(d.fs)
	lost := map[string]int64{}
	var errs []error
	for path, synced := range d.tracker.all() {
		st, err := disk.Stat(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if st.Size() > synced {
			if err := truncateFile(disk, path, synced); err != nil {
				errs = append(errs, err)
				continue
			}
			rel, _ := filepath.Rel(d.path, path)
			lost[rel] = st.Size() - synced
		}
	}
	return lost, errors.Join(errs...)
}

// RecoveryReport says what opening a log did.
type RecoveryReport struct {
	// Clean is true if the log dir had the clean-shutdown marker.
	Clean bool
	// RecoveryPoint is the checkpointed recovery point recovery started from.
	RecoveryPoint int64
	// SegmentsRecovered are the base offsets of the segments re-read and
	// re-indexed; segments below the recovery point are not among them.
	SegmentsRecovered []int64
	// BytesTruncated is how many torn or corrupt bytes were cut.
	BytesTruncated int64
	// SegmentsDeleted are segments dropped because they followed a corrupt one.
	SegmentsDeleted []int64
	// LogEndOffset is the LEO after recovery.
	LogEndOffset int64
}

// openLog loads one partition's segments and recovers them if needed.
func (d *LogDir) openLog(tp TopicPartition, cfg Config, recoveryPoint, logStart int64) (*Log, error) {
	l := d.logFor(tp, cfg)
	dir := l.dir
	entries, err := d.fs.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	bases := map[int64]bool{}
	for _, e := range entries {
		if b, ok := isSegmentFile(e.Name(), LogFileSuffix); ok {
			bases[b] = true
		}
	}
	for _, e := range entries {
		name := e.Name()
		_, isIdx := isSegmentFile(name, IndexFileSuffix)
		_, isTidx := isSegmentFile(name, TimeIndexFileSuffix)
		b, _ := isSegmentFile(strings.TrimSuffix(strings.TrimSuffix(name, IndexFileSuffix), TimeIndexFileSuffix)+LogFileSuffix, LogFileSuffix)
		stray := strings.HasSuffix(name, ".tmp") || strings.HasSuffix(name, ".deleted") || strings.HasSuffix(name, ".cleaned") || strings.HasSuffix(name, ".swap")
		if stray || (isIdx || isTidx) && !bases[b] {
			if err := d.fs.Remove(filepath.Join(dir, name)); err != nil {
				return nil, err
			}
		}
	}
	var segs []*segment
	for b := range bases {
		st, err := d.fs.Stat(filepath.Join(dir, segmentFileName(b, LogFileSuffix)))
		if err != nil {
			return nil, err
		}
		segs = append(segs, &segment{dir: dir, baseOffset: b, nextOffset: b, env: l.env, created: d.opts.Now(), size: st.Size(),
			maxTimestamp: -1, offsetOfMaxTimestamp: -1})
	}
	sortSegments(segs)
	l.setSegments(segs)
	if l.epochs, err = readEpochCheckpoint(d.fs, dir); err != nil {
		l.env.logger.Warn("leader epoch checkpoint unreadable; rebuilding it from the log", "err", err)
		l.epochs = nil
		recoveryPoint = 0 // re-read everything so the epochs come back
	}
	if len(l.segments) == 0 {
		s, err := createSegment(dir, logStart, l.env)
		if err != nil {
			return nil, err
		}
		l.setSegments([]*segment{s})
	}
	if err := l.recover(d.clean, recoveryPoint); err != nil {
		return nil, err
	}
	l.logStartOffset.Store(max(logStart, l.segments[0].baseOffset))
	if l.logStartOffset.Load() > l.leo() {
		// Power loss cut data the log start had passed: nothing below it may
		// come back, so start again empty at the log start.
		if err := l.truncateFullyLocked(l.logStartOffset.Load()); err != nil {
			return nil, err
		}
	}
	if err := l.truncateEpochsFromStart(l.logStartOffset.Load()); err != nil {
		return nil, err
	}
	l.recoveryPoint.Store(l.leo())
	l.recovery.LogEndOffset = l.leo()
	return l, nil
}

// logFor returns tp's Log with no segments yet.
func (d *LogDir) logFor(tp TopicPartition, cfg Config) *Log {
	return &Log{dir: filepath.Join(d.path, tp.String()), tp: tp, dl: d, offlineLEO: -1,
		env: &env{now: d.opts.Now, logger: d.opts.Logger.With("log", tp.String()), fs: d.fs, tracker: d.tracker, health: d.health, cfg: cfg,
			idleFileTimeout: d.opts.IdleFileTimeout, shortOfFiles: d.opts.ShortOfFiles}}
}

// recover brings the segments back after open. After a crash it re-reads
// the segments from the one holding the recovery point to the end (Kafka's
// LogLoader): each batch is validated, the file is cut at the first torn or
// corrupt byte, both indexes and the leader-epoch cache are rebuilt, and
// segments after a cut one are deleted. Segments below are trusted as
// fsynced and loaded only when first used. After a clean shutdown only the
// active segment is re-read, to find its end.
func (l *Log) recover(clean bool, recoveryPoint int64) error {
	l.recovery = RecoveryReport{Clean: clean, RecoveryPoint: recoveryPoint}
	first := len(l.segments) - 1 // the active segment is always loaded
	if !clean {
		first = floorSearch(len(l.segments), recoveryPoint, func(i int) int64 { return l.segments[i].baseOffset }, nil)
		first = max(first, 0)
	}
	for i := 0; i < first; i++ {
		l.segments[i].nextOffset = l.segments[i+1].baseOffset
	}
	if clean {
		// Trust the files; load the active segment and find its end.
		s := l.active()
		if err := s.ensureOpen(); err != nil {
			return err
		}
		if _, err := s.rebuild(true); err != nil {
			return err
		}
		s.created = l.env.now()
		return l.rebuildEpochs(nil)
	}
	// Epochs at or past the first re-read segment come back from its batches.
	if err := l.truncateEpochsFromEnd(l.segments[first].baseOffset); err != nil {
		return err
	}
	var headers []BatchHeader
	for i := first; i < len(l.segments); i++ {
		s := l.segments[i]
		f, err := l.env.fs.OpenFile(s.path(LogFileSuffix), os.O_RDWR, 0)
		if err != nil {
			return err
		}
		s.log, s.loaded = f, true
		before := s.size
		last := i == len(l.segments)-1
		hs, err := s.rebuild(last)
		if err != nil {
			return err
		}
		headers = append(headers, hs...)
		l.recovery.SegmentsRecovered = append(l.recovery.SegmentsRecovered, s.baseOffset)
		l.recovery.BytesTruncated += before - s.size
		next := len(l.segments)
		if i+1 < len(l.segments) {
			next = i + 1
		}
		if before != s.size || next < len(l.segments) && l.segments[next].baseOffset < s.nextOffset {
			// A cut segment ends the log: what followed it cannot be trusted
			// to continue it.
			for _, later := range l.segments[i+1:] {
				l.recovery.SegmentsDeleted = append(l.recovery.SegmentsDeleted, later.baseOffset)
				l.recovery.BytesTruncated += later.size
				if err := later.remove(); err != nil {
					return err
				}
			}
			l.setSegments(l.segments[:i+1])
			if !last {
				if err := s.openIndexWriters(false); err != nil {
					return err
				}
			}
			break
		}
		if i+1 < len(l.segments) {
			s.nextOffset = max(s.nextOffset, l.segments[i+1].baseOffset)
		}
	}
	if err := vfs.SyncDir(l.env.fs, l.dir); err != nil {
		return err
	}
	return l.rebuildEpochs(headers)
}

// rebuildEpochs assigns epochs from re-read batches and drops cached epochs
// past the LEO.
func (l *Log) rebuildEpochs(headers []BatchHeader) error {
	for _, h := range headers {
		if err := l.assignEpoch(h.PartitionLeaderEpoch, h.BaseOffset); err != nil {
			return err
		}
	}
	return l.truncateEpochsFromEnd(l.leo())
}

// truncateFile cuts the named file to size.
func truncateFile(fsys vfs.FS, path string, size int64) error {
	f, err := fsys.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Truncate(size)
}

// syncTracker remembers, per file path, how many bytes are known to be on
// stable storage: what a power cut would leave. It also keeps the log
// directories created since the last flush of their log.
type syncTracker struct {
	mu     sync.Mutex
	synced map[string]int64
	// newDirs are new logs' directories whose entries (their own in the log
	// dir, their files' in them) have not been fsynced yet, each with the
	// checkpoint files waiting to be written into it, by path. The log's
	// first flush writes and fsyncs them all (syncNew) before its recovery
	// point moves.
	newDirs map[string]map[string][]byte
}

func newSyncTracker() *syncTracker {
	return &syncTracker{synced: map[string]int64{}, newDirs: map[string]map[string][]byte{}}
}

func (t *syncTracker) markNew(dir string) {
	t.mu.Lock()
	t.newDirs[dir] = map[string][]byte{}
	t.mu.Unlock()
}

func (t *syncTracker) isNew(dir string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.newDirs[dir]
	return ok
}

// deferWrite reports whether dir is new; if so, data is what path (a file
// in it) is to hold when the dir is first made durable.
func (t *syncTracker) deferWrite(dir, path string, data []byte) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	files, ok := t.newDirs[dir]
	if ok {
		files[path] = data
	}
	return ok
}

// syncNew makes a new dir durable: the files waiting for it are written
// (each atomically and fsynced), then the dir and its parent (the log dir,
// which holds its entry) are fsynced. It does nothing for a dir that is
// not new. The log's writer calls it, under the log's lock.
func (t *syncTracker) syncNew(fsys vfs.FS, dir string) error {
	t.mu.Lock()
	files, ok := t.newDirs[dir]
	pending := maps.Clone(files)
	t.mu.Unlock()
	if !ok {
		return nil
	}
	for _, p := range slices.Sorted(maps.Keys(pending)) {
		if err := writeFileAtomic(fsys, p, pending[p]); err != nil {
			return err
		}
	}
	if err := vfs.SyncDir(fsys, dir); err != nil {
		return err
	}
	if err := vfs.SyncDir(fsys, filepath.Dir(dir)); err != nil {
		return err
	}
	t.forgetDir(dir)
	return nil
}

func (t *syncTracker) forgetDir(dir string) {
	t.mu.Lock()
	delete(t.newDirs, dir)
	t.mu.Unlock()
}

func (t *syncTracker) set(path string, n int64) {
	t.mu.Lock()
	t.synced[path] = n
	t.mu.Unlock()
}

func (t *syncTracker) get(path string) (int64, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, ok := t.synced[path]
	return n, ok
}

func (t *syncTracker) forget(path string) {
	t.mu.Lock()
	delete(t.synced, path)
	t.mu.Unlock()
}

func (t *syncTracker) all() map[string]int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]int64, len(t.synced))
	for k, v := range t.synced {
		out[k] = v
	}
	return out
}
