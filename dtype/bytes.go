package dtype

import (
	"encoding/binary"
	"math"
)

// Load decodes element i of a little-endian buffer of dtype d.
func Load(d DType, buf []byte, i int) float64 {
	switch d {
	case Float32:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(buf[4*i:])))
	case Float16:
		return float64(Float16ToFloat32(binary.LittleEndian.Uint16(buf[2*i:])))
	case BFloat16:
		return float64(BFloat16ToFloat32(binary.LittleEndian.Uint16(buf[2*i:])))
	case Int8:
		return float64(int8(buf[i]))
	case Int32:
		return float64(int32(binary.LittleEndian.Uint32(buf[4*i:])))
	case Int64:
		return float64(int64(binary.LittleEndian.Uint64(buf[8*i:])))
	case Bool:
		if buf[i] != 0 {
			return 1
		}
		return 0
	}
	panic("dtype.Load: invalid dtype " + d.String())
}

// Store rounds v to d (see Round) and encodes it as element i of buf.
func Store(d DType, buf []byte, i int, v float64) {
	switch d {
	case Float32:
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(float32(v)))
	case Float16:
		binary.LittleEndian.PutUint16(buf[2*i:], Float64ToFloat16(v))
	case BFloat16:
		binary.LittleEndian.PutUint16(buf[2*i:], Float64ToBFloat16(v))
	case Int8:
		buf[i] = byte(int8(toInt64(v)))
	case Int32:
		binary.LittleEndian.PutUint32(buf[4*i:], uint32(int32(toInt64(v))))
	case Int64:
		binary.LittleEndian.PutUint64(buf[8*i:], uint64(toInt64(v)))
	case Bool:
		if v != 0 {
			buf[i] = 1
		} else {
			buf[i] = 0
		}
	default:
		panic("dtype.Store: invalid dtype " + d.String())
	}
}

// Decode converts a whole buffer of n elements to float64 values.
func Decode(d DType, buf []byte, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = Load(d, buf, i)
	}
	return out
}

// Encode rounds and stores values into a new little-endian buffer.
func Encode(d DType, vals []float64) []byte {
	buf := make([]byte, len(vals)*d.Size())
	for i, v := range vals {
		Store(d, buf, i, v)
	}
	return buf
}
