package storage

import (
	"encoding/binary"
	"fmt"
	"sort"
)

// Entry sizes of Kafka's index files.
const (
	indexEntrySize     = 8  // int32 relative offset, int32 position
	timeIndexEntrySize = 12 // int64 timestamp, int32 relative offset
)

// IndexEntry is one .index entry: the batch holding RelativeOffset (offset
// minus the segment's base offset) starts at byte Position of the .log file.
type IndexEntry struct {
	RelativeOffset int32
	Position       int32
}

// TimeIndexEntry is one .timeindex entry: Timestamp is the largest
// timestamp seen so far in the segment, first reached at RelativeOffset.
type TimeIndexEntry struct {
	Timestamp      int64
	RelativeOffset int32
}

func (e IndexEntry) appendTo(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(e.RelativeOffset))
	return binary.BigEndian.AppendUint32(b, uint32(e.Position))
}

func (e TimeIndexEntry) appendTo(b []byte) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(e.Timestamp))
	return binary.BigEndian.AppendUint32(b, uint32(e.RelativeOffset))
}

// parseIndex decodes .index bytes, keeping the longest prefix that is sane:
// whole entries with increasing offsets and positions inside the log.
// ok is false if anything had to be dropped.
func parseIndex(b []byte, logSize int64) (entries []IndexEntry, ok bool) {
	ok = len(b)%indexEntrySize == 0
	for i := 0; i+indexEntrySize <= len(b); i += indexEntrySize {
		e := IndexEntry{int32(binary.BigEndian.Uint32(b[i:])), int32(binary.BigEndian.Uint32(b[i+4:]))}
		if e.RelativeOffset < 0 || e.Position < 0 || int64(e.Position) >= logSize ||
			len(entries) > 0 && (e.RelativeOffset <= entries[len(entries)-1].RelativeOffset || e.Position <= entries[len(entries)-1].Position) {
			return entries, false
		}
		entries = append(entries, e)
	}
	return entries, ok
}

// parseTimeIndex decodes .timeindex bytes like parseIndex: timestamps must
// not decrease and offsets must increase.
func parseTimeIndex(b []byte) (entries []TimeIndexEntry, ok bool) {
	ok = len(b)%timeIndexEntrySize == 0
	for i := 0; i+timeIndexEntrySize <= len(b); i += timeIndexEntrySize {
		e := TimeIndexEntry{int64(binary.BigEndian.Uint64(b[i:])), int32(binary.BigEndian.Uint32(b[i+8:]))}
		if e.RelativeOffset < 0 ||
			len(entries) > 0 && (e.Timestamp < entries[len(entries)-1].Timestamp || e.RelativeOffset <= entries[len(entries)-1].RelativeOffset) {
			return entries, false
		}
		entries = append(entries, e)
	}
	return entries, ok
}

// SearchProbe is one comparison of a binary search, recorded so the UI can
// walk a lookup step by step.
type SearchProbe struct {
	Index int   // the entry compared
	Key   int64 // its key (an offset or a timestamp)
	Below bool  // whether the key is at or below the target
}

// floorSearch finds the last i in [0,n) with key(i) <= target (-1 if none)
// by binary search. With probes not nil, each comparison is appended to it
// (the segment explorer's trace); a plain lookup records nothing, so it
// allocates nothing.
func floorSearch(n int, target int64, key func(int) int64, probes *[]SearchProbe) int {
	// sort.Search finds the first entry above the target; the one before it
	// is the floor.
	i := sort.Search(n, func(i int) bool {
		k := key(i)
		if probes != nil {
			*probes = append(*probes, SearchProbe{Index: i, Key: k, Below: k <= target})
		}
		return k > target
	})
	return i - 1
}

// lookupIndex returns the position to start scanning at for an absolute
// offset in a segment with the given base: the largest entry at or below it
// (found, -1 if none), or position 0. probes is as for floorSearch.
func lookupIndex(entries []IndexEntry, base, offset int64, probes *[]SearchProbe) (pos int64, found int) {
	found = floorSearch(len(entries), offset-base, func(i int) int64 { return int64(entries[i].RelativeOffset) }, probes)
	if found < 0 {
		return 0, -1
	}
	return int64(entries[found].Position), found
}

// relativeOffset converts an absolute offset into the int32 an index holds;
// the segment rolls before any offset would overflow it.
func relativeOffset(base, offset int64) int32 {
	rel := offset - base
	if rel < 0 || rel > 1<<31-1 {
		panic(fmt.Sprintf("storage: offset %d does not fit a segment based at %d", offset, base))
	}
	return int32(rel)
}
