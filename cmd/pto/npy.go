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
	"pypto/internal/atomicfile"
	"pypto/internal/checked"
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
	a, err := decodeNPY(data)
	if err != nil {
		return array{}, fmt.Errorf("%s: %w", path, err)
	}
	return a, nil
}

// decodeNPY decodes the bytes of a .npy file. Sizes come from the header, which may
// say anything: nothing is allocated before the data is known to be in the file.
func decodeNPY(data []byte) (array, error) {
	if err := checkNPYHeaderLength(data); err != nil {
		return array{}, err
	}
	br := bytes.NewReader(data)
	r, err := parseNPYHeader(br)
	if err != nil {
		return array{}, err
	}
	h := r.Header.Descr
	if h.Fortran {
		return array{}, fmt.Errorf("Fortran-order arrays are not supported (save with np.ascontiguousarray)")
	}
	n, ok := checked.Product(h.Shape)
	if !ok {
		return array{}, fmt.Errorf("shape %v has a negative size or more elements than a 64-bit count holds", h.Shape)
	}
	typ := strings.Trim(h.Type, `'"`)
	decode, size, err := npyDecoder(typ)
	if err != nil {
		return array{}, err
	}
	body := data[len(data)-br.Len():]
	// The data must be in the file, so what is allocated below is bounded by its size.
	if need, ok := checked.Mul(n, size); !ok || len(body) < need {
		return array{}, fmt.Errorf("%d data bytes for %d elements of %s (shape %v)", len(body), n, typ, h.Shape)
	}
	if err := checked.Host(n*8, func() string { return fmt.Sprintf("the %d values of shape %v", n, h.Shape) }); err != nil {
		return array{}, err
	}
	vals := make([]float64, n)
	for i := range vals {
		vals[i] = decode(body[i*size:])
	}
	return array{shape: h.Shape, values: vals}, nil
}

// checkNPYHeaderLength checks that the header the file announces is in the file:
// npyio allocates the announced length (up to 4 GiB in a version 2 file) first.
func checkNPYHeaderLength(data []byte) error {
	const magic = "\x93NUMPY"
	if len(data) < 10 || string(data[:6]) != magic {
		return fmt.Errorf("not a .npy file (no \\x93NUMPY magic)")
	}
	n, start := int(binary.LittleEndian.Uint16(data[8:10])), 10
	if data[6] >= 2 {
		if len(data) < 12 {
			return fmt.Errorf("truncated .npy header")
		}
		n, start = int(binary.LittleEndian.Uint32(data[8:12])), 12
	}
	if len(data)-start < n {
		return fmt.Errorf("the .npy header announces %d bytes, the file has %d after it", n, len(data)-start)
	}
	return nil
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
	if n, ok := checked.Product(shape); !ok || n != len(values) {
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
	return atomicfile.WriteFile(path, b.Bytes())
}
