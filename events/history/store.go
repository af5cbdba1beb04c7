// Package history keeps a lab's events on disk for the lab's life, so a
// page loaded late can still page back to the first one.
//
// The history is a directory of append-only segment files, each named by
// the Seq of the first event it holds (%020d.events, as Kafka names its
// segments by base offset). A segment is a run of records:
//
//	length uint32 (big endian, of type and payload)
//	crc    uint32 (CRC-32C of type and payload)
//	type   byte   ('c' checkpoint, 'e' event, 'g' gap)
//	payload       (JSON: an events.Snapshot, an events.Event, a Gap)
//
// Every segment starts with a checkpoint: the state after the event before
// its first, so dropping whole oldest segments at the size bound never
// leaves an event without a state to apply it to. Further checkpoints come
// every CheckpointEvery events, so the state after any kept event is
// rebuilt by applying at most CheckpointEvery events to the checkpoint
// before it. Where the segment's records are is held in memory: a sparse
// index of (Seq, position) at every checkpoint and every indexInterval
// bytes.
//
// The writer is a goroutine of its own reading a subscription with its own
// bounded queue: Bus.Publish never waits on the disk. When the writer falls
// behind and its queue is dropped, it reads the missing events back from
// the Bus's ring; when the ring has forgotten them too, it writes a gap
// record (the Seqs lost) and a checkpoint from a fresh Snapshot, and logs
// it, so a loss is never silent.
//
// Nothing is fsynced: the history is a lab's teaching record, started
// afresh with each lab process (Follow drops what the directory held). Open
// still recovers a directory a crashed process left: a torn last record is
// cut.
package history

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"tidemark/events"
)

// Options configures a Store. Only Dir is required.
type Options struct {
	// Dir is the history's directory, inside the lab's data directory. The
	// Store creates it and only ever touches the segment files in it.
	Dir string
	// MaxBytes bounds the history on disk (default DefaultMaxBytes): past
	// it, whole oldest segments are dropped.
	MaxBytes int64
	// SegmentBytes is the size past which a segment rolls, at its next
	// checkpoint, so that every segment starts with one (default
	// MaxBytes/32, at least 64 KiB, at most MaxBytes/2).
	SegmentBytes int64
	// CheckpointEvery is how many events lie between two checkpoints at
	// most (default 1000).
	CheckpointEvery int
	// QueueLen is the writer's queue of events (default 8192); past it
	// the writer reads back from the Bus's ring.
	QueueLen int
	// Logger receives gaps and write errors, each kind at most once a
	// minute (default slog.Default()).
	Logger *slog.Logger
}

// DefaultMaxBytes is the history's default bound on disk: 256 MiB.
const DefaultMaxBytes = 256 << 20

const (
	minSegmentBytes = 64 << 10
	indexInterval   = 4 << 10 // bytes of events between two index entries
	headerLen       = 9       // length, crc, type
	// maxRecord bounds one record: a torn or foreign length beyond it is
	// taken as the end of the segment rather than allocated.
	maxRecord = 64 << 20
	segSuffix = ".events"
)

const (
	recCheckpoint byte = 'c'
	recEvent      byte = 'e'
	recGap        byte = 'g'
)

func (o *Options) validate() error {
	if o.Dir == "" {
		return errors.New("history: Options.Dir is required")
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.SegmentBytes == 0 {
		// Dropping a segment frees 1/32 of the bound, but a segment is
		// not smaller than 64 KiB, unless the bound holds only two.
		o.SegmentBytes = min(max(o.MaxBytes/32, minSegmentBytes), o.MaxBytes/2)
	}
	if o.CheckpointEvery == 0 {
		o.CheckpointEvery = 1000
	}
	if o.QueueLen == 0 {
		o.QueueLen = 8192
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	switch {
	case o.MaxBytes < 0 || o.SegmentBytes < 0 || o.CheckpointEvery < 0 || o.QueueLen < 0:
		return errors.New("history: sizes must not be negative")
	case o.SegmentBytes <= headerLen || o.SegmentBytes*2 > o.MaxBytes:
		return fmt.Errorf("history: MaxBytes %d must hold at least two segments of SegmentBytes %d", o.MaxBytes, o.SegmentBytes)
	}
	return nil
}

// Gap is a run of events the history lost (From to To, both included):
// the writer fell behind further than the Bus's ring reaches.
type Gap struct {
	From uint64 `json:"from"`
	To   uint64 `json:"to"`
}

// ErrNotKept is returned for a Seq the history does not hold: older than
// its first event, newer than its last, or inside a Gap.
var ErrNotKept = errors.New("history: event not kept")

// indexEntry says a record about seq starts at pos: a checkpoint (the
// state after seq) or an event (seq itself).
type indexEntry struct {
	seq        uint64
	pos        int64
	checkpoint bool
}

// segment is one file's place in the history.
type segment struct {
	base  uint64 // the Seq its first checkpoint is at; it is named base+1
	last  uint64 // the last Seq it holds (base while it holds no event)
	size  int64  // bytes written and readable
	index []indexEntry
	path  string
}

// Store is a lab's history on disk. Its methods are safe for concurrent
// use. mu guards segs, gaps and the bounds; the writer goroutine alone owns
// the active segment's file and the state it applies events to, and takes
// mu only to publish what it has written. Readers copy what they need
// under mu and read segment files of their own. mu is a leaf: nothing else
// is locked while it is held (the writer reads the Bus and asks for a
// snapshot without it).
type Store struct {
	opts Options

	mu    sync.Mutex
	segs  []*segment // oldest first
	gaps  []Gap
	bytes int64 // sum of segs' sizes
	first uint64

	// Owned by the writer goroutine (or by Follow before it starts).
	f        *os.File
	w        *bufio.Writer
	state    events.Snapshot
	sinceChk int   // events written since the last checkpoint
	wpos     int64 // bytes appended to the active segment, flushed or not
	buf      []byte

	// rebase is a state the lab took from elsewhere than its events, to
	// write as a checkpoint once the events up to its Seq are (Rebase).
	rebase atomic.Pointer[events.Snapshot]
	wake   chan struct{} // capacity 1: Rebase wakes the writer

	stop chan struct{}
	done chan struct{}
	logs logLimiter
}

// Open opens the history in opts.Dir, creating the directory, and recovers
// the segments it holds: each is read through, and a torn or corrupt
// record (a crash mid-write) is cut with everything after it.
func Open(opts Options) (*Store, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	s := &Store{opts: opts, logs: logLimiter{every: time.Minute, logger: opts.Logger}}
	names, err := segmentNames(opts.Dir)
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		seg, err := s.recover(n)
		if err != nil {
			return nil, err
		}
		if seg != nil {
			s.segs = append(s.segs, seg)
			s.bytes += seg.size
		}
	}
	s.setFirst()
	return s, nil
}

// segmentNames returns the Seqs of the segment files in dir, in order:
// names of exactly 20 digits and the suffix; everything else is left alone.
func segmentNames(dir string) ([]uint64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []uint64
	for _, e := range ents {
		n, ok := strings.CutSuffix(e.Name(), segSuffix)
		if !ok || len(n) != 20 || !e.Type().IsRegular() {
			continue
		}
		v, err := strconv.ParseUint(n, 10, 64)
		if err != nil || v == 0 {
			continue
		}
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

func (s *Store) segPath(name uint64) string {
	return filepath.Join(s.opts.Dir, fmt.Sprintf("%020d%s", name, segSuffix))
}

// recover reads segment name through, cuts what follows its last whole
// record and rebuilds its index. A segment without a whole first
// checkpoint is removed: nothing in it can be rebuilt.
func (s *Store) recover(name uint64) (*segment, error) {
	path := s.segPath(name)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	seg := &segment{path: path, base: name - 1, last: name - 1}
	r := &recordReader{r: bufio.NewReaderSize(f, 64<<10)}
	var lastIdx int64 = -indexInterval
	for ok := true; ok; {
		pos := r.pos
		typ, payload, err := r.next()
		if err != nil {
			break // io.EOF, a torn record or a bad CRC: cut here
		}
		switch typ {
		case recCheckpoint:
			seq, good := checkpointSeq(payload)
			if ok = good && (pos > 0 || seq == seg.base); ok {
				seg.index = append(seg.index, indexEntry{seq: seq, pos: pos, checkpoint: true})
				seg.last = max(seg.last, seq)
			}
		case recEvent:
			seq, good := eventSeq(payload)
			if ok = good && pos > 0; ok {
				if pos-lastIdx >= indexInterval {
					seg.index = append(seg.index, indexEntry{seq: seq, pos: pos})
					lastIdx = pos
				}
				seg.last = seq
			}
		case recGap:
			var g Gap
			if json.Unmarshal(payload, &g) == nil {
				s.gaps = append(s.gaps, g)
			}
		default:
			ok = false
		}
		if ok {
			seg.size = r.pos
		}
	}
	if len(seg.index) == 0 || !seg.index[0].checkpoint {
		f.Close()
		return nil, os.Remove(path)
	}
	if err := f.Truncate(seg.size); err != nil {
		return nil, err
	}
	return seg, nil
}

// checkpointSeq reads an encoded checkpoint's Seq: the encoder writes
// "seq" first there too.
func checkpointSeq(payload []byte) (uint64, bool) { return eventSeq(payload) }

// eventSeq reads an encoded event's Seq without decoding all of it: the
// encoder writes "seq" first.
func eventSeq(payload []byte) (uint64, bool) {
	const prefix = `{"seq":`
	if len(payload) < len(prefix) || string(payload[:len(prefix)]) != prefix {
		return 0, false
	}
	i := len(prefix)
	j := i
	for j < len(payload) && payload[j] >= '0' && payload[j] <= '9' {
		j++
	}
	v, err := strconv.ParseUint(string(payload[i:j]), 10, 64)
	return v, err == nil
}

// setFirst sets first from segs: the first event of the oldest segment.
// Callers hold mu (or own s alone).
func (s *Store) setFirst() {
	s.first = 0
	if len(s.segs) > 0 {
		s.first = s.segs[0].base + 1
	}
}

// Bounds returns the Seq of the first event the history keeps and of the
// last one written; the state after first-1 is the oldest it rebuilds.
// Both are 0 for a Store that never followed a Bus; first is last+1 while
// it holds no event.
func (s *Store) Bounds() (first, last uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.segs) == 0 {
		return 0, 0
	}
	return s.first, s.segs[len(s.segs)-1].last
}

// Size returns the bytes the history holds on disk.
func (s *Store) Size() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes
}

// Gaps returns the runs of events the history lost (none, mostly).
func (s *Store) Gaps() []Gap {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Gap(nil), s.gaps...)
}

// Follow starts a new history from base and keeps it up with bus: every
// segment the directory held is dropped, a checkpoint of base is written
// and a writer goroutine appends every event published after base.Seq
// until Close. snapshot is asked for a fresh state when the writer has
// lost events (a gap). sub must have been taken from bus before base was,
// with SubscribeQueue(QueueLen), so no event falls between them.
func (s *Store) Follow(bus *events.Bus, sub *events.Subscription, base events.Snapshot, snapshot func() events.Snapshot) error {
	if s.stop != nil {
		return errors.New("history: Follow called twice")
	}
	s.mu.Lock()
	old := s.segs
	s.segs, s.gaps, s.bytes = nil, nil, 0
	s.mu.Unlock()
	for _, seg := range old {
		if err := os.Remove(seg.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	s.state = base.Clone()
	if err := s.roll(); err != nil {
		return err
	}
	s.stop, s.done, s.wake = make(chan struct{}), make(chan struct{}), make(chan struct{}, 1)
	go s.run(bus, sub, snapshot)
	return nil
}

// Rebase tells the writer that the state after event snap.Seq is snap, not
// what the events before it made of the state: the lab took it from
// elsewhere (a cluster's first snapshot reads its brokers, which publish
// events while they start). Once the events up to snap.Seq are written,
// snap is written as a checkpoint and the events after it apply to it, so
// every state from snap.Seq on is the lab's own. Call it before any event
// after snap.Seq is published (the cluster does under the lock it
// publishes under); a later Rebase replaces one not written yet.
func (s *Store) Rebase(snap events.Snapshot) {
	c := snap.Clone()
	s.rebase.Store(&c)
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// rebased writes the pending Rebase once the events before it are
// written, before event next (0: when nothing follows yet).
func (s *Store) rebased(next uint64) error {
	p := s.rebase.Load()
	if p == nil || s.state.Seq < p.Seq || next != 0 && next <= p.Seq {
		return nil
	}
	s.rebase.CompareAndSwap(p, nil)
	if s.state.Seq > p.Seq {
		// Events after it were written first: the caller broke Rebase's
		// contract. The events' own state stands.
		s.logs.log("rebase", "history: a rebase came after later events; ignored", "seq", p.Seq, "written", s.state.Seq)
		return nil
	}
	s.state = *p
	return s.checkpoint()
}

// QueueLen returns the writer's queue length, for Bus.SubscribeQueue.
func (s *Store) QueueLen() int { return s.opts.QueueLen }

// Close stops the writer after it has written what was published before
// Close, and closes the active segment. The history stays readable.
func (s *Store) Close() error {
	if s.stop == nil {
		return nil
	}
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.done
	return nil
}

// run is the writer goroutine.
func (s *Store) run(bus *events.Bus, sub *events.Subscription, snapshot func() events.Snapshot) {
	defer close(s.done)
	defer sub.Close()
	defer func() {
		if s.f != nil {
			s.w.Flush()
			s.f.Close()
		}
	}()
	for {
		stopping := false
		select {
		case <-sub.Ready():
		case <-s.wake:
		case <-s.stop:
			stopping = true
		}
		evs, lagged := sub.Drain()
		if lagged {
			evs = s.readBack(bus, evs, snapshot)
		}
		if err := s.write(evs); err != nil {
			s.logs.log("write", "history: writing events failed; the history stops here", "dir", s.opts.Dir, "err", err)
			return
		}
		if stopping {
			return
		}
	}
}

// readBack fills the hole a lag left before evs from the Bus's ring; what
// the ring has forgotten too is written as a gap followed by a checkpoint
// of a fresh snapshot, and the events it already includes are dropped.
func (s *Store) readBack(bus *events.Bus, evs []events.Event, snapshot func() events.Snapshot) []events.Event {
	last := s.state.Seq
	if len(evs) > 0 && evs[0].Seq <= last+1 {
		return evs // the events dropped were written already
	}
	var hole []events.Event
	for {
		got, oldest := bus.Since(last, 0)
		if len(got) == 0 || oldest > last+1 {
			break
		}
		hole = append(hole, got...)
		last = got[len(got)-1].Seq
		if len(evs) == 0 || last+1 >= evs[0].Seq {
			break
		}
	}
	switch {
	case len(hole) > 0 && hole[0].Seq == s.state.Seq+1:
		return mergeSeq(hole, evs)
	case len(hole) == 0 && len(evs) == 0:
		return nil // the ring has nothing newer: nothing was lost
	}
	snap := snapshot()
	g := Gap{From: s.state.Seq + 1, To: snap.Seq}
	s.logs.log("gap", "history: the writer fell behind the event ring; events lost from the history", "from", g.From, "to", g.To)
	if err := s.writeGap(g, snap); err != nil {
		s.logs.log("write", "history: writing a gap failed", "err", err)
	}
	i := 0
	for i < len(evs) && evs[i].Seq <= snap.Seq {
		i++
	}
	return evs[i:]
}

// mergeSeq returns a's events followed by b's newer ones.
func mergeSeq(a, b []events.Event) []events.Event {
	last := a[len(a)-1].Seq
	for _, e := range b {
		if e.Seq > last {
			a = append(a, e)
		}
	}
	return a
}

// write appends evs (those newer than what is written) and publishes them
// to readers.
func (s *Store) write(evs []events.Event) error {
	for i := range evs {
		e := &evs[i]
		if e.Seq <= s.state.Seq {
			continue
		}
		if e.Seq != s.state.Seq+1 {
			// A Bus never skips a Seq; a subscription that lagged is filled
			// by readBack. Record it rather than mend it silently.
			snap := s.state.Clone()
			snap.Seq = e.Seq - 1
			if err := s.writeGap(Gap{From: s.state.Seq + 1, To: e.Seq - 1}, snap); err != nil {
				return err
			}
		}
		if err := s.rebased(e.Seq); err != nil {
			return err
		}
		if err := s.append(recEvent, e, e.Seq); err != nil {
			return err
		}
		s.state.Apply(*e)
		s.sinceChk++
		if s.sinceChk >= s.opts.CheckpointEvery {
			if err := s.checkpoint(); err != nil {
				return err
			}
		}
	}
	if err := s.rebased(0); err != nil {
		return err
	}
	return s.commit()
}

// writeGap records g and the state after it, and commits.
func (s *Store) writeGap(g Gap, after events.Snapshot) error {
	if err := s.append(recGap, g, 0); err != nil {
		return err
	}
	s.state = after
	s.mu.Lock()
	s.gaps = append(s.gaps, g)
	s.mu.Unlock()
	if err := s.checkpoint(); err != nil {
		return err
	}
	return s.commit()
}

// checkpoint writes the current state; a full segment rolls first, and
// the new segment's checkpoint is this one.
func (s *Store) checkpoint() error {
	s.sinceChk = 0
	if s.wpos >= s.opts.SegmentBytes {
		if err := s.commit(); err != nil {
			return err
		}
		return s.roll()
	}
	return s.append(recCheckpoint, &s.state, s.state.Seq)
}

func (s *Store) active() *segment {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.segs[len(s.segs)-1]
}

// roll closes the active segment and starts the next one with a
// checkpoint of the current state, then drops the oldest segments past
// MaxBytes.
func (s *Store) roll() error {
	if s.f != nil {
		if err := s.w.Flush(); err != nil {
			return err
		}
		if err := s.f.Close(); err != nil {
			return err
		}
	}
	seg := &segment{base: s.state.Seq, last: s.state.Seq, path: s.segPath(s.state.Seq + 1)}
	f, err := os.OpenFile(seg.path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	s.f, s.wpos = f, 0
	if s.w == nil {
		s.w = bufio.NewWriterSize(f, 64<<10)
	} else {
		s.w.Reset(f)
	}
	s.mu.Lock()
	s.segs = append(s.segs, seg)
	s.setFirst()
	s.mu.Unlock()
	s.sinceChk = 0
	if err := s.append(recCheckpoint, &s.state, s.state.Seq); err != nil {
		return err
	}
	return s.commit()
}

// append encodes v as a record of typ at the end of the active segment
// (buffered until commit), noting seq in the index where due.
func (s *Store) append(typ byte, v any, seq uint64) error {
	b := s.buf[:0]
	b = append(b, 0, 0, 0, 0, 0, 0, 0, 0, typ)
	payload, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = append(b, payload...)
	if len(b)-8 > maxRecord {
		return fmt.Errorf("history: a record of %d bytes", len(b))
	}
	binary.BigEndian.PutUint32(b[0:4], uint32(len(b)-8))
	binary.BigEndian.PutUint32(b[4:8], crc32.Checksum(b[8:], castagnoli))
	seg := s.active()
	pos := s.wpos
	if _, err := s.w.Write(b); err != nil {
		return err
	}
	s.wpos += int64(len(b))
	s.buf = b[:0]
	if typ == recGap {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(seg.index)
	if typ == recCheckpoint || n == 0 || pos-lastEventPos(seg.index) >= indexInterval {
		seg.index = append(seg.index, indexEntry{seq: seq, pos: pos, checkpoint: typ == recCheckpoint})
	}
	return nil
}

// lastEventPos is where the index's last entry is.
func lastEventPos(ix []indexEntry) int64 { return ix[len(ix)-1].pos }

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// commit flushes the active segment and lets readers see it: its size and
// last Seq move, and the oldest segments past MaxBytes are dropped.
func (s *Store) commit() error {
	if err := s.w.Flush(); err != nil {
		return err
	}
	var drop []*segment
	s.mu.Lock()
	seg := s.segs[len(s.segs)-1]
	s.bytes += s.wpos - seg.size
	seg.size = s.wpos
	seg.last = s.state.Seq
	for len(s.segs) > 1 && s.bytes > s.opts.MaxBytes {
		drop = append(drop, s.segs[0])
		s.bytes -= s.segs[0].size
		s.segs[0] = nil
		s.segs = s.segs[1:]
	}
	s.setFirst()
	for len(s.gaps) > 0 && s.gaps[0].To < s.first {
		s.gaps = s.gaps[1:]
	}
	s.mu.Unlock()
	for _, d := range drop {
		// A reader with the file open keeps reading it; one that opens
		// it after finds it gone and is told ErrNotKept.
		if err := os.Remove(d.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// recordReader reads records from r, counting its position.
type recordReader struct {
	r   *bufio.Reader
	pos int64
	hdr [headerLen]byte
	buf []byte
}

var errTorn = errors.New("history: torn or corrupt record")

// next returns the next record; its payload is valid until the next call.
func (r *recordReader) next() (byte, []byte, error) {
	if _, err := io.ReadFull(r.r, r.hdr[:]); err != nil {
		if err == io.EOF {
			return 0, nil, io.EOF
		}
		return 0, nil, errTorn
	}
	n := binary.BigEndian.Uint32(r.hdr[0:4])
	if n < 1 || n > maxRecord {
		return 0, nil, errTorn
	}
	if cap(r.buf) < int(n-1) {
		r.buf = make([]byte, n-1)
	}
	payload := r.buf[:n-1]
	if _, err := io.ReadFull(r.r, payload); err != nil {
		return 0, nil, errTorn
	}
	crc := crc32.Update(crc32.Checksum(r.hdr[8:9], castagnoli), castagnoli, payload)
	if crc != binary.BigEndian.Uint32(r.hdr[4:8]) {
		return 0, nil, errTorn
	}
	r.pos += int64(headerLen) + int64(len(payload))
	return r.hdr[8], payload, nil
}

// logLimiter logs each kind of message at most once every period, with
// how many were left out meanwhile.
type logLimiter struct {
	every  time.Duration
	logger *slog.Logger
	mu     sync.Mutex
	last   map[string]time.Time
	held   map[string]int
}

func (l *logLimiter) log(kind, msg string, args ...any) {
	l.mu.Lock()
	now := time.Now()
	if l.last == nil {
		l.last, l.held = map[string]time.Time{}, map[string]int{}
	}
	if t, ok := l.last[kind]; ok && now.Sub(t) < l.every {
		l.held[kind]++
		l.mu.Unlock()
		return
	}
	held := l.held[kind]
	l.last[kind], l.held[kind] = now, 0
	l.mu.Unlock()
	if held > 0 {
		args = append(args, "left_out", held)
	}
	l.logger.Warn(msg, args...)
}
