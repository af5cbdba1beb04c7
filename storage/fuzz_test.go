package storage

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// FuzzRecover damages a log on disk — cuts files short or flips bytes in
// .log, .index and .timeindex files — then recovers it, and checks that
// recovery always leaves a valid prefix of what was written: every batch
// passes its CRC, offsets run from 0 without gaps, every record is the one
// written at that offset, and the indexes equal indexes rebuilt from scratch.
//
// Each 6 bytes of input are one damage: segment, file and action, then a
// 32-bit position.
func FuzzRecover(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0, 0, 0, 200})                    // flip a byte in the first .log
	f.Add([]byte{1, 0x80, 0, 0, 1, 0})                   // cut the second .log at 256
	f.Add([]byte{2, 1, 0, 0, 0, 3})                      // flip in an .index
	f.Add([]byte{2, 2, 0, 0, 0, 5, 1, 0x82, 0, 0, 0, 7}) // flip a .timeindex, cut another
	f.Add([]byte{3, 0, 0, 0, 0, 12})                     // flip a partition leader epoch byte
	f.Add([]byte{3, 0, 0, 0, 0, 3})                      // flip a base offset byte (outside the CRC)
	f.Fuzz(func(t *testing.T, damage []byte) {
		if len(damage) > 8*6 {
			damage = damage[:8*6]
		}
		cfg := smallConfig()
		clock := newTestClock()
		dir := t.TempDir()
		d, err := OpenLogDir(dir, testOptions(clock, cfg))
		if err != nil {
			t.Fatal(err)
		}
		l, err := d.CreateLog(demoTP, cfg)
		if err != nil {
			t.Fatal(err)
		}
		produce(t, l, 0, 0, 12, 3, 80)
		produce(t, l, 1, 36, 12, 3, 80)
		segs, _ := l.Segments()
		d.Crash()
		// Recover everything: with no recovery point every segment is re-read.
		os.Remove(filepath.Join(dir, RecoveryPointCheckpointFile))
		suffixes := []string{LogFileSuffix, IndexFileSuffix, TimeIndexFileSuffix}
		for ; len(damage) >= 6; damage = damage[6:] {
			s := segs[int(damage[0])%len(segs)]
			path := filepath.Join(l.Dir(), segmentFileName(s.BaseOffset, suffixes[int(damage[1]&0x7f)%3]))
			data, err := os.ReadFile(path)
			if err != nil || len(data) == 0 {
				continue
			}
			pos := int(binary.BigEndian.Uint32(damage[2:]) % uint32(len(data)))
			if damage[1]&0x80 != 0 {
				data = data[:pos]
			} else {
				data[pos] ^= 1 << (damage[0] % 8)
			}
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		d2, err := OpenLogDir(dir, testOptions(clock, cfg))
		if err != nil {
			t.Fatalf("recovery failed: %v", err)
		}
		defer d2.Crash()
		l2, ok := d2.Log(demoTP)
		if !ok {
			t.Fatal("log gone after recovery")
		}
		leo := l2.LogEndOffset()
		if leo < 0 || leo > 72 {
			t.Fatalf("LEO %d outside what was written", leo)
		}
		recs := readAll(t, l2, leo)
		if int64(len(recs)) != leo {
			t.Fatalf("%d records below LEO %d", len(recs), leo)
		}
		for i, r := range recs {
			if r.Offset != int64(i) || !bytes.Equal(r.Value, value(i, 80)) {
				t.Fatalf("offset %d holds %q, not what was written", r.Offset, r.Value)
			}
		}
		checkRebuiltIndexes(t, l2)
		var prev EpochEntry
		for i, e := range l2.Epochs() {
			if e.StartOffset >= leo || i > 0 && (e.Epoch <= prev.Epoch || e.StartOffset <= prev.StartOffset) {
				t.Fatalf("epoch cache %v with LEO %d", l2.Epochs(), leo)
			}
			prev = e
		}
		// Every offset still resolves through the rebuilt indexes.
		for off := int64(0); off < leo; off++ {
			if tr, err := l2.Lookup(off); err != nil || tr.Batch.BaseOffset > off || tr.Batch.LastOffset() < off {
				t.Fatalf("lookup %d after recovery: %+v %v", off, tr, err)
			}
		}
	})
}
