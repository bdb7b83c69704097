package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"strings"

	"codeberg.org/sbinet/npyio/npy"

	"pypto/dtype"
)

// array is a .npy file's contents as float64 values in C order.
type array struct {
	shape  []int
	values []float64
}

// readNPY reads a .npy file of any numeric dtype numpy writes for our params: float16,
// float32, float64, int8, int16, int32, int64, uint8, uint16 and bool. npyio parses
// the header; the data is decoded here, since npyio has no float16.
func readNPY(path string) (array, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return array{}, err
	}
	br := bytes.NewReader(data)
	r, err := parseNPYHeader(br)
	if err != nil {
		return array{}, fmt.Errorf("%s: %w", path, err)
	}
	h := r.Header.Descr
	if h.Fortran {
		return array{}, fmt.Errorf("%s: Fortran-order arrays are not supported (save with np.ascontiguousarray)", path)
	}
	n := 1
	for _, d := range h.Shape {
		n *= d
	}
	typ := strings.Trim(h.Type, `'"`)
	decode, size, err := npyDecoder(typ)
	if err != nil {
		return array{}, fmt.Errorf("%s: %w", path, err)
	}
	body := data[len(data)-br.Len():]
	if len(body) < n*size {
		return array{}, fmt.Errorf("%s: %d data bytes for %d elements of %s", path, len(body), n, typ)
	}
	vals := make([]float64, n)
	for i := range vals {
		vals[i] = decode(body[i*size:])
	}
	return array{shape: h.Shape, values: vals}, nil
}

// parseNPYHeader reads the header with npyio, which panics on some malformed
// headers; a panic becomes an error naming the file as not a valid .npy.
func parseNPYHeader(br *bytes.Reader) (r *npy.Reader, err error) {
	defer func() {
		if recover() != nil {
			r, err = nil, fmt.Errorf("malformed .npy header")
		}
	}()
	return npy.NewReader(br)
}

func npyDecoder(typ string) (func([]byte) float64, int, error) {
	le := binary.LittleEndian
	switch typ {
	case "<f2":
		return func(b []byte) float64 { return float64(dtype.Float16ToFloat32(le.Uint16(b))) }, 2, nil
	case "<f4":
		return func(b []byte) float64 { return float64(math.Float32frombits(le.Uint32(b))) }, 4, nil
	case "<f8":
		return func(b []byte) float64 { return math.Float64frombits(le.Uint64(b)) }, 8, nil
	case "|i1":
		return func(b []byte) float64 { return float64(int8(b[0])) }, 1, nil
	case "|u1", "|b1":
		return func(b []byte) float64 { return float64(b[0]) }, 1, nil
	case "<i2":
		return func(b []byte) float64 { return float64(int16(le.Uint16(b))) }, 2, nil
	case "<u2":
		return func(b []byte) float64 { return float64(le.Uint16(b)) }, 2, nil
	case "<i4":
		return func(b []byte) float64 { return float64(int32(le.Uint32(b))) }, 4, nil
	case "<i8":
		return func(b []byte) float64 { return float64(int64(le.Uint64(b))) }, 8, nil
	}
	return nil, 0, fmt.Errorf("unsupported .npy dtype %s (want a little-endian float16/32/64, int8/16/32/64, uint8/16 or bool)", typ)
}

// npyType is the .npy descr a param dtype is written as; bf16 widens to float32.
func npyType(d dtype.DType) (string, dtype.DType) {
	switch d {
	case dtype.Float16:
		return "<f2", d
	case dtype.Int8:
		return "|i1", d
	case dtype.Int32:
		return "<i4", d
	case dtype.Bool:
		return "|b1", d
	}
	return "<f4", dtype.Float32
}

// writeNPY writes values as a version 1.0 .npy file of the param's dtype.
func writeNPY(path string, d dtype.DType, shape []int, values []float64) error {
	n := 1
	for _, s := range shape {
		n *= s
	}
	if n != len(values) {
		return fmt.Errorf("%s: shape %v holds %d elements, the param has %d", path, shape, n, len(values))
	}
	descr, store := npyType(d)
	dims := make([]string, len(shape))
	for i, s := range shape {
		dims[i] = fmt.Sprint(s)
	}
	tuple := strings.Join(dims, ", ")
	if len(shape) == 1 {
		tuple += ","
	}
	header := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, tuple)
	// Magic (6) + version (2) + header length (2) + header, padded with spaces and a
	// newline to a multiple of 64 bytes, as numpy writes it.
	pad := 64 - (10+len(header)+1)%64
	if pad == 64 {
		pad = 0
	}
	header += strings.Repeat(" ", pad) + "\n"
	var b bytes.Buffer
	b.WriteString("\x93NUMPY\x01\x00")
	binary.Write(&b, binary.LittleEndian, uint16(len(header)))
	b.WriteString(header)
	b.Write(dtype.Encode(store, values))
	return os.WriteFile(path, b.Bytes(), 0o644)
}
