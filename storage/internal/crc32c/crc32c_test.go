package crc32c

import (
	"hash/crc32"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// TestChecksum compares Checksum with hash/crc32 on every length up to
// 4 KiB and on longer inputs, at every alignment the log sees (a batch's
// CRC covers it from byte 21).
func TestChecksum(t *testing.T) {
	if !haveFold {
		t.Log("no AVX-512 VPCLMULQDQ here: only the standard library's path runs")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 70_000)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	check := func(p []byte) {
		t.Helper()
		if got, want := Checksum(p), crc32.Checksum(p, table); got != want {
			t.Fatalf("length %d: %08x, want %08x", len(p), got, want)
		}
	}
	for n := 0; n <= 4096; n++ {
		check(buf[n%64 : n%64+n])
	}
	for _, n := range []int{16 << 10, 16<<10 + 21, 65_000, 70_000 - 63} {
		for off := range 64 {
			if off+n <= len(buf) {
				check(buf[off : off+n])
			}
		}
	}
	// All zeros and all ones: the register's starting value must matter.
	zeros, ones := make([]byte, 4096), make([]byte, 4096)
	for i := range ones {
		ones[i] = 0xff
	}
	check(zeros)
	check(ones)
}

// TestFoldConstants derives fold_amd64.s's constants: K(n) = x^n mod P
// (P = 0x1EDC6F41, the Castagnoli polynomial), bit-reflected, shifted
// left by one; a fold over D bits pairs K(D+32) with K(D-32).
func TestFoldConstants(t *testing.T) {
	k := func(n int) uint64 {
		r := uint32(1)
		for range n {
			carry := r & 0x80000000
			r <<= 1
			if carry != 0 {
				r ^= 0x1EDC6F41
			}
		}
		return uint64(bits.Reverse32(r)) << 1
	}
	for _, c := range []struct {
		d      int
		lo, hi uint64
	}{{2048, 0xdcb17aa4, 0xb9e02b86}, {512, 0x740eef02, 0x9e4addf8}, {128, 0xf20c0dfe, 0x14cd00bd6}} {
		if lo, hi := k(c.d+32), k(c.d-32); lo != c.lo || hi != c.hi {
			t.Errorf("D=%d: %#x %#x, fold_amd64.s has %#x %#x", c.d, lo, hi, c.lo, c.hi)
		}
	}
}

// BenchmarkChecksum compares Checksum with hash/crc32 on a 16 KiB batch
// in the cache, the log's append benchmark's shape.
func BenchmarkChecksum(b *testing.B) {
	p := make([]byte, 16<<10)
	for i := range p {
		p[i] = byte(i * 7)
	}
	b.Run("crc32c", func(b *testing.B) {
		b.SetBytes(int64(len(p)))
		for b.Loop() {
			Checksum(p)
		}
	})
	b.Run("hash-crc32", func(b *testing.B) {
		b.SetBytes(int64(len(p)))
		for b.Loop() {
			crc32.Checksum(p, table)
		}
	})
}
