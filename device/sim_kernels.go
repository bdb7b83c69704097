package device

import (
	"encoding/binary"
	"math"
	"unsafe"

	"pypto/dtype"
)

// The functional kernels. Tiles are decoded once into float32 (or int64 / int32)
// scratch, computed with tight loops and encoded back, so the per-element dtype switch
// stays out of the inner loops. Every float result is rounded exactly as dtype.Round
// would round the exact value (see docs/device.md for why float32 arithmetic is
// enough for same-dtype f16/bf16/f32 operands).

// littleEndianHost says the host stores a float32 as the device does (little-endian),
// so fp32 tiles decode and encode by block copies.
var littleEndianHost = func() bool {
	x := uint32(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// f16Table widens every binary16 pattern; decoding fp16 is a table lookup.
var f16Table = func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for i := range t {
		t[i] = dtype.Float16ToFloat32(uint16(i))
	}
	return &t
}()

// decodeF32 widens n elements of a float dtype to float32 (exact for f16/bf16/f32).
func decodeF32(d dtype.DType, src []byte, dst []float32) {
	switch d {
	case dtype.Float32:
		if littleEndianHost && len(dst) > 0 {
			// The bytes already are the float32s: one block copy.
			_ = src[4*len(dst)-1] // the bounds check the loop would make
			copy(dst, unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(src))), len(dst)))
			return
		}
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		}
	case dtype.Float16:
		decodeF16(src, dst)
	case dtype.BFloat16:
		for i := range dst {
			dst[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(src[2*i:])) << 16)
		}
	default:
		panic("decodeF32: not a float dtype: " + d.String())
	}
}

// decodeF16 widens binary16 values (2 bytes each, little-endian) to float32: decodeF16Go,
// or a SIMD kernel with the same bits (sim_kernels_simd.go).
var decodeF16 = decodeF16Go

func decodeF16Go(src []byte, dst []float32) {
	for i := range dst {
		dst[i] = f16Table[binary.LittleEndian.Uint16(src[2*i:])]
	}
}

// encodeF16 rounds float32 values to binary16 (nearest even, as dtype.Float32ToFloat16)
// and stores them little-endian: encodeF16Go, or a SIMD kernel with the same bits.
var encodeF16 = encodeF16Go

func encodeF16Go(src []float32, dst []byte) {
	for i, v := range src {
		binary.LittleEndian.PutUint16(dst[2*i:], dtype.Float32ToFloat16(v))
	}
}

// encodeF32 rounds float32 values to a float dtype (nearest even) and stores them.
func encodeF32(d dtype.DType, src []float32, dst []byte) {
	switch d {
	case dtype.Float32:
		if littleEndianHost && len(src) > 0 {
			_ = dst[4*len(src)-1] // the bounds check the loop would make
			copy(unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(dst))), len(src)), src)
			return
		}
		for i, v := range src {
			binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(v))
		}
	case dtype.Float16:
		encodeF16(src, dst)
	case dtype.BFloat16:
		for i, v := range src {
			binary.LittleEndian.PutUint16(dst[2*i:], dtype.Float32ToBFloat16(v))
		}
	default:
		panic("encodeF32: not a float dtype: " + d.String())
	}
}

// f32Values gives the float32 values of f32 bytes to read and write: the bytes
// themselves when the host stores float32 as the device does and they are aligned for
// it (inPlace: writes land in the bytes), else a copy decoded into *scratch that the
// caller stores back with encodeF32. In place, an accumulator tile is neither copied
// in nor out by each matmul.
func f32Values(src []byte, scratch *[]float32) (v []float32, inPlace bool) {
	n := len(src) / 4
	if littleEndianHost && n > 0 && uintptr(unsafe.Pointer(unsafe.SliceData(src)))%4 == 0 {
		return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(src))), n), true
	}
	*scratch = grow(*scratch, n)
	decodeF32(dtype.Float32, src, *scratch)
	return *scratch, false
}

// decodeInt widens n elements of an integer dtype to int64.
func decodeInt(d dtype.DType, src []byte, dst []int64) {
	switch d {
	case dtype.Int8:
		for i := range dst {
			dst[i] = int64(int8(src[i]))
		}
	case dtype.Int32:
		for i := range dst {
			dst[i] = int64(int32(binary.LittleEndian.Uint32(src[4*i:])))
		}
	default:
		panic("decodeInt: not an integer dtype: " + d.String())
	}
}

// encodeInt stores int64 values into an integer dtype, wrapping like a two's
// complement store (dtype.Round's rule for exact integers).
func encodeInt(d dtype.DType, src []int64, dst []byte) {
	switch d {
	case dtype.Int8:
		for i, v := range src {
			dst[i] = byte(int8(v))
		}
	case dtype.Int32:
		for i, v := range src {
			binary.LittleEndian.PutUint32(dst[4*i:], uint32(int32(v)))
		}
	default:
		panic("encodeInt: not an integer dtype: " + d.String())
	}
}

// convert copies n elements from src (dtype sd) to dst (dtype dd), rounding to nearest
// even for floats and truncating toward zero for integers, as dtype.Store does. The
// common paths avoid the per-element dtype switch.
func convert(sd dtype.DType, src []byte, dd dtype.DType, dst []byte, n int) {
	switch {
	case sd == dd:
		copy(dst[:n*dd.Size()], src[:n*sd.Size()])
	case sd.IsFloat() && dd.IsFloat():
		// Widening to float32 is exact, so exactly one rounding (to dd) happens.
		var buf [256]float32
		for i := 0; i < n; i += len(buf) {
			m := min(len(buf), n-i)
			decodeF32(sd, src[i*sd.Size():], buf[:m])
			encodeF32(dd, buf[:m], dst[i*dd.Size():])
		}
	default:
		for i := 0; i < n; i++ {
			dtype.Store(dd, dst, i, dtype.Load(sd, src, i))
		}
	}
}

// matmulF32 is the float cube kernel: matmulF32Go, or a SIMD kernel with the same
// results that sim_kernels_simd.go selects at start-up when the build has
// GOEXPERIMENT=simd and the CPU has the instructions. matmulF32Exact is the kernel
// for operands whose products are exact in float32 (f16, bf16): it may fuse each
// multiply with its add, which rounds the same as adding the exact product.
// simdKernels names the instruction set.
var (
	matmulF32      = matmulF32Go
	matmulF32Exact = matmulF32Go
	simdKernels    = "none"
)

// SIMDKernels names the vector instruction set the functional kernels use ("none":
// the portable Go loops).
func SIMDKernels() string { return simdKernels }

// matmulF32Go computes c[:m, :n] += a[:m, :k] @ b[:k, :n] in float32 over row-major
// matrices with leading dimensions ldc, lda and ldb, adding one product at a time in
// increasing k. Each product of two f16 or bf16 values is exact in float32 (an fp32 x
// fp32 product is rounded to fp32 first); the explicit conversion stops the compiler
// from fusing multiply and add, so results are the same on every architecture.
func matmulF32Go(c, a, b []float32, m, k, n, ldc, lda, ldb int) {
	for i := 0; i < m; i++ {
		crow := c[i*ldc : i*ldc+n]
		arow := a[i*lda : i*lda+k]
		for p, av := range arow {
			brow := b[p*ldb : p*ldb+n]
			for j, bv := range brow {
				crow[j] += float32(av * bv)
			}
		}
	}
}

// matmulInt computes c[:m, :n] += a @ b with int32 wrap-around accumulation (int8 x
// int8), leading dimensions as matmulF32's.
func matmulInt(c []int32, a, b []int64, m, k, n, ldc, lda, ldb int) {
	for i := 0; i < m; i++ {
		crow := c[i*ldc : i*ldc+n]
		arow := a[i*lda : i*lda+k]
		for p, av := range arow {
			brow := b[p*ldb : p*ldb+n]
			x := int32(av)
			for j, bv := range brow {
				crow[j] += x * int32(bv)
			}
		}
	}
}
