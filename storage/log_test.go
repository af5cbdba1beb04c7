package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestAppendReadBack(t *testing.T) {
	_, l, _ := openTestLog(t, smallConfig())
	produce(t, l, 3, 0, 40, 5, 50)
	if got := l.LogEndOffset(); got != 200 {
		t.Fatalf("LEO = %d, want 200", got)
	}
	recs := readAll(t, l, l.LogEndOffset())
	if len(recs) != 200 {
		t.Fatalf("read %d records, want 200", len(recs))
	}
	for i, r := range recs {
		if r.Offset != int64(i) || !bytes.Equal(r.Value, value(i, 50)) || string(r.Key) != strconv.Itoa(i) {
			t.Fatalf("record %d = offset %d key %q", i, r.Offset, r.Key)
		}
		if r.Timestamp != int64(1_000_000+i*1000) {
			t.Fatalf("record %d timestamp %d", i, r.Timestamp)
		}
	}
	if e := l.Epochs(); len(e) != 1 || e[0] != (EpochEntry{Epoch: 3, StartOffset: 0}) {
		t.Fatalf("epochs = %v, want [{3 0}]", e)
	}
}

const time60s = 60 * time.Second

// TestFilesDecodeWithKmsg walks every .log file byte by byte with kmsg and a
// CRC computed here, independent of the storage code, and checks the index
// files' layout against the batches found.
func TestFilesDecodeWithKmsg(t *testing.T) {
	_, l, _ := openTestLog(t, smallConfig())
	produce(t, l, 0, 0, 15, 3, 100)
	produce(t, l, 1, 45, 15, 3, 100)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	logs, _ := filepath.Glob(filepath.Join(l.Dir(), "*.log"))
	if len(logs) < 3 {
		t.Fatalf("want several segments, got %v", logs)
	}
	sort.Strings(logs)
	next := int64(0)
	table := crc32.MakeTable(crc32.Castagnoli)
	for _, path := range logs {
		name := filepath.Base(path)
		if len(name) != len("00000000000000000000.log") {
			t.Fatalf("segment name %q is not 20 digits", name)
		}
		if name != segmentFileName(next, ".log") {
			t.Fatalf("segment %s, want base offset %d", name, next)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		positions := map[int32]int64{} // position -> last offset
		for pos := 0; pos < len(data); {
			length := int(binary.BigEndian.Uint32(data[pos+8:]))
			raw := data[pos : pos+12+length]
			var b kmsg.RecordBatch
			if err := b.ReadFrom(raw); err != nil {
				t.Fatalf("%s@%d: kmsg: %v", name, pos, err)
			}
			if b.Magic != 2 || uint32(b.CRC) != crc32.Checksum(raw[21:], table) {
				t.Fatalf("%s@%d: magic %d crc %x", name, pos, b.Magic, b.CRC)
			}
			if b.FirstOffset != next {
				t.Fatalf("%s@%d: base offset %d, want %d", name, pos, b.FirstOffset, next)
			}
			wantEpoch := int32(0)
			if b.FirstOffset >= 45 {
				wantEpoch = 1
			}
			if b.PartitionLeaderEpoch != wantEpoch {
				t.Fatalf("offset %d: partition leader epoch %d, want %d", b.FirstOffset, b.PartitionLeaderEpoch, wantEpoch)
			}
			rest := b.Records
			for i := int32(0); i < b.NumRecords; i++ {
				var r kmsg.Record
				n, sz := binary.Varint(rest)
				if err := r.ReadFrom(rest[:sz+int(n)]); err != nil {
					t.Fatal(err)
				}
				if want := value(int(b.FirstOffset)+int(r.OffsetDelta), 100); !bytes.Equal(r.Value, want) {
					t.Fatalf("offset %d: value %q", b.FirstOffset+int64(r.OffsetDelta), r.Value)
				}
				rest = rest[sz+int(n):]
			}
			positions[int32(pos)] = b.FirstOffset + int64(b.LastOffsetDelta)
			next = b.FirstOffset + int64(b.LastOffsetDelta) + 1
			pos += 12 + length
		}
		base, _ := isSegmentFile(name, ".log")
		idx, _ := os.ReadFile(strings.TrimSuffix(path, ".log") + ".index")
		if len(idx)%8 != 0 {
			t.Fatalf("%s.index has %d bytes", name, len(idx))
		}
		for i := 0; i < len(idx); i += 8 {
			rel := int32(binary.BigEndian.Uint32(idx[i:]))
			pos := int32(binary.BigEndian.Uint32(idx[i+4:]))
			last, ok := positions[pos]
			if !ok || base+int64(rel) != last {
				t.Fatalf("index entry (%d,%d) does not point at a batch whose last offset is %d", rel, pos, base+int64(rel))
			}
		}
		tidx, _ := os.ReadFile(strings.TrimSuffix(path, ".log") + ".timeindex")
		if len(tidx)%12 != 0 || len(tidx) == 0 {
			t.Fatalf("%s.timeindex has %d bytes", name, len(tidx))
		}
		var prev int64
		for i := 0; i < len(tidx); i += 12 {
			ts := int64(binary.BigEndian.Uint64(tidx[i:]))
			if ts < prev {
				t.Fatalf("timeindex goes back: %d after %d", ts, prev)
			}
			prev = ts
		}
	}
	if next != l.LogEndOffset() {
		t.Fatalf("files end at %d, LEO %d", next, l.LogEndOffset())
	}
}

func TestRollAndIndexInterval(t *testing.T) {
	cfg := smallConfig()
	_, l, clock := openTestLog(t, cfg)
	produce(t, l, 0, 0, 30, 1, 200) // ~280-byte batches
	segs, err := l.Segments()
	if err != nil {
		t.Fatal(err)
	}
	if len(segs) < 2 {
		t.Fatalf("%d segments, want a roll at segment.bytes=%d", len(segs), cfg.SegmentBytes)
	}
	for i, s := range segs {
		if s.LogBytes > cfg.SegmentBytes {
			t.Fatalf("segment %d is %d bytes > segment.bytes", s.BaseOffset, s.LogBytes)
		}
		if i > 0 && s.BaseOffset != segs[i-1].NextOffset {
			t.Fatalf("segment %d does not follow %d", s.BaseOffset, segs[i-1].NextOffset)
		}
		if !s.Active && len(s.Index) == 0 {
			t.Fatalf("segment %d has no index entries at index.interval.bytes=%d", s.BaseOffset, cfg.IndexIntervalBytes)
		}
		// One entry each time more than index.interval.bytes was appended:
		// consecutive entries are more than the interval apart.
		for j := 1; j < len(s.Index); j++ {
			if gap := s.Index[j].Position - s.Index[j-1].Position; int64(gap) <= cfg.IndexIntervalBytes {
				t.Fatalf("index entries %d bytes apart", gap)
			}
		}
		if !s.Active && s.SyncedLogBytes != s.LogBytes {
			t.Fatalf("rolled segment %d not flushed: %d of %d bytes synced", s.BaseOffset, s.SyncedLogBytes, s.LogBytes)
		}
	}
	// Rolling flushes: the recovery point is the active segment's base.
	if rp := l.RecoveryPoint(); rp != segs[len(segs)-1].BaseOffset {
		t.Fatalf("recovery point %d, want active base %d", rp, segs[len(segs)-1].BaseOffset)
	}

	// segment.ms rolls a non-empty segment by age.
	cfg.SegmentMs = time60s
	if err := l.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	n := len(segs)
	clock.Advance(time60s)
	produce(t, l, 0, 30, 1, 1, 10)
	segs, _ = l.Segments()
	if len(segs) != n+1 || segs[n].BaseOffset != 30 {
		t.Fatalf("segment.ms did not roll: %d segments, last base %d", len(segs), segs[len(segs)-1].BaseOffset)
	}
}

func TestRollOnFullIndex(t *testing.T) {
	cfg := smallConfig()
	cfg.SegmentIndexBytes = 3 * indexEntrySize
	cfg.IndexIntervalBytes = 0
	_, l, _ := openTestLog(t, cfg)
	produce(t, l, 0, 0, 10, 1, 10)
	segs, _ := l.Segments()
	for _, s := range segs {
		if len(s.Index) > 3 {
			t.Fatalf("segment %d has %d index entries, limit 3", s.BaseOffset, len(s.Index))
		}
	}
	if len(segs) < 2 {
		t.Fatalf("a full index did not roll: %d segments", len(segs))
	}
}

func TestLookupEveryOffset(t *testing.T) {
	_, l, _ := openTestLog(t, smallConfig())
	produce(t, l, 0, 0, 60, 4, 60)
	for off := int64(0); off < l.LogEndOffset(); off++ {
		tr, err := l.Lookup(off)
		if err != nil {
			t.Fatalf("lookup %d: %v", off, err)
		}
		if tr.Batch.BaseOffset > off || tr.Batch.LastOffset() < off {
			t.Fatalf("lookup %d found batch [%d,%d]", off, tr.Batch.BaseOffset, tr.Batch.LastOffset())
		}
		if tr.SegmentBaseOffset > off || len(tr.SegmentProbes) == 0 || len(tr.Scanned) == 0 {
			t.Fatalf("lookup %d: trace %+v", off, tr)
		}
		if tr.IndexEntry != nil && tr.StartPosition != int64(tr.IndexEntry.Position) {
			t.Fatalf("scan started at %d, index entry says %d", tr.StartPosition, tr.IndexEntry.Position)
		}
		// The sparse index bounds the scan: never more than the batches in
		// one index interval plus the one found.
		if len(tr.Scanned) > 1+int(smallConfig().IndexIntervalBytes)/(4*60)+2 {
			t.Fatalf("lookup %d scanned %d batches", off, len(tr.Scanned))
		}
	}
	var oor *OffsetOutOfRangeError
	if _, err := l.Lookup(l.LogEndOffset()); !errors.As(err, &oor) || !errors.Is(err, kerr.OffsetOutOfRange) {
		t.Fatalf("lookup at LEO: %v", err)
	}
	if _, err := l.Read(-1, 100, 100); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read -1: %v", err)
	}
	if _, err := l.Read(l.LogEndOffset()+1, 1<<40, 100); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read past LEO: %v", err)
	}
	d, err := l.Read(l.LogEndOffset(), 1<<40, 100)
	if err != nil || d.Region.Size != 0 {
		t.Fatalf("read at LEO: %+v %v", d, err)
	}
}

func TestReadBoundsAndRegions(t *testing.T) {
	_, l, _ := openTestLog(t, smallConfig())
	produce(t, l, 0, 0, 10, 2, 30)
	// maxOffset (a high watermark) excludes any batch reaching it.
	d, err := l.Read(0, 5, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if d.FirstOffset != 0 || d.NextOffset != 4 {
		t.Fatalf("read below 5 returned [%d,%d)", d.FirstOffset, d.NextOffset)
	}
	// A read in the middle of a batch returns the whole batch.
	d, _ = l.Read(3, 1<<40, 1)
	if d.FirstOffset != 2 || d.NextOffset != 4 {
		t.Fatalf("read 3 returned [%d,%d), want the batch [2,4)", d.FirstOffset, d.NextOffset)
	}
	// At least one batch even when maxBytes is smaller.
	b, err := d.Region.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeBatch(b); err != nil {
		t.Fatalf("region is not a whole batch: %v", err)
	}
	// At the bound: empty, not an error.
	d, err = l.Read(4, 4, 100)
	if err != nil || d.Region.Size != 0 {
		t.Fatalf("read at bound: %+v %v", d, err)
	}
}

func TestOffsetForTimestamp(t *testing.T) {
	_, l, _ := openTestLog(t, smallConfig())
	produce(t, l, 0, 0, 50, 2, 40) // record i has timestamp 1_000_000 + 1000 i
	cases := []struct {
		ts   int64
		want int64
		ok   bool
	}{
		{0, 0, true},
		{1_000_000, 0, true},
		{1_000_001, 1, true},
		{1_000_000 + 37*1000, 37, true},
		{1_000_000 + 37*1000 - 1, 37, true},
		{1_000_000 + 99*1000, 99, true},
		{1_000_000 + 99*1000 + 1, 0, false},
	}
	for _, c := range cases {
		got, ok, err := l.OffsetForTimestamp(c.ts)
		if err != nil || ok != c.ok || ok && got != c.want {
			t.Errorf("OffsetForTimestamp(%d) = %d %v %v, want %d %v", c.ts, got, ok, err, c.want, c.ok)
		}
	}
}

func TestBadAppends(t *testing.T) {
	cfg := smallConfig()
	cfg.MaxMessageBytes = 500
	_, l, _ := openTestLog(t, cfg)
	good := NewBatch([]Record{{Value: []byte("x")}})
	corrupt := append([]byte(nil), good...)
	corrupt[len(corrupt)-1] ^= 0xff
	big := NewBatch([]Record{{Value: make([]byte, 600)}})
	badMagic := append([]byte(nil), good...)
	badMagic[16] = 1
	cases := map[string]struct {
		in   []byte
		want error
	}{
		"empty":        {nil, ErrCorruptMessage},
		"short":        {good[:30], ErrCorruptMessage},
		"crc":          {corrupt, ErrCorruptMessage},
		"magic":        {badMagic, ErrCorruptMessage},
		"too large":    {big, ErrMessageTooLarge},
		"trailing":     {append(append([]byte(nil), good...), 1, 2, 3), ErrCorruptMessage},
		"second batch": {append(append([]byte(nil), good...), corrupt...), ErrCorruptMessage},
	}
	for name, c := range cases {
		if _, err := l.AppendAsLeader(c.in, 0); !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", name, err, c.want)
		}
		// A caller that validated the batch skips only the CRC: whatever
		// else the headers condemn is still refused.
		if name == "crc" || name == "second batch" {
			continue
		}
		if _, err := l.AppendValidatedAsLeader(c.in, 0); !errors.Is(err, c.want) {
			t.Errorf("%s (validated): err = %v, want %v", name, err, c.want)
		}
	}
	if leo := l.LogEndOffset(); leo != 0 {
		t.Fatalf("bad appends wrote something: LEO %d", leo)
	}
	// A follower append must not go backwards.
	if _, err := l.AppendAsLeader(append([]byte(nil), good...), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendAsFollower(append([]byte(nil), good...)); !errors.Is(err, ErrCorruptMessage) {
		t.Fatalf("follower append below LEO: %v", err)
	}
}

// TestAppendValidatedAsLeader checks that a batch ValidateProducedBatch
// accepted is appended exactly as AppendAsLeader appends it: the same
// offsets, the same bytes on disk, the same index entries.
func TestAppendValidatedAsLeader(t *testing.T) {
	cfg := smallConfig()
	_, checked, _ := openTestLog(t, cfg)
	_, validated, _ := openTestLog(t, cfg)
	for i := range 40 {
		batch := NewBatch([]Record{{Key: []byte(strconv.Itoa(i)), Value: value(i, 100), Timestamp: int64(1_000_000 + i)}})
		if _, err := ValidateProducedBatch(batch); err != nil {
			t.Fatal(err)
		}
		want, err := checked.AppendAsLeader(slices.Clone(batch), 2)
		if err != nil {
			t.Fatal(err)
		}
		got, err := validated.AppendValidatedAsLeader(batch, 2)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("batch %d: AppendValidatedAsLeader %+v, AppendAsLeader %+v", i, got, want)
		}
	}
	if err := checked.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := validated.Flush(); err != nil {
		t.Fatal(err)
	}
	segs, err := checked.Segments()
	if err != nil || len(segs) < 2 {
		t.Fatalf("%d segments (%v), want a roll", len(segs), err)
	}
	for _, seg := range segs {
		for _, suffix := range []string{LogFileSuffix, IndexFileSuffix, TimeIndexFileSuffix} {
			name := segmentFileName(seg.BaseOffset, suffix)
			want, err1 := os.ReadFile(filepath.Join(checked.Dir(), name))
			got, err2 := os.ReadFile(filepath.Join(validated.Dir(), name))
			if err1 != nil || err2 != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s differs (%v, %v)", name, err1, err2)
			}
		}
	}
}

func TestTopicNames(t *testing.T) {
	for _, ok := range []string{"demo", "a.b_c-D9", strings.Repeat("x", 249), "..."} {
		if err := ValidateTopicName(ok); err != nil {
			t.Errorf("%q rejected: %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", "../etc", "a/b", "a b", "ü", strings.Repeat("x", 250), "a\x00"} {
		if err := ValidateTopicName(bad); !errors.Is(err, kerr.InvalidTopicException) {
			t.Errorf("%q accepted (%v)", bad, err)
		}
	}
	// The refusal names the character sent, not the first byte of its UTF-8.
	if err := ValidateTopicName("订单"); err == nil || !strings.Contains(err.Error(), `has '订'`) {
		t.Errorf("a Chinese topic name: %v, want it to name '订'", err)
	}
	d, _, _ := openTestLog(t, smallConfig())
	if _, err := d.CreateLog(TopicPartition{"../x", 0}, smallConfig()); err == nil {
		t.Fatal("created a log outside the log dir")
	}
	if _, err := d.CreateLog(TopicPartition{"x", -1}, smallConfig()); err == nil {
		t.Fatal("created a log with a negative partition")
	}
}

// A record set whose later batch fails its CRC is refused whole: the batches
// before it, already written, are cut off again, so neither a reader nor a
// restart finds them. The log dir stays online: bad input is not a storage
// failure.
func TestCorruptLaterBatchLeavesNothing(t *testing.T) {
	cfg := smallConfig()
	for _, asLeader := range []bool{true, false} {
		d, l, clock := openTestLog(t, cfg)
		produce(t, l, 0, 0, 3, 2, 100)
		size := l.Size()
		first := NewBatch([]Record{{Key: []byte("a"), Value: value(7, 100)}})
		second := NewBatch([]Record{{Key: []byte("b"), Value: value(8, 100)}})
		second[len(second)-1] ^= 0xff
		var err error
		if asLeader {
			_, err = l.AppendAsLeader(append(first, second...), 0)
		} else {
			stampBatch(first, 6, 0)
			stampBatch(second, 7, 0)
			_, err = l.AppendAsFollower(append(first, second...))
		}
		if !errors.Is(err, ErrCorruptMessage) {
			t.Fatalf("leader %v: err = %v, want CORRUPT_MESSAGE", asLeader, err)
		}
		if l.LogEndOffset() != 6 || l.Size() != size || d.Offline() != nil {
			t.Fatalf("leader %v: LEO %d, %d bytes (want 6, %d), offline %v", asLeader, l.LogEndOffset(), l.Size(), size, d.Offline())
		}
		st, err := os.Stat(filepath.Join(l.Dir(), segmentFileName(0, LogFileSuffix)))
		if err != nil || st.Size() != size {
			t.Fatalf("leader %v: .log file is %d bytes, want %d (%v)", asLeader, st.Size(), size, err)
		}
		d.Crash()
		if _, l2 := reopen(t, d, clock, cfg); l2.LogEndOffset() != 6 {
			t.Fatalf("leader %v: LEO %d after restart, want 6", asLeader, l2.LogEndOffset())
		}
	}
}
