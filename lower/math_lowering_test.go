package lower

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/dtype"
)

// The fp32 math bodies (vecbody_special.go) on every chip preset through the ISA's
// semantics, against the reference interpreter: within their documented fp32 ulps
// (8 at most; logaddexp's cancellation near 0 needs an absolute term), one ulp of
// float16 results.
// tests/tensor_level/test_ops_math.py checks the same lowerings against numpy, special values included.
func TestMathLoweringsOnISA(t *testing.T) {
	f := func(dt dtype.DType, s ...int) core.TensorType { return core.TensorType{DType: dt, Shape: s} }
	ulp := 1.0 / (1 << 23)
	for _, name := range []string{"erfc", "exp2", "expm1", "log1p", "log2", "log10", "trunc", "sign", "isinf", "isposinf", "isneginf"} {
		for _, in := range []core.TensorType{f(dtype.Float16, 17, 33), f(dtype.Float32, 3, 300), f(dtype.Int32, 5, 9)} {
			if name == "sign" || name == "trunc" || name == "isinf" {
				in.DType = dtype.Int8 // integers too
			}
			t.Run(fmt.Sprintf("%s/%s", name, in), func(t *testing.T) {
				bl := core.NewBuilder("u")
				y, err := bl.Op(name, []core.Value{bl.Param("x", in)}, nil, core.Location{})
				require.NoError(t, err)
				bl.Output(y)
				rel := 8 * ulp
				if in.DType == dtype.Float16 {
					rel = 1.0 / 1024 // the fp32 result rounded once more: one fp16 ulp
				}
				compareOnISA(t, bl.Graph(), rel, 0)
			})
		}
	}
	for _, name := range []string{"logaddexp", "hypot", "atan2"} {
		t.Run(name, func(t *testing.T) {
			bl := core.NewBuilder("b")
			z, err := bl.Op(name, []core.Value{bl.Param("x", f(dtype.Float32, 9, 70)), bl.Param("y", f(dtype.BFloat16, 70))}, nil, core.Location{})
			require.NoError(t, err)
			bl.Output(z)
			compareOnISA(t, bl.Graph(), 3*ulp, 1e-6)
		})
	}
	for _, d := range []int{-2, 3} {
		for _, dt := range []dtype.DType{dtype.Float16, dtype.Int32} {
			t.Run(fmt.Sprintf("round/%d/%s", d, dt), func(t *testing.T) {
				bl := core.NewBuilder("r")
				y, err := bl.Op("round", []core.Value{bl.Param("x", f(dt, 6, 50))}, core.Attrs{"decimals": int64(d)}, core.Location{})
				require.NoError(t, err)
				bl.Output(y)
				compareOnISA(t, bl.Graph(), 0, 0)
			})
		}
	}
}
