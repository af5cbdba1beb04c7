// Package crc32c computes CRC-32C (Castagnoli), the checksum of Kafka's
// record batches and of the quorum WAL's records. Checksum and Update give
// exactly what hash/crc32 gives with the Castagnoli table.
//
// The standard library runs SSE 4.2's CRC32 instruction for this
// polynomial (its carry-less-multiply path is for IEEE only). On amd64 this
// package folds the input with carry-less multiplication instead, as Java's
// CRC32C intrinsic that Kafka's Crc32C uses does: four 512-bit lanes with
// VPCLMULQDQ where the processor has AVX-512, four 128-bit lanes with
// PCLMULQDQ otherwise, and the folded 16 bytes reduced by the CRC32
// instruction. Short inputs, other architectures and builds with the
// purego tag use hash/crc32.
package crc32c

import "hash/crc32"

// table is the standard library's Castagnoli table, for short inputs, the
// bytes around the folded part and processors that cannot fold.
var table = crc32.MakeTable(crc32.Castagnoli)

// poly is the Castagnoli polynomial 0x1EDC6F41 bit-reflected: bit i is the
// coefficient of x^(31-i), the order in which a CRC register holds it.
const poly = 0x82F63B78

// minFold is the shortest input folded: below it setting up the vector
// registers and the unaligned head cost more than hash/crc32's loop saves
// (measured: 2–4 ns slower at 256–300 bytes, even at ~512, 40 % faster at 1 KiB).
const minFold = 512

// Checksum returns the CRC-32C of p.
func Checksum(p []byte) uint32 { return Update(0, p) }

// Update returns crc updated with p, as crc32.Update(crc, Castagnoli
// table, p) does: crc is a checksum (inverted register), not a register.
func Update(crc uint32, p []byte) uint32 {
	if len(p) < minFold || impl == implGeneric {
		return crc32.Update(crc, table, p)
	}
	return update(crc, p)
}

// The implementations Update chooses from; impl is the one in use, set
// from the processor's features (tests set it to compare them).
const (
	implGeneric = iota // hash/crc32
	implPCLMUL         // 128-bit folding with PCLMULQDQ
	implAVX512         // 512-bit folding with VPCLMULQDQ
)

var impl = detect()

// xnModP returns x^n mod P, bit-reflected like poly (bit 31 is x^0).
// Multiplying by x moves every coefficient one bit down; an x^32 that falls
// out of bit 0 is replaced by its remainder, P's lower terms.
func xnModP(n int) uint32 {
	r := uint32(1) << 31
	for range n {
		if r&1 != 0 {
			r = r>>1 ^ poly
		} else {
			r >>= 1
		}
	}
	return r
}

// foldPair returns the two multipliers that move a 128-bit lane d bits
// further along the input. A lane holds the input's first 64 bits in its
// low half (H, worth H·x^64 where it stands) and the next 64 in its high
// half (L). Moved d bits on, they are worth H·x^(d+64) + L·x^d, and mod P
// each term is the 64-bit half times a 32-bit remainder. The carry-less
// product of two reflected values comes out with its degrees counted from
// bit 95, not from bit 127 where the lane counts them, so each remainder is
// taken 32 powers lower and shifted left one bit (a 33-bit multiplier):
// x^(d+32) for H, paired with PCLMULQDQ's $0x00, and x^(d-32) for L, $0x11.
func foldPair(d int) [2]uint64 {
	return [2]uint64{uint64(xnModP(d+32)) << 1, uint64(xnModP(d-32)) << 1}
}
