//go:build !(js && wasm)

package events

import (
	"hash/crc32"
	"slices"
	"strconv"

	"tidemark/internal/clip"
)

// Digest returns the short digest TruncatedRecord uses: CRC-32C of the key
// length, key and value, as 8 hex digits (the empty record has one too).
func Digest(key, value []byte) string {
	h := crc32.New(crc32.MakeTable(crc32.Castagnoli)) // made once, by crc32
	h.Write(strconv.AppendInt(nil, int64(len(key)), 10))
	h.Write([]byte{':'})
	h.Write(key)
	h.Write(value)
	s := strconv.FormatUint(uint64(h.Sum32()), 16)
	for len(s) < 8 {
		s = "0" + s
	}
	return s
}

// RecordDigest returns r's Digest: the one it carries when it was cut by
// Shown, else the digest of its key and value.
func RecordDigest(r Record) string {
	if r.Digest != "" {
		return r.Digest
	}
	return Digest([]byte(r.Key), []byte(r.Value))
}

// Shown returns r as events and snapshots carry it (RecordOf): unchanged
// when its key and value are within ShownBytes or it was cut already.
func Shown(r Record) Record {
	if r.Cut() || len(r.Key) <= ShownBytes && len(r.Value) <= ShownBytes {
		return r
	}
	// New strings: a produce's records may share one string (the broker's
	// uiRecords), which a kept substring would keep alive whole.
	return RecordOf(r.Offset, r.LeaderEpoch, []byte(r.Key), []byte(r.Value))
}

// RecordOf returns the Record of a record read from a log: a key or value
// longer than ShownBytes is cut to its beginning at a character boundary
// (ending in …, see clip.Bytes), its whole length goes in KeySize or
// ValueSize and the whole record's Digest in Digest. Only what is kept is
// copied.
func RecordOf(offset int64, epoch int32, key, value []byte) Record {
	r := Record{Offset: offset, LeaderEpoch: epoch}
	if len(key) > ShownBytes || len(value) > ShownBytes {
		r.Digest = Digest(key, value)
	}
	r.Key, r.KeySize = shown(key)
	r.Value, r.ValueSize = shown(value)
	return r
}

// shown is b as text and 0, or cut to ShownBytes and its whole length.
func shown(b []byte) (string, int) {
	if len(b) <= ShownBytes {
		return string(b), 0
	}
	// clip.Bytes looks at the byte after the cut for a character's start.
	return clip.Bytes(string(b[:ShownBytes+1]), ShownBytes), len(b)
}

// ShownRecords returns rs with Shown applied to every record: rs itself
// when none needed cutting, else a new slice (rs may be shared with its
// publisher).
func ShownRecords(rs []Record) []Record {
	for i := range rs {
		if r := Shown(rs[i]); r != rs[i] {
			out := slices.Clone(rs)
			out[i] = r
			for j := i + 1; j < len(out); j++ {
				out[j] = Shown(out[j])
			}
			return out
		}
	}
	return rs
}
