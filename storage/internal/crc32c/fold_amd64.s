#include "textflag.h"

// Folding constants for CRC-32C, as in Intel's "Fast CRC Computation for
// Generic Polynomials Using PCLMULQDQ Instruction": each 16-byte lane
// [lo, hi] of the running remainder moves D bits further along the input
// as clmul(lo, K(D+32)) ^ clmul(hi, K(D-32)), where K(n) is x^n mod P
// bit-reflected and shifted left by one (TestFoldConstants derives them).

// D = 2048: the four accumulators (256 bytes) step over the next 256.
DATA k2048<>+0(SB)/8, $0xdcb17aa4
DATA k2048<>+8(SB)/8, $0xb9e02b86
GLOBL k2048<>(SB), RODATA, $16

// D = 512: one accumulator into the next (64 bytes on).
DATA k512<>+0(SB)/8, $0x740eef02
DATA k512<>+8(SB)/8, $0x9e4addf8
GLOBL k512<>(SB), RODATA, $16

// D = 128: one lane into the next (16 bytes on).
DATA k128<>+0(SB)/8, $0xf20c0dfe
DATA k128<>+8(SB)/8, $0x14cd00bd6
GLOBL k128<>(SB), RODATA, $16

// func fold(crc uint32, p []byte) uint32
TEXT ·fold(SB), NOSPLIT, $0-36
	MOVL crc+0(FP), AX
	MOVQ p_base+8(FP), SI
	MOVQ p_len+16(FP), CX

	// The first 256 bytes, with the CRC register xored into the first 4.
	VMOVDQU64 (SI), Z0
	VMOVDQU64 64(SI), Z1
	VMOVDQU64 128(SI), Z2
	VMOVDQU64 192(SI), Z3
	VPXORQ    Z4, Z4, Z4
	VMOVQ     AX, X4
	VPXORQ    Z4, Z0, Z0
	ADDQ      $256, SI
	SUBQ      $256, CX
	JZ        reduce

	VBROADCASTI32X4 k2048<>(SB), Z8

loop:
	// Four independent chains, so the multiplier's latency overlaps.
	VMOVDQU64  (SI), Z12
	VMOVDQU64  64(SI), Z13
	VMOVDQU64  128(SI), Z14
	VMOVDQU64  192(SI), Z15
	VPCLMULQDQ $0x00, Z8, Z0, Z4
	VPCLMULQDQ $0x11, Z8, Z0, Z0
	VPCLMULQDQ $0x00, Z8, Z1, Z5
	VPCLMULQDQ $0x11, Z8, Z1, Z1
	VPCLMULQDQ $0x00, Z8, Z2, Z6
	VPCLMULQDQ $0x11, Z8, Z2, Z2
	VPCLMULQDQ $0x00, Z8, Z3, Z7
	VPCLMULQDQ $0x11, Z8, Z3, Z3
	VPTERNLOGD $0x96, Z12, Z4, Z0
	VPTERNLOGD $0x96, Z13, Z5, Z1
	VPTERNLOGD $0x96, Z14, Z6, Z2
	VPTERNLOGD $0x96, Z15, Z7, Z3
	ADDQ       $256, SI
	SUBQ       $256, CX
	JNZ        loop

reduce:
	// Accumulator into accumulator: Z0 into Z1, into Z2, into Z3.
	VBROADCASTI32X4 k512<>(SB), Z9
	VPCLMULQDQ      $0x00, Z9, Z0, Z4
	VPCLMULQDQ      $0x11, Z9, Z0, Z0
	VPTERNLOGD      $0x96, Z4, Z0, Z1
	VPCLMULQDQ      $0x00, Z9, Z1, Z4
	VPCLMULQDQ      $0x11, Z9, Z1, Z1
	VPTERNLOGD      $0x96, Z4, Z1, Z2
	VPCLMULQDQ      $0x00, Z9, Z2, Z4
	VPCLMULQDQ      $0x11, Z9, Z2, Z2
	VPTERNLOGD      $0x96, Z4, Z2, Z3

	// Lane into lane: Z3's four 16-byte lanes down to X0.
	VEXTRACTI32X4 $1, Z3, X1
	VEXTRACTI32X4 $2, Z3, X2
	VEXTRACTI32X4 $3, Z3, X5
	VMOVDQU       k128<>(SB), X9
	VPCLMULQDQ    $0x00, X9, X3, X4
	VPCLMULQDQ    $0x11, X9, X3, X0
	VPXOR         X4, X0, X0
	VPXOR         X1, X0, X0
	VPCLMULQDQ    $0x00, X9, X0, X4
	VPCLMULQDQ    $0x11, X9, X0, X0
	VPXOR         X4, X0, X0
	VPXOR         X2, X0, X0
	VPCLMULQDQ    $0x00, X9, X0, X4
	VPCLMULQDQ    $0x11, X9, X0, X0
	VPXOR         X4, X0, X0
	VPXOR         X5, X0, X0

	// The remainder's CRC register from 0 is the input's.
	VMOVQ   X0, BX
	VPEXTRQ $1, X0, DX
	VZEROUPPER
	XORL    AX, AX
	CRC32Q  BX, AX
	CRC32Q  DX, AX
	MOVL    AX, ret+32(FP)
	RET
