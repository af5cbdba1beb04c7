package crc32c

import "golang.org/x/sys/cpu"

// foldBlock is what one step of fold consumes; len(p) must be a multiple.
const foldBlock = 256

// haveFold reports whether this processor runs fold: 512-bit carry-less
// multiplication (AVX-512F, VPCLMULQDQ) for the folding, SSE 4.2's CRC32
// instruction and PCLMULQDQ for the last 16 bytes.
var haveFold = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VPCLMULQDQ && cpu.X86.HasPCLMULQDQ &&
	cpu.X86.HasSSE42 && cpu.X86.HasAVX

// fold returns the CRC-32C register (not inverted) after p, starting from
// crc. len(p) must be a positive multiple of foldBlock. It is in
// fold_amd64.s.
//
//go:noescape
func fold(crc uint32, p []byte) uint32
