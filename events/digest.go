//go:build !(js && wasm)

package events

import (
	"hash/crc32"
	"strconv"
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
