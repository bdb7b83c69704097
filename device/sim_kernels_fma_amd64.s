//go:build goexperiment.simd

#include "textflag.h"

// func fma4x64(c, a, b *float32, k, ldc, lda, ldb int)
//
// c[0:4, 0:64] += a[0:4, 0:k] @ b[0:k, 0:64] (leading dimensions in elements, k >= 1).
// The sixteen accumulators (Z0-Z15) stay in registers while k advances: per k, four
// vectors of b (Z16-Z19) and four broadcasts of a (Z20-Z23) feed sixteen fused
// multiply-adds, each adding one product to its accumulator.
TEXT ·fma4x64(SB), NOSPLIT, $0-56
	MOVQ c+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ k+24(FP), CX
	MOVQ ldc+32(FP), R8
	MOVQ lda+40(FP), R9
	MOVQ ldb+48(FP), R10
	SHLQ $2, R8
	SHLQ $2, R9
	SHLQ $2, R10

	// Rows of c: DI, R11, R12, R13; rows of a: SI, AX, BX, R9.
	LEAQ (DI)(R8*1), R11
	LEAQ (DI)(R8*2), R12
	LEAQ (R11)(R8*2), R13
	LEAQ (SI)(R9*1), AX
	LEAQ (SI)(R9*2), BX
	LEAQ (AX)(R9*2), R9

	VMOVUPS (DI), Z0
	VMOVUPS 64(DI), Z1
	VMOVUPS 128(DI), Z2
	VMOVUPS 192(DI), Z3
	VMOVUPS (R11), Z4
	VMOVUPS 64(R11), Z5
	VMOVUPS 128(R11), Z6
	VMOVUPS 192(R11), Z7
	VMOVUPS (R12), Z8
	VMOVUPS 64(R12), Z9
	VMOVUPS 128(R12), Z10
	VMOVUPS 192(R12), Z11
	VMOVUPS (R13), Z12
	VMOVUPS 64(R13), Z13
	VMOVUPS 128(R13), Z14
	VMOVUPS 192(R13), Z15

loop:
	VMOVUPS (DX), Z16
	VMOVUPS 64(DX), Z17
	VMOVUPS 128(DX), Z18
	VMOVUPS 192(DX), Z19
	VBROADCASTSS (SI), Z20
	VBROADCASTSS (AX), Z21
	VBROADCASTSS (BX), Z22
	VBROADCASTSS (R9), Z23
	VFMADD231PS Z16, Z20, Z0
	VFMADD231PS Z17, Z20, Z1
	VFMADD231PS Z18, Z20, Z2
	VFMADD231PS Z19, Z20, Z3
	VFMADD231PS Z16, Z21, Z4
	VFMADD231PS Z17, Z21, Z5
	VFMADD231PS Z18, Z21, Z6
	VFMADD231PS Z19, Z21, Z7
	VFMADD231PS Z16, Z22, Z8
	VFMADD231PS Z17, Z22, Z9
	VFMADD231PS Z18, Z22, Z10
	VFMADD231PS Z19, Z22, Z11
	VFMADD231PS Z16, Z23, Z12
	VFMADD231PS Z17, Z23, Z13
	VFMADD231PS Z18, Z23, Z14
	VFMADD231PS Z19, Z23, Z15
	ADDQ $4, SI
	ADDQ $4, AX
	ADDQ $4, BX
	ADDQ $4, R9
	ADDQ R10, DX
	DECQ CX
	JNZ  loop

	VMOVUPS Z0, (DI)
	VMOVUPS Z1, 64(DI)
	VMOVUPS Z2, 128(DI)
	VMOVUPS Z3, 192(DI)
	VMOVUPS Z4, (R11)
	VMOVUPS Z5, 64(R11)
	VMOVUPS Z6, 128(R11)
	VMOVUPS Z7, 192(R11)
	VMOVUPS Z8, (R12)
	VMOVUPS Z9, 64(R12)
	VMOVUPS Z10, 128(R12)
	VMOVUPS Z11, 192(R12)
	VMOVUPS Z12, (R13)
	VMOVUPS Z13, 64(R13)
	VMOVUPS Z14, 128(R13)
	VMOVUPS Z15, 192(R13)
	VZEROUPPER
	RET

// func fma6x16(c, a, b *float32, k, ldc, lda, ldb int)
//
// c[0:6, 0:16] += a[0:6, 0:k] @ b[0:k, 0:16] with AVX2 fused multiply-adds
// (leading dimensions in elements, k >= 1). The twelve accumulators (Y0-Y11) stay in
// registers while k advances: per k, two vectors of b (Y12, Y13) and six broadcasts
// of a (alternating in Y14 and Y15) feed twelve fused multiply-adds, each adding one
// product to its accumulator.
TEXT ·fma6x16(SB), NOSPLIT, $0-56
	MOVQ c+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ k+24(FP), CX
	MOVQ ldc+32(FP), R8
	MOVQ lda+40(FP), R9
	MOVQ ldb+48(FP), R10
	SHLQ $2, R8
	SHLQ $2, R9
	SHLQ $2, R10

	// Rows of c: DI, AX, BX, R12, R13, DI+5*ldc (recomputed at the end); rows of a:
	// SI, SI+lda, SI+2*lda, R11, R11+lda, R11+2*lda.
	LEAQ (DI)(R8*1), AX
	LEAQ (DI)(R8*2), BX
	LEAQ (AX)(R8*2), R12
	LEAQ (BX)(R8*2), R13
	LEAQ (SI)(R9*2), R11
	ADDQ R9, R11

	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS (AX), Y2
	VMOVUPS 32(AX), Y3
	VMOVUPS (BX), Y4
	VMOVUPS 32(BX), Y5
	VMOVUPS (R12), Y6
	VMOVUPS 32(R12), Y7
	VMOVUPS (R13), Y8
	VMOVUPS 32(R13), Y9
	VMOVUPS (R13)(R8*1), Y10
	VMOVUPS 32(R13)(R8*1), Y11

loop6:
	VMOVUPS (DX), Y12
	VMOVUPS 32(DX), Y13
	VBROADCASTSS (SI), Y14
	VFMADD231PS Y12, Y14, Y0
	VFMADD231PS Y13, Y14, Y1
	VBROADCASTSS (SI)(R9*1), Y15
	VFMADD231PS Y12, Y15, Y2
	VFMADD231PS Y13, Y15, Y3
	VBROADCASTSS (SI)(R9*2), Y14
	VFMADD231PS Y12, Y14, Y4
	VFMADD231PS Y13, Y14, Y5
	VBROADCASTSS (R11), Y15
	VFMADD231PS Y12, Y15, Y6
	VFMADD231PS Y13, Y15, Y7
	VBROADCASTSS (R11)(R9*1), Y14
	VFMADD231PS Y12, Y14, Y8
	VFMADD231PS Y13, Y14, Y9
	VBROADCASTSS (R11)(R9*2), Y15
	VFMADD231PS Y12, Y15, Y10
	VFMADD231PS Y13, Y15, Y11
	ADDQ $4, SI
	ADDQ $4, R11
	ADDQ R10, DX
	DECQ CX
	JNZ  loop6

	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, (AX)
	VMOVUPS Y3, 32(AX)
	VMOVUPS Y4, (BX)
	VMOVUPS Y5, 32(BX)
	VMOVUPS Y6, (R12)
	VMOVUPS Y7, 32(R12)
	VMOVUPS Y8, (R13)
	VMOVUPS Y9, 32(R13)
	VMOVUPS Y10, (R13)(R8*1)
	VMOVUPS Y11, 32(R13)(R8*1)
	VZEROUPPER
	RET

// func cvtF32ToF16(dst *uint16, src *float32, n int)
//
// dst[0:n] = src[0:n] rounded to binary16, nearest even (F16C VCVTPS2PH with
// immediate 0), eight values at a time; n is a multiple of 8.
TEXT ·cvtF32ToF16(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	JZ   done

cvt:
	VMOVUPS    (SI), Y0
	VCVTPS2PH  $0, Y0, X1
	VMOVDQU    X1, (DI)
	ADDQ       $32, SI
	ADDQ       $16, DI
	DECQ       CX
	JNZ        cvt

done:
	VZEROUPPER
	RET

// func cpuHasF16C() bool: CPUID leaf 1, ECX bit 29.
TEXT ·cpuHasF16C(SB), NOSPLIT, $0-1
	MOVL $1, AX
	XORL CX, CX
	CPUID
	SHRL $29, CX
	ANDL $1, CX
	MOVB CX, ret+0(FP)
	RET

// func cvtF16ToF32(dst *float32, src *uint16, n int) int
//
// Widens src[0:n] (n a multiple of 8) to float32 eight at a time with VCVTPH2PS
// (exact), stopping before the first group of eight that holds a NaN (F16C quiets a
// signalling NaN, the table keeps it): it returns how many values it widened.
TEXT ·cvtF16ToF32(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	XORQ AX, AX
	MOVL $0x7fff7fff, R8
	VMOVD R8, X2
	VPBROADCASTD X2, X2
	MOVL $0x7c007c00, R8
	VMOVD R8, X3
	VPBROADCASTD X3, X3

group:
	CMPQ AX, CX
	JGE  done
	VMOVDQU  (SI)(AX*2), X0
	VPAND    X2, X0, X1
	VPCMPGTW X3, X1, X1
	VPTEST   X1, X1
	JNZ      done
	VCVTPH2PS X0, Y0
	VMOVUPS  Y0, (DI)(AX*4)
	ADDQ     $8, AX
	JMP      group

done:
	MOVQ AX, ret+24(FP)
	VZEROUPPER
	RET
