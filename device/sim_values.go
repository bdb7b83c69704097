package device

import (
	"encoding/binary"
	"fmt"
	"math"

	"pypto/dtype"
	"pypto/isa"
)

// Element access for the vector, layout and other kernels. Tiles hold their logical
// elements in row-major order whatever their declared layout: instructions see
// logical elements (r, c) in every layout, so the layout changes addresses on the
// hardware but no value, and the simulator keeps one order. (Only TRESHAPE looks at
// bytes, and the ISA requires ND tiles for it.)
//
// Values are computed in float64 and rounded once to the destination's dtype the way
// dtype.Store rounds (the ISA's convention, and the reference interpreter's; float64
// straight to f16 / bf16, never through a float32 rounding), or in
// int64 for integer dtypes and wrapped to the dtype's width, as the hardware's integer
// units do.

// elems is a tile operand: its bytes and valid region, and after snapshot its values
// decoded once (the kernels read inputs from those).
type elems struct {
	o          Operand
	b          []byte
	rows, cols int       // the valid region
	f          []float64 // decoded values (exact for every dtype), or nil
}

// at decodes element (r, c).
func (v elems) at(r, c int) float64 {
	if v.f != nil {
		return v.f[r*v.o.Cols+c]
	}
	return dtype.Load(v.o.DType, v.b, r*v.o.Cols+c)
}

// atInt decodes element (r, c) of an integer or bool tile.
func (v elems) atInt(r, c int) int64 {
	i := r*v.o.Cols + c
	if v.f != nil {
		return int64(v.f[i]) // integers are exact in float64
	}
	switch v.o.DType {
	case dtype.Int8:
		return int64(int8(v.b[i]))
	case dtype.Int32:
		return int64(int32(binary.LittleEndian.Uint32(v.b[4*i:])))
	}
	return int64(dtype.Load(v.o.DType, v.b, i))
}

// set rounds x once to the tile's dtype as dtype.Store does and writes element (r, c).
func (v elems) set(r, c int, x float64) {
	i := r*v.o.Cols + c
	switch v.o.DType {
	case dtype.Float32:
		binary.LittleEndian.PutUint32(v.b[4*i:], math.Float32bits(float32(x)))
	case dtype.Float16:
		binary.LittleEndian.PutUint16(v.b[2*i:], dtype.Float64ToFloat16(x))
	case dtype.BFloat16:
		binary.LittleEndian.PutUint16(v.b[2*i:], dtype.Float64ToBFloat16(x))
	default:
		dtype.Store(v.o.DType, v.b, i, x)
	}
}

// setInt writes an exact integer result wrapped to the tile's width (bool: x != 0).
func (v elems) setInt(r, c int, x int64) {
	i := r*v.o.Cols + c
	switch v.o.DType {
	case dtype.Int8:
		v.b[i] = byte(int8(x))
	case dtype.Int32:
		binary.LittleEndian.PutUint32(v.b[4*i:], uint32(int32(x)))
	case dtype.Bool:
		v.b[i] = 0
		if x != 0 {
			v.b[i] = 1
		}
	default:
		v.set(r, c, float64(x))
	}
}

// setRow rounds and writes xs to row r from column 0, as set does element by element.
func (v elems) setRow(r int, xs []float64) {
	i := r * v.o.Cols
	switch v.o.DType {
	case dtype.Float32:
		b := v.b[4*i : 4*(i+len(xs))]
		for j, x := range xs {
			binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(float32(x)))
		}
	case dtype.Float16:
		b := v.b[2*i : 2*(i+len(xs))]
		for j, x := range xs {
			binary.LittleEndian.PutUint16(b[2*j:], dtype.Float64ToFloat16(x))
		}
	default:
		for j, x := range xs {
			v.set(r, j, x)
		}
	}
}

// bits is the width of an integer dtype.
func (v elems) bits() uint { return uint(8 * v.o.DType.Size()) }

// tileView returns the bytes and valid region of a tile operand.
func (c *coreSim) tileView(o Operand) (elems, error) {
	b, err := c.tile(o)
	if err != nil {
		return elems{}, err
	}
	if o.ValidRows < 0 || o.ValidRows > o.Rows || o.ValidCols < 0 || o.ValidCols > o.Cols {
		return elems{}, fmt.Errorf("valid region %dx%d lies outside the %dx%d tile", o.ValidRows, o.ValidCols, o.Rows, o.Cols)
	}
	return elems{o: o, b: b, rows: o.ValidRows, cols: o.ValidCols}, nil
}

// views returns the views of the instruction's tile operands, in order (nil
// entries for operands that are not tiles), in the core's slots: valid until the next
// instruction.
func (c *coreSim) views(in *Instr) ([]elems, error) {
	if len(in.Args) > maxOperands {
		return nil, fmt.Errorf("%d operands: at most %d", len(in.Args), maxOperands)
	}
	vs := c.operands[:len(in.Args)]
	clear(vs)
	for i, a := range in.Args {
		if a.Kind != isa.KindTile {
			continue
		}
		v, err := c.tileView(a)
		if err != nil {
			return nil, fmt.Errorf("operand %d: %w", i, err)
		}
		vs[i] = v
	}
	return vs, nil
}

// snap decodes a tile's values once into the core's scratch slot k (one per operand
// position, reused from instruction to instruction): kernels read their inputs from
// the copy, so a destination that is also a source is read as it was.
func (c *coreSim) snap(v elems, k int) elems {
	n := v.o.Rows * v.o.Cols
	c.scratch[k] = grow(c.scratch[k], n)
	v.f = c.scratch[k]
	switch v.o.DType {
	case dtype.Float32:
		for i := range v.f {
			v.f[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(v.b[4*i:])))
		}
	case dtype.Float16:
		for i := range v.f {
			v.f[i] = float64(f16Table[binary.LittleEndian.Uint16(v.b[2*i:])])
		}
	default:
		for i := range v.f {
			v.f[i] = dtype.Load(v.o.DType, v.b, i)
		}
	}
	v.b = nil // reads come from f; a snapshot is never written
	return v
}

// within reports whether (r, c) lies in a tile's declared shape.
func (v elems) within(r, c int) bool { return r >= 0 && c >= 0 && r < v.o.Rows && c < v.o.Cols }

// intRange is the range of an integer dtype (bool: 0, 1).
func intRange(d dtype.DType) (lo, hi float64) {
	switch d {
	case dtype.Int8:
		return math.MinInt8, math.MaxInt8
	case dtype.Int32:
		return math.MinInt32, math.MaxInt32
	case dtype.Bool:
		return 0, 1
	}
	return math.Inf(-1), math.Inf(1)
}

// saturate converts v to an integer dtype, rounding to nearest even and clamping to
// its range (NaN becomes 0): the fixpipe's and TQUANT's quantisation.
func saturate(d dtype.DType, v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	lo, hi := intRange(d)
	return math.Max(lo, math.Min(hi, math.RoundToEven(v)))
}

// quantise is a fixpipe conversion: integers saturate, floats round to nearest even.
func quantise(d dtype.DType, v float64) float64 {
	if d.IsInt() {
		return saturate(d, v)
	}
	return dtype.Round(d, v)
}
