package session

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/dtype"
)

// view is a strided window onto a byte buffer, like a numpy array: offset of element
// [0,...,0] and byte strides.
type view struct {
	shape   []int
	strides []int
	offset  int
}

// at returns the byte offset of a multi-index.
func (v view) at(idx []int) int {
	off := v.offset
	for i, x := range idx {
		off += x * v.strides[i]
	}
	return off
}

func forEachIndex(shape []int, f func(idx []int, flat int)) {
	n := core.Shape(shape).NumElements()
	idx := make([]int, len(shape))
	for flat := 0; flat < n; flat++ {
		rem := flat
		for ax := len(shape) - 1; ax >= 0; ax-- {
			idx[ax] = rem % shape[ax]
			rem /= shape[ax]
		}
		f(idx, flat)
	}
}

func TestFromHostAndCopyOutStrided(t *testing.T) {
	s := New(Reference())
	cases := []struct {
		name string
		v    func(elem int) view
	}{
		{"contiguous 2-d", func(e int) view { return view{[]int{3, 4}, []int{4 * e, e}, 0} }},
		{"transposed", func(e int) view { return view{[]int{4, 3}, []int{e, 4 * e}, 0} }},
		{"sliced rows and columns", func(e int) view { return view{[]int{2, 2}, []int{8 * e, 2 * e}, e} }},
		{"negative strides", func(e int) view { return view{[]int{3, 4}, []int{-4 * e, -e}, 11 * e} }},
		{"broadcast (zero stride)", func(e int) view { return view{[]int{3, 4}, []int{0, e}, 0} }},
		{"1x1", func(e int) view { return view{[]int{1, 1}, []int{99, -7}, 5 * e} }},
		{"scalar", func(e int) view { return view{[]int{}, []int{}, 2 * e} }},
		{"empty", func(e int) view { return view{[]int{0, 3}, []int{3 * e, e}, 0} }},
		{"3-d mixed", func(e int) view { return view{[]int{2, 3, 2}, []int{e, 2 * e, 6 * e}, 0} }},
	}
	for _, dt := range []dtype.DType{dtype.Float32, dtype.Float16, dtype.Int8} {
		e := dt.Size()
		for _, c := range cases {
			t.Run(dt.String()+"/"+c.name, func(t *testing.T) {
				v := c.v(e)
				host := make([]byte, 12*e+16)
				for i := range host {
					host[i] = byte(i*7 + 1)
				}
				x, err := FromHost(dt, v.shape, v.strides, unsafe.Pointer(&host[v.offset]))
				require.NoError(t, err)
				got := x.Data()
				require.Len(t, got, core.Shape(v.shape).NumElements()*e)
				forEachIndex(v.shape, func(idx []int, flat int) {
					assert.Equal(t, host[v.at(idx):v.at(idx)+e], got[flat*e:flat*e+e], "element %v", idx)
				})

				// Copy back out into a fresh buffer through the same view.
				back := make([]byte, len(host))
				if len(got) == 0 {
					require.NoError(t, s.CopyOut(x, nil, v.strides))
					return
				}
				require.NoError(t, s.CopyOut(x, unsafe.Pointer(&back[v.offset]), v.strides))
				forEachIndex(v.shape, func(idx []int, flat int) {
					assert.Equal(t, got[flat*e:flat*e+e], back[v.at(idx):v.at(idx)+e], "element %v", idx)
				})
			})
		}
	}
}

func TestFromHostRejectsBadArguments(t *testing.T) {
	buf := make([]byte, 16)
	_, err := FromHost(dtype.Float32, []int{2, 2}, []int{4}, unsafe.Pointer(&buf[0]))
	assert.Equal(t, core.ValueError, coreErr(t, err).Kind)
	_, err = FromHost(dtype.Float32, []int{2, 2}, nil, nil)
	assert.Equal(t, core.ValueError, coreErr(t, err).Kind)
	_, err = FromHost(dtype.DType(99), []int{2}, nil, unsafe.Pointer(&buf[0]))
	assert.Equal(t, core.DTypeError, coreErr(t, err).Kind)
	x, err := FromHost(dtype.Float32, []int{0}, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, "f32[0]", x.Type().String())
	s := New(Reference())
	assert.Error(t, s.CopyOut(x, nil, []int{4, 4}))
}
