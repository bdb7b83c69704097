package lower

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/dtype"
)

// exactOps round once, like the reference, so the device must match it bit for bit.
var exactOps = map[string]bool{
	"add": true, "sub": true, "mul": true, "div": true, "maximum": true, "minimum": true, "neg": true, "abs": true,
	"exp": true, "log": true, "sqrt": true, "rsqrt": true, "reciprocal": true, "relu": true, "floor": true, "ceil": true,
	"round": true, "mod": true, "floor_divide": true, "equal": true, "not_equal": true, "less": true, "less_equal": true,
	"greater": true, "greater_equal": true, "logical_and": true, "logical_or": true, "logical_xor": true,
	"logical_not": true, "isnan": true, "isfinite": true, "cast": true, "max": true, "min": true, "argmax": true,
	"argmin": true, "sort": true, "argsort": true,
}

// TestEveryOpAndDTypeOnTheDevice compiles every one- and two-input op with its default
// attributes for every input dtype its type inference accepts, runs it on the tiny
// preset and compares with the reference interpreter: exactly for ops that round once,
// within a relative tolerance for the rest (fp32 accumulation, polynomial evaluation).
// Ops the device cannot run yet must say so with a CompileError naming the op.
func TestEveryOpAndDTypeOnTheDevice(t *testing.T) {
	chip := presets(t)[0]
	ran := 0
	for _, name := range core.OpNames() {
		def, _ := core.LookupOp(name)
		if def.Arity < 1 || def.Arity > 2 || name == "test_unlowered" || name == "text_probe" {
			continue // creation ops and ops needing special inputs are tested on their own
		}
		for _, dt := range dtype.All {
			if dt == dtype.Int64 {
				continue // narrowed to int32 before compiling (core.NarrowInt64; tests/tensor_level/test_int64.py)
			}
			in := []core.TensorType{{DType: dt, Shape: core.Shape{5, 33}}, {DType: dt, Shape: core.Shape{33}}}[:def.Arity]
			bl := core.NewBuilder("sweep")
			var vals []core.Value
			for i, typ := range in {
				vals = append(vals, bl.Param(string(rune('a'+i)), typ))
			}
			v, err := bl.Op(name, vals, nil, core.Location{File: "sweep.py", Line: 1})
			if err != nil {
				continue // the op does not take this dtype (or needs attributes)
			}
			bl.Output(v)
			g := chipGraph(t, bl.Graph())
			exe, err := Compile(g, Options{Chip: chip, Verify: true})
			if err != nil {
				var ce *core.Error
				require.ErrorAs(t, err, &ce, "%s(%s)", name, dt)
				require.Equal(t, core.CompileError, ce.Kind, "%s(%s): %v", name, dt, err)
				require.Contains(t, ce.Message, "cannot run on the device yet", "%s(%s): %v", name, dt, err)
				continue
			}
			rng := rand.New(rand.NewPCG(7, uint64(len(name))))
			var ins []*core.Array
			var raw [][]byte
			for _, typ := range in {
				a := core.NewArray(typ)
				for i := range a.Data {
					v := math.Round((rng.Float64()*6-3)*8) / 8 // eighths in [-3, 3]: exact in every float dtype, ties included
					if !dt.IsFloat() {
						v = float64(rng.IntN(9) - 4)
					}
					a.Data[i] = dtype.Round(dt, v)
				}
				ins, raw = append(ins, a), append(raw, a.Bytes())
			}
			want, err := core.Interpret(g, ins)
			if err != nil {
				continue // a data-dependent reference error (an integer domain error); not a device question
			}
			got, _, err := exe.Run(raw)
			require.NoError(t, err, "%s(%s)", name, dt)
			w := want[0]
			gv := core.ArrayFromBytes(w.Type, got[0])
			for i := range w.Data {
				a, b := gv.Data[i], w.Data[i]
				if math.IsNaN(a) && math.IsNaN(b) || a == b {
					continue
				}
				tol := 0.0
				if !exactOps[name] {
					ulp := map[dtype.DType]float64{dtype.Float32: 0x1p-23, dtype.Float16: 0x1p-10, dtype.BFloat16: 0x1p-7}[w.Type.DType]
					tol = (4*ulp+4e-6)*math.Abs(b) + 1e-5*33
				}
				require.LessOrEqual(t, math.Abs(a-b), tol, "%s(%s) element %d: device %v, reference %v", name, strings.ToLower(dt.String()), i, a, b)
			}
			ran++
		}
	}
	t.Logf("%d op and dtype pairs ran on the device", ran)
	require.Greater(t, ran, 100, "the sweep must reach most ops")
}

// Lowering one op for one dtype must not change how it lowers for another (a body that
// picks instructions by dtype keeps no state).
func TestBoolMaximumDoesNotChangeOtherDTypes(t *testing.T) {
	chip := presets(t)[0]
	for _, dt := range []dtype.DType{dtype.Bool, dtype.Float32, dtype.Bool, dtype.Int32} {
		bl := core.NewBuilder("max")
		a := bl.Param("a", core.TensorType{DType: dt, Shape: core.Shape{4, 40}})
		b := bl.Param("b", core.TensorType{DType: dt, Shape: core.Shape{40}})
		v, err := bl.Op("maximum", []core.Value{a, b}, nil, core.Location{})
		require.NoError(t, err)
		bl.Output(v)
		compileAndCompare(t, chip, bl.Graph(), 0)
	}
}
