package device

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/dtype"
	"pypto/internal/npzvals"
	"pypto/isa"
)

// Differential tests: programs run through the isa package's reference interpreter
// and through Compile + RunTask, and the output bytes compared: exactly, except for
// programs with cube instructions, whose fp32 accumulation the reference does in
// float64 (a tolerance relative to the sum of |products| applies there).

const goldenDir = "../isa/testdata/golden"

// runReference runs p on copies of params with the reference interpreter.
func runReference(t *testing.T, p *isa.Program, params [][]byte) [][]byte {
	t.Helper()
	out := cloneAll(params)
	require.NoError(t, isa.Interpret(p, out))
	return out
}

// runDevice compiles p for chip and runs it as a one-block task on copies of params.
func runDevice(t *testing.T, chip *Chip, p *isa.Program, params [][]byte) ([][]byte, *TaskStats) {
	t.Helper()
	m, err := Compile(chip, p)
	require.NoError(t, err)
	l := layout(params...)
	st, err := RunTask(chip, l.gm, p.Core, []Block{{Prog: m, ParamAddrs: l.addrs}}, RunOptions{})
	require.NoError(t, err, "%s", m)
	out := make([][]byte, len(params))
	for i := range params {
		out[i] = append([]byte(nil), l.bytes(i, len(params[i]))...)
	}
	return out, st
}

func cloneAll(bufs [][]byte) [][]byte {
	out := make([][]byte, len(bufs))
	for i, b := range bufs {
		out[i] = append([]byte(nil), b...)
	}
	return out
}

// usesCube reports whether a program multiplies on the cube.
func usesCube(p *isa.Program) bool {
	for _, in := range p.Body {
		if in.Op.Info().Class == isa.ClassMatrix {
			return true
		}
	}
	return false
}

// compareOutputs checks every param: bit-exact, or for cube programs within a
// relative tolerance of fp32 accumulation.
// maskNaNs replaces every NaN of a float buffer by one pattern: which NaN an operation
// on NaNs returns (sign, payload) is the host's choice and varies with the operand
// order the compiler picks, so outputs compare equal bits or NaN for NaN.
func maskNaNs(d dtype.DType, b []byte) []byte {
	if !d.IsFloat() {
		return b
	}
	out := slices.Clone(b)
	n := len(b) / d.Size()
	for i := range n {
		if v := dtype.Load(d, out, i); v != v {
			dtype.Store(d, out, i, math.NaN())
		}
	}
	return out
}

func compareOutputs(t *testing.T, p *isa.Program, want, got [][]byte) {
	t.Helper()
	cube := usesCube(p)
	for i, prm := range p.Params {
		if !cube {
			assert.Equal(t, maskNaNs(prm.DType, want[i]), maskNaNs(prm.DType, got[i]), "param %s differs from the reference", prm.Name)
			continue
		}
		w, g := dtype.Decode(prm.DType, want[i], prm.Elems), dtype.Decode(prm.DType, got[i], prm.Elems)
		// fp32 accumulation errs relative to the size of the terms, not of the sum:
		// the tolerance scales with the largest output.
		scale := 0.0
		for _, x := range w {
			if !math.IsNaN(x) && !math.IsInf(x, 0) {
				scale = max(scale, math.Abs(x))
			}
		}
		rel := 1e-5
		if prm.DType == dtype.Float16 || prm.DType == dtype.BFloat16 {
			rel = 1e-2 // one f16 / bf16 rounding either way
		}
		for j := range w {
			tol := rel * (math.Abs(w[j]) + scale)
			if !(math.Abs(w[j]-g[j]) <= tol || math.IsNaN(w[j]) && math.IsNaN(g[j])) {
				assert.Failf(t, "cube result differs", "param %s element %d: reference %v, device %v", prm.Name, j, w[j], g[j])
				break
			}
		}
	}
}

// goldenInputs reads a golden case's program and the inputs of its .npz (params it
// does not name start zeroed).
func goldenInputs(t *testing.T, name string) (*isa.Program, [][]byte) {
	t.Helper()
	p, err := isa.ParseFile(filepath.Join(goldenDir, name+".pto"))
	require.NoError(t, err)
	arrays, err := npzvals.ReadFile(filepath.Join(goldenDir, name+".npz"))
	require.NoError(t, err)
	params := make([][]byte, len(p.Params))
	for i, prm := range p.Params {
		params[i] = make([]byte, prm.Elems*prm.DType.Size())
		if vals, ok := arrays[prm.Name]; ok {
			require.Len(t, vals, prm.Elems, "input %s", prm.Name)
			params[i] = dtype.Encode(prm.DType, vals)
		}
	}
	return p, params
}

// deviceCannot lists golden cases the device rejects, with why: the presets are the
// split A2/A3 architecture, whose cube cores have no UB.
var deviceCannot = map[string]string{
	"tmov_fp": "tmov.fp moves Acc -> Vec inside a cube core; the a2's cube cores have no UB",
}

// TestDifferentialGolden runs every golden case of the isa package (every opcode with
// a value effect, across dtypes and modes) on both sides.
func TestDifferentialGolden(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(goldenDir, "CASES"))
	require.NoError(t, err)
	chip := preset(t, "a2")
	for _, name := range strings.Fields(string(data)) {
		t.Run(name, func(t *testing.T) {
			p, params := goldenInputs(t, name)
			if why, ok := deviceCannot[name]; ok {
				_, err := Compile(chip, p)
				require.Error(t, err, "expected the device to refuse it: %s", why)
				return
			}
			want := runReference(t, p, params)
			got, _ := runDevice(t, chip, p, params)
			compareOutputs(t, p, want, got)
		})
	}
}

// specialValues are the float inputs where implementations tend to differ.
var specialValues = []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), 1, -1, 0.5,
	65504, -65504, 6.1e-5, 5.96e-8, 3.4e38, 1.18e-38, 1e-45, 0.1, 2.5, -2.5, 3.5}

// randomInputs fills every param with random values of its dtype: floats mixing
// ordinary numbers and special values (unless the program multiplies on the cube,
// where cancellation would swamp the tolerance), integers small enough that products
// and shifts stay exact in float64 (see "Known difference" in docs/device.md).
func randomInputs(p *isa.Program, seed uint64) [][]byte {
	rng := rand.New(rand.NewPCG(seed, 11))
	cube := usesCube(p)
	intRange := 1 << 16
	for _, in := range p.Body {
		if in.Op == isa.TROWPROD || in.Op == isa.TCOLPROD {
			intRange = 5 // products of a row or column stay exact
		}
	}
	out := make([][]byte, len(p.Params))
	for i, prm := range p.Params {
		vals := make([]float64, prm.Elems)
		for j := range vals {
			switch {
			case prm.DType.IsFloat() && !cube && rng.IntN(4) == 0:
				vals[j] = specialValues[rng.IntN(len(specialValues))]
			case prm.DType.IsFloat():
				vals[j] = (rng.Float64()*2 - 1) * math.Pow(2, float64(rng.IntN(12)-4))
			case prm.DType == dtype.Int8:
				vals[j] = float64(rng.IntN(min(256, intRange)) - min(256, intRange)/2)
			default:
				vals[j] = float64(rng.IntN(intRange) - intRange/2)
			}
			vals[j] = dtype.Round(prm.DType, vals[j])
		}
		out[i] = dtype.Encode(prm.DType, vals)
	}
	return out
}

// TestDifferentialGoldenRandomInputs runs the golden programs on random inputs rich in
// special values: both sides fail (an index out of range, an integer division by
// zero) or both succeed with the same bytes.
func TestDifferentialGoldenRandomInputs(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(goldenDir, "CASES"))
	require.NoError(t, err)
	chip := preset(t, "a2")
	for _, name := range strings.Fields(string(data)) {
		if _, ok := deviceCannot[name]; ok {
			continue
		}
		t.Run(name, func(t *testing.T) {
			p, _ := goldenInputs(t, name)
			m, err := Compile(chip, p)
			require.NoError(t, err)
			for seed := range uint64(3) {
				params := randomInputs(p, seed)
				want := cloneAll(params)
				refErr := isa.Interpret(p, want)
				l := layout(params...)
				_, devErr := RunTask(chip, l.gm, p.Core, []Block{{Prog: m, ParamAddrs: l.addrs}}, RunOptions{})
				if refErr != nil {
					assert.Error(t, devErr, "seed %d: the reference fails (%v), the device does not", seed, refErr)
					continue
				}
				require.NoError(t, devErr, "seed %d", seed)
				got := make([][]byte, len(params))
				for i := range params {
					got[i] = l.bytes(i, len(params[i]))
				}
				compareOutputs(t, p, want, got)
			}
		})
	}
}
