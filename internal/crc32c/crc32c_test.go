package crc32c

import (
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

// impls returns the implementations this processor runs, the generic one
// (the fallback every other architecture uses) first.
func impls() []int {
	out := []int{implGeneric}
	for i := implGeneric + 1; i <= detect(); i++ {
		out = append(out, i)
	}
	return out
}

var implNames = map[int]string{implGeneric: "generic", implPCLMUL: "pclmul", implAVX512: "avx512"}

// forEachImpl runs f with impl set to each implementation in turn.
func forEachImpl(t *testing.T, f func(t *testing.T)) {
	saved := impl
	t.Cleanup(func() { impl = saved })
	for _, i := range impls() {
		impl = i
		t.Run(implNames[i], f)
	}
}

func randomBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// TestImplementations says which paths this machine tests: the assembly is
// only checked where the processor has the instructions.
func TestImplementations(t *testing.T) {
	t.Logf("this processor: %s; tested: %v", implNames[detect()], impls())
}

// TestEveryLengthAndAlignment compares Update with hash/crc32 for every
// length 0..4096 at every alignment 0..63, from a random initial CRC.
func TestEveryLengthAndAlignment(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	buf := randomBytes(rng, 4096+64)
	forEachImpl(t, func(t *testing.T) {
		for n := 0; n <= 4096; n++ {
			for off := range 64 {
				p := buf[off : off+n]
				crc := rng.Uint32()
				if got, want := Update(crc, p), crc32.Update(crc, table, p); got != want {
					t.Fatalf("length %d at alignment %d from %08x: %08x, want %08x", n, off, crc, got, want)
				}
			}
		}
	})
}

// TestLongInputs compares Checksum with hash/crc32 for random lengths up
// to 1 MiB and for inputs that are all zeros or all ones (the starting
// register must count).
func TestLongInputs(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	buf := randomBytes(rng, 1<<20+64)
	zeros, ones := make([]byte, 1<<16), make([]byte, 1<<16)
	for i := range ones {
		ones[i] = 0xff
	}
	forEachImpl(t, func(t *testing.T) {
		for range 200 {
			n, off := rng.IntN(1<<20+1), rng.IntN(64)
			p := buf[off : off+n]
			if got, want := Checksum(p), crc32.Checksum(p, table); got != want {
				t.Fatalf("length %d at alignment %d: %08x, want %08x", n, off, got, want)
			}
		}
		for _, p := range [][]byte{zeros, ones, buf[:1<<20], buf[:16<<10+21]} {
			if got, want := Checksum(p), crc32.Checksum(p, table); got != want {
				t.Fatalf("length %d starting %x: %08x, want %08x", len(p), p[0], got, want)
			}
		}
	})
}

// TestUpdateSplit checks that a checksum taken in pieces, split at random
// points, equals the whole one.
func TestUpdateSplit(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	buf := randomBytes(rng, 256<<10)
	want := crc32.Checksum(buf, table)
	forEachImpl(t, func(t *testing.T) {
		for range 100 {
			var crc uint32
			for p := buf; len(p) > 0; {
				k := min(len(p), rng.IntN(40_000))
				crc = Update(crc, p[:k])
				p = p[k:]
			}
			if crc != want {
				t.Fatalf("in pieces %08x, whole %08x", crc, want)
			}
		}
	})
}

// TestFoldConstants checks the multipliers the assembly loads against an
// independent derivation with hash/crc32: a register from zero that takes a
// message of N bits whose only 1 is the b-th bit ends as x^(N-1-b)·x^32 mod
// P, which is what xnModP(N+31-b) must return.
func TestFoldConstants(t *testing.T) {
	viaCRC := func(n int) uint32 {
		bytes := (n - 31 + 7) / 8
		b := bytes*8 - (n - 31) // which bit of the first byte (LSB first)
		msg := make([]byte, bytes)
		msg[0] = 1 << b
		return ^crc32.Update(^uint32(0), table, msg) // the register, from zero
	}
	for _, d := range []int{128, 256, 384, 512, 1024, 1536, 2048} {
		for _, n := range []int{d - 32, d + 32} {
			if got, want := xnModP(n), viaCRC(n); got != want {
				t.Errorf("x^%d mod P: %08x, hash/crc32 says %08x", n, got, want)
			}
		}
		p := foldPair(d)
		t.Logf("fold %4d bits: %#010x %#010x", d, p[0], p[1])
	}
}

// FuzzUpdate compares Update with hash/crc32 on any input, initial CRC and
// alignment, under every implementation the processor runs.
func FuzzUpdate(f *testing.F) {
	f.Add(uint32(0), uint8(0), make([]byte, 300))
	f.Add(uint32(0xffffffff), uint8(21), make([]byte, 16<<10))
	saved := impl
	f.Cleanup(func() { impl = saved })
	f.Fuzz(func(t *testing.T, crc uint32, off uint8, data []byte) {
		buf := make([]byte, int(off%64)+len(data))
		p := buf[off%64:]
		copy(p, data)
		want := crc32.Update(crc, table, p)
		for _, i := range impls() {
			impl = i
			if got := Update(crc, p); got != want {
				t.Fatalf("%s: length %d at alignment %d from %08x: %08x, want %08x", implNames[i], len(p), off%64, crc, got, want)
			}
		}
	})
}

// BenchmarkChecksum compares Checksum with hash/crc32 on inputs in the CPU
// cache (GB/s is b.SetBytes's MB/s ÷ 1000).
func BenchmarkChecksum(b *testing.B) {
	saved := impl
	b.Cleanup(func() { impl = saved })
	for _, n := range []int{64, 1 << 10, 16 << 10, 1 << 20} {
		p := randomBytes(rand.New(rand.NewPCG(7, 8)), n)
		for _, i := range impls() {
			b.Run(fmt.Sprintf("%s/%d", implNames[i], n), func(b *testing.B) {
				impl = i
				b.SetBytes(int64(n))
				for b.Loop() {
					Checksum(p)
				}
			})
		}
		b.Run(fmt.Sprintf("hash-crc32/%d", n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				crc32.Checksum(p, table)
			}
		})
	}
}
