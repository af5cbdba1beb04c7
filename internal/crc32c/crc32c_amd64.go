//go:build !purego

package crc32c

import (
	"hash/crc32"
	"unsafe"

	"golang.org/x/sys/cpu"
)

// foldK holds the fold multipliers crc32c_amd64.s loads, as foldPair pairs
// (low qword for the lane's first 64 bits, high qword for the next 64), by
// how far they move a lane:
//
//	[0:2] 2048 bits: four 512-bit accumulators over the next 256 bytes
//	[2:4] 1536, [4:6] 1024, [6:8] 512: accumulators into the last one, and
//	      one accumulator (four 128-bit ones with PCLMULQDQ) over 64 bytes
//	[8:14] 384, 256, 128: the lanes of a 64-byte block into its last lane
//	       (one 512-bit load, the last lane's pair zero); 128 also moves
//	       one lane over the next 16 bytes
var foldK = func() (k [16]uint64) {
	for i, d := range []int{2048, 1536, 1024, 512, 384, 256, 128} {
		p := foldPair(d)
		k[2*i], k[2*i+1] = p[0], p[1]
	}
	return k
}()

func detect() int {
	x := cpu.X86
	switch {
	case !x.HasPCLMULQDQ || !x.HasSSE41 || !x.HasSSE42:
		return implGeneric
	case x.HasAVX512F && x.HasAVX512VPCLMULQDQ && x.HasAVX2:
		return implAVX512
	}
	return implPCLMUL
}

// update folds p (at least minFold bytes) with the processor's widest
// carry-less multiply. The bytes before a 64-byte boundary and the last
// len%16 go through hash/crc32, so that no vector load spans two cache
// lines (a batch's checksum starts 21 bytes into it).
func update(crc uint32, p []byte) uint32 {
	head := int(-uintptr(unsafe.Pointer(unsafe.SliceData(p))) & 63)
	crc = crc32.Update(crc, table, p[:head])
	p = p[head:]
	n := len(p) &^ 15
	// The folds work on the CRC register; a checksum is its inverse.
	reg := ^crc
	if impl == implAVX512 && n >= 256 {
		reg = foldAVX512(reg, p[:n])
	} else {
		reg = foldPCLMUL(reg, p[:n])
	}
	return crc32.Update(^reg, table, p[n:])
}

// foldAVX512 returns the CRC-32C register after p, starting from crc.
// len(p) must be at least 256 and a multiple of 16. In crc32c_amd64.s.
//
//go:noescape
func foldAVX512(crc uint32, p []byte) uint32

// foldPCLMUL is foldAVX512 with 128-bit registers (SSE only); len(p) must
// be at least 64 and a multiple of 16. In crc32c_amd64.s.
//
//go:noescape
func foldPCLMUL(crc uint32, p []byte) uint32
