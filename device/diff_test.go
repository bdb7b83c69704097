package device

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"codeberg.org/sbinet/npyio/npz"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/dtype"
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
func compareOutputs(t *testing.T, p *isa.Program, want, got [][]byte) {
	t.Helper()
	cube := usesCube(p)
	for i, prm := range p.Params {
		if !cube {
			assert.Equal(t, want[i], got[i], "param %s differs from the reference", prm.Name)
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
	r, err := npz.Open(filepath.Join(goldenDir, name+".npz"))
	require.NoError(t, err)
	defer r.Close()
	params := make([][]byte, len(p.Params))
	for i, prm := range p.Params {
		params[i] = make([]byte, prm.Elems*prm.DType.Size())
		key := prm.Name + ".npy"
		if !hasKey(r.Keys(), key) {
			continue
		}
		vals := readArray(t, r, key)
		require.Len(t, vals, prm.Elems, "input %s", prm.Name)
		params[i] = dtype.Encode(prm.DType, vals)
	}
	return p, params
}

func hasKey(keys []string, k string) bool {
	for _, x := range keys {
		if x == k {
			return true
		}
	}
	return false
}

// readArray reads one array of a .npz as float64s (the generator stores f4, i4, i1).
func readArray(t *testing.T, r *npz.Reader, key string) []float64 {
	var vals []float64
	switch typ := strings.Trim(r.Header(key).Descr.Type, "'\""); typ {
	case "<f4":
		var v []float32
		require.NoError(t, r.Read(key, &v))
		for _, x := range v {
			vals = append(vals, float64(x))
		}
	case "<i4":
		var v []int32
		require.NoError(t, r.Read(key, &v))
		for _, x := range v {
			vals = append(vals, float64(x))
		}
	case "|i1":
		var v []int8
		require.NoError(t, r.Read(key, &v))
		for _, x := range v {
			vals = append(vals, float64(x))
		}
	default:
		t.Fatalf("array %s has unexpected type %s", key, typ)
	}
	return vals
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
