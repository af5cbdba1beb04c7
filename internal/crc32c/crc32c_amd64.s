//go:build !purego

#include "textflag.h"

// Folding (Intel, "Fast CRC Computation for Generic Polynomials Using
// PCLMULQDQ"): the input is cut into 128-bit lanes. A lane moved d bits
// further along the input is, mod P, clmul(low qword, K) xor clmul(high
// qword, K'), with the pair foldPair(d) in ·foldK: a 97-bit value that
// stands where the lane d bits on stands and is xored into it. What is left
// at the end is one lane whose CRC from a zero register is the input's.
// $0x00 multiplies both low qwords, $0x11 both high ones; VPTERNLOGD $0x96
// is a three-way xor.

// func foldAVX512(crc uint32, p []byte) uint32
TEXT ·foldAVX512(SB), NOSPLIT, $0-36
	MOVL crc+0(FP), AX
	MOVQ p_base+8(FP), SI
	MOVQ p_len+16(FP), CX

	// Four 512-bit accumulators take the first 256 bytes; the register is
	// xored into the first 4 (the same as starting from zero with it there).
	VMOVDQU64 (SI), Z0
	VMOVDQU64 64(SI), Z1
	VMOVDQU64 128(SI), Z2
	VMOVDQU64 192(SI), Z3
	VMOVD     AX, X4
	VPXORQ    Z4, Z0, Z0
	ADDQ      $256, SI
	SUBQ      $256, CX

	// Each accumulator moves 256 bytes on, onto the next 256 bytes. The four
	// chains are independent, so the multiplier's latency overlaps.
	VBROADCASTI32X4 ·foldK+0(SB), Z8
	CMPQ            CX, $256
	JB              fourToOne

loop256:
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
	CMPQ       CX, $256
	JAE        loop256

fourToOne:
	// Z0, Z1 and Z2 move 192, 128 and 64 bytes on, onto Z3.
	VBROADCASTI32X4 ·foldK+16(SB), Z8
	VBROADCASTI32X4 ·foldK+32(SB), Z9
	VBROADCASTI32X4 ·foldK+48(SB), Z10
	VPCLMULQDQ      $0x00, Z8, Z0, Z4
	VPCLMULQDQ      $0x11, Z8, Z0, Z5
	VPCLMULQDQ      $0x00, Z9, Z1, Z6
	VPCLMULQDQ      $0x11, Z9, Z1, Z7
	VPCLMULQDQ      $0x00, Z10, Z2, Z11
	VPCLMULQDQ      $0x11, Z10, Z2, Z12
	VPTERNLOGD      $0x96, Z4, Z5, Z3
	VPTERNLOGD      $0x96, Z6, Z7, Z3
	VPTERNLOGD      $0x96, Z11, Z12, Z3
	CMPQ            CX, $64
	JB              lanes

loop64:
	// Z3 moves 64 bytes on, onto the next 64 (Z10 still moves 512 bits).
	VMOVDQU64  (SI), Z12
	VPCLMULQDQ $0x00, Z10, Z3, Z4
	VPCLMULQDQ $0x11, Z10, Z3, Z3
	VPTERNLOGD $0x96, Z12, Z4, Z3
	ADDQ       $64, SI
	SUBQ       $64, CX
	CMPQ       CX, $64
	JAE        loop64

lanes:
	// Z3's lanes 0, 1 and 2 move 48, 32 and 16 bytes on, onto lane 3: one
	// multiply with a pair per lane (lane 3's is zero), lane 3 added, then
	// the four lanes xored together into X0.
	VMOVDQU64     ·foldK+64(SB), Z9
	VPCLMULQDQ    $0x00, Z9, Z3, Z4
	VPCLMULQDQ    $0x11, Z9, Z3, Z5
	VEXTRACTI32X4 $3, Z3, X0
	VPTERNLOGD    $0x96, Z4, Z5, Z0
	VEXTRACTI64X4 $1, Z0, Y1
	VPXOR         Y1, Y0, Y0
	VEXTRACTI128  $1, Y0, X1
	VPXOR         X1, X0, X0

	// X0 moves 16 bytes on, onto the next 16, while there are any.
	VMOVDQU ·foldK+96(SB), X9
	CMPQ    CX, $16
	JB      reduceAVX

loop16:
	VPCLMULQDQ $0x00, X9, X0, X4
	VPCLMULQDQ $0x11, X9, X0, X0
	VPXOR      (SI), X4, X4
	VPXOR      X4, X0, X0
	ADDQ       $16, SI
	SUBQ       $16, CX
	CMPQ       CX, $16
	JAE        loop16

reduceAVX:
	// The CRC register after the last lane's 16 bytes, from zero.
	VMOVQ   X0, BX
	VPEXTRQ $1, X0, DX
	VZEROUPPER
	XORL    AX, AX
	CRC32Q  BX, AX
	CRC32Q  DX, AX
	MOVL    AX, ret+32(FP)
	RET

// func foldPCLMUL(crc uint32, p []byte) uint32
TEXT ·foldPCLMUL(SB), NOSPLIT, $0-36
	MOVL crc+0(FP), AX
	MOVQ p_base+8(FP), SI
	MOVQ p_len+16(FP), CX

	// Four 128-bit accumulators take the first 64 bytes, the register
	// xored into the first 4.
	MOVOU (SI), X0
	MOVOU 16(SI), X1
	MOVOU 32(SI), X2
	MOVOU 48(SI), X3
	MOVL  AX, X4
	PXOR  X4, X0
	ADDQ  $64, SI
	SUBQ  $64, CX

	// Each accumulator moves 64 bytes on, onto the next 64.
	MOVOU ·foldK+48(SB), X8
	CMPQ  CX, $64
	JB    fourToOneSSE

loop64SSE:
	MOVOU     X0, X4
	MOVOU     X1, X5
	MOVOU     X2, X6
	MOVOU     X3, X7
	PCLMULQDQ $0x00, X8, X0
	PCLMULQDQ $0x00, X8, X1
	PCLMULQDQ $0x00, X8, X2
	PCLMULQDQ $0x00, X8, X3
	PCLMULQDQ $0x11, X8, X4
	PCLMULQDQ $0x11, X8, X5
	PCLMULQDQ $0x11, X8, X6
	PCLMULQDQ $0x11, X8, X7
	MOVOU     (SI), X9
	MOVOU     16(SI), X10
	MOVOU     32(SI), X11
	MOVOU     48(SI), X12
	PXOR      X4, X0
	PXOR      X5, X1
	PXOR      X6, X2
	PXOR      X7, X3
	PXOR      X9, X0
	PXOR      X10, X1
	PXOR      X11, X2
	PXOR      X12, X3
	ADDQ      $64, SI
	SUBQ      $64, CX
	CMPQ      CX, $64
	JAE       loop64SSE

fourToOneSSE:
	// X0, X1 and X2 move 48, 32 and 16 bytes on, onto X3.
	MOVOU     ·foldK+64(SB), X8
	MOVOU     ·foldK+80(SB), X9
	MOVOU     ·foldK+96(SB), X10
	MOVOU     X0, X4
	MOVOU     X1, X5
	MOVOU     X2, X6
	PCLMULQDQ $0x00, X8, X0
	PCLMULQDQ $0x11, X8, X4
	PCLMULQDQ $0x00, X9, X1
	PCLMULQDQ $0x11, X9, X5
	PCLMULQDQ $0x00, X10, X2
	PCLMULQDQ $0x11, X10, X6
	PXOR      X0, X3
	PXOR      X4, X3
	PXOR      X1, X3
	PXOR      X5, X3
	PXOR      X2, X3
	PXOR      X6, X3
	CMPQ      CX, $16
	JB        reduceSSE

loop16SSE:
	// X3 moves 16 bytes on, onto the next 16 (X10 moves 128 bits).
	MOVOU     X3, X4
	PCLMULQDQ $0x00, X10, X3
	PCLMULQDQ $0x11, X10, X4
	MOVOU     (SI), X5
	PXOR      X4, X3
	PXOR      X5, X3
	ADDQ      $16, SI
	SUBQ      $16, CX
	CMPQ      CX, $16
	JAE       loop16SSE

reduceSSE:
	// The CRC register after the last lane's 16 bytes, from zero.
	MOVQ   X3, BX
	PEXTRQ $1, X3, DX
	XORL   AX, AX
	CRC32Q BX, AX
	CRC32Q DX, AX
	MOVL   AX, ret+32(FP)
	RET
