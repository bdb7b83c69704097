package device

import (
	"unsafe"

	"pypto/dtype"
	"pypto/isa"
)

// The float32 paths of the vector instructions (sim_kernels_vec.go says why float32
// arithmetic gives the float64 semantics' bits for same-dtype float operands): tiles
// are read as float32 in place (f32) or decoded once into the core's float32 scratch
// (f16, bf16), computed row by row by the kernels, and written back.

// vecOps are the instructions binaryFloat32 computes, by operation.
var vecOps = map[isa.Opcode]vecOp{
	isa.TADD: vecAdd, isa.TADDS: vecAdd, isa.TROWEXPANDADD: vecAdd, isa.TCOLEXPANDADD: vecAdd,
	isa.TSUB: vecSub, isa.TSUBS: vecSub, isa.TROWEXPANDSUB: vecSub, isa.TCOLEXPANDSUB: vecSub,
	isa.TMUL: vecMul, isa.TMULS: vecMul, isa.TROWEXPANDMUL: vecMul, isa.TCOLEXPANDMUL: vecMul,
	isa.TDIV: vecDiv, isa.TDIVS: vecDiv, isa.TROWEXPANDDIV: vecDiv, isa.TCOLEXPANDDIV: vecDiv,
	isa.TMAX: vecMax, isa.TMAXS: vecMax, isa.TROWEXPANDMAX: vecMax, isa.TCOLEXPANDMAX: vecMax,
	isa.TMIN: vecMin, isa.TMINS: vecMin, isa.TROWEXPANDMIN: vecMin, isa.TCOLEXPANDMIN: vecMin,
}

// binaryFloat32 computes a binary instruction in float32 when its operands have dst's
// float dtype (and a scalar is a value of it); false leaves it to the float64 path.
func (c *coreSim) binaryFloat32(in *Instr, dst, a elems, b operand) bool {
	op, ok := vecOps[in.Op]
	d := dst.o.DType
	if !ok || !d.IsFloat() || a.o.DType != d || b.kind != 's' && b.v.o.DType != d ||
		b.kind == 's' && dtype.Round(d, b.scalar) != b.scalar {
		return false
	}
	rows, cols := dst.rows, dst.cols
	if rows == 0 || cols == 0 {
		return true
	}
	out, inPlace := c.floatOut(dst, rows)
	av := c.floatIn(a, dst, rows, 1)
	var bv []float32
	switch b.kind {
	case 't', 'r':
		bv = c.floatIn(b.v, dst, rows, 2)
	case 'c':
		bv = c.floatIn(b.v, dst, 1, 2)
		if inPlace && overlaps(b.v.b, dst.b) { // a row read by every row of dst
			c.vec[2] = append(c.vec[2][:0], bv[:cols]...)
			bv = c.vec[2]
		}
	}
	ld, la := dst.o.Cols, a.o.Cols
	whole := cols == ld && la == ld && (b.kind == 's' || b.kind == 't' && b.v.o.Cols == ld)
	if whole { // one run over every row
		cols, rows = rows*cols, 1
	}
	for r := 0; r < rows; r++ {
		o, x := out[r*ld:r*ld+cols], av[r*la:r*la+cols]
		switch b.kind {
		case 's':
			scalarF32(op, o, x, float32(b.scalar))
		case 'r':
			scalarF32(op, o, x, bv[r*b.v.o.Cols])
		case 'c':
			binaryF32(op, o, x, bv[:cols])
		default:
			lb := b.v.o.Cols
			binaryF32(op, o, x, bv[r*lb:r*lb+cols])
		}
	}
	if !inPlace {
		c.storeFloat(dst, out)
	}
	return true
}

// expFloat32 computes TEXP of a float tile of dst's dtype with the float32 kernel (f32
// results) or exp64 rounded once (f16, bf16); false for other operands.
func (c *coreSim) expFloat32(dst, a elems) bool {
	d := dst.o.DType
	if !d.IsFloat() || a.o.DType != d {
		return false
	}
	rows, cols := dst.rows, dst.cols
	if rows == 0 || cols == 0 {
		return true
	}
	x := c.floatIn(a, dst, rows, 1)
	ld, la := dst.o.Cols, a.o.Cols
	if d != dtype.Float32 {
		for r := 0; r < rows; r++ {
			for col, v := range x[r*la : r*la+cols] {
				dst.set(r, col, exp64(v))
			}
		}
		return true
	}
	out, inPlace := c.floatOut(dst, rows)
	if cols == ld && la == ld {
		cols, rows = rows*cols, 1
	}
	for r := 0; r < rows; r++ {
		expF32(out[r*ld:r*ld+cols], x[r*la:r*la+cols])
	}
	if !inPlace {
		c.storeFloat(dst, out)
	}
	return true
}

// floatOut is where dst's first rows rows are computed: the tile's own bytes for an
// aligned f32 tile (inPlace), else the core's float32 scratch slot 0, which storeFloat
// writes back.
func (c *coreSim) floatOut(dst elems, rows int) ([]float32, bool) {
	n := rows * dst.o.Cols
	if dst.o.DType == dtype.Float32 {
		if v, ok := f32Values(dst.b[:4*n], &c.vec[0]); ok {
			return v, true
		}
	}
	c.vec[0] = grow(c.vec[0], n)
	return c.vec[0], false
}

// floatIn gives the float32 values of v's first rows rows: the bytes themselves for an
// aligned f32 tile that is dst or lies apart from it (an element is read before the
// same element is written), else a copy decoded into scratch slot k.
func (c *coreSim) floatIn(v, dst elems, rows, k int) []float32 {
	n := rows * v.o.Cols
	b := v.b[:n*v.o.DType.Size()]
	if v.o.DType == dtype.Float32 && (!overlaps(b, dst.b) || sameStart(b, dst.b) && v.o.Cols == dst.o.Cols) {
		x, _ := f32Values(b, &c.vec[k]) // in place, or decoded when unaligned
		return x
	}
	c.vec[k] = grow(c.vec[k], n)
	decodeF32(v.o.DType, b, c.vec[k])
	return c.vec[k]
}

// storeFloat encodes dst's valid region from vals (dst's layout, rows of o.Cols).
func (c *coreSim) storeFloat(dst elems, vals []float32) {
	ld, size := dst.o.Cols, dst.o.DType.Size()
	if dst.cols == ld {
		n := dst.rows * ld
		encodeF32(dst.o.DType, vals[:n], dst.b[:n*size])
		return
	}
	for r := 0; r < dst.rows; r++ {
		encodeF32(dst.o.DType, vals[r*ld:r*ld+dst.cols], dst.b[r*ld*size:(r*ld+dst.cols)*size])
	}
}

// overlaps reports whether two byte slices share memory; sameStart whether they begin
// at the same byte.
func overlaps(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	pa, pb := uintptr(unsafe.Pointer(unsafe.SliceData(a))), uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return pa < pb+uintptr(len(b)) && pb < pa+uintptr(len(a))
}

func sameStart(a, b []byte) bool { return unsafe.SliceData(a) == unsafe.SliceData(b) }
