package lower

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/dtype"
)

// Every elementwise lowering, checked through the ISA's reference semantics against the
// reference interpreter: each is exact (one rounding, as in the reference), so the
// tolerance is zero.
func TestElementwiseLoweringsOnISA(t *testing.T) {
	f := func(dt dtype.DType, s ...int) core.TensorType { return core.TensorType{DType: dt, Shape: s} }
	unary := []string{"neg", "abs", "exp", "sqrt", "rsqrt", "reciprocal", "log", "isnan", "isfinite", "logical_not"}
	binary := []string{"sub", "div", "maximum", "minimum", "logical_and", "logical_or", "logical_xor",
		"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"}
	for _, name := range unary {
		for _, in := range []core.TensorType{f(dtype.Float16, 17, 33), f(dtype.Float32, 3, 300)} {
			t.Run(fmt.Sprintf("%s/%s", name, in), func(t *testing.T) {
				bl := core.NewBuilder("u")
				x := bl.Param("x", in)
				y, err := bl.Op(name, []core.Value{x}, nil, core.Location{})
				require.NoError(t, err)
				bl.Output(y)
				compareOnISA(t, bl.Graph(), 0, 0)
			})
		}
	}
	for _, name := range binary {
		for _, pair := range [][2]core.TensorType{{f(dtype.Float16, 17, 33), f(dtype.Float32, 33)}, {f(dtype.BFloat16, 4, 5, 6), f(dtype.BFloat16, 4, 1, 6)}} {
			t.Run(fmt.Sprintf("%s/%s_%s", name, pair[0], pair[1]), func(t *testing.T) {
				bl := core.NewBuilder("b")
				x := bl.Param("x", pair[0])
				y := bl.Param("y", pair[1])
				z, err := bl.Op(name, []core.Value{x, y}, nil, core.Location{})
				require.NoError(t, err)
				bl.Output(z)
				compareOnISA(t, bl.Graph(), 0, 0)
			})
		}
	}
	t.Run("where", func(t *testing.T) {
		bl := core.NewBuilder("w")
		c := bl.Param("c", f(dtype.Bool, 9, 40))
		x := bl.Param("x", f(dtype.Float16, 9, 40))
		y := bl.Param("y", f(dtype.Float32, 40))
		z, err := bl.Op("where", []core.Value{c, x, y}, nil, core.Location{})
		require.NoError(t, err)
		bl.Output(z)
		compareOnISA(t, bl.Graph(), 0, 0)
	})
}
