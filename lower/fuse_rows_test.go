package lower

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/device"
	"pypto/dtype"
)

// rowGraph builds a graph of one composite op (softmax, layer_norm, ...) over x of
// the given shape, with the extra params it takes (weight, bias of shape [C]).
func rowGraph(t testing.TB, op string, dt dtype.DType, shape core.Shape, extra int, attrs core.Attrs) *core.Graph {
	t.Helper()
	bl := core.NewBuilder(op)
	ins := []core.Value{bl.Param("x", core.TensorType{DType: dt, Shape: shape})}
	for i := 0; i < extra; i++ {
		ins = append(ins, bl.Param(fmt.Sprintf("w%d", i), core.TensorType{DType: dt, Shape: shape[len(shape)-1:]}))
	}
	y, err := bl.Op(op, ins, attrs, core.Location{})
	require.NoError(t, err)
	bl.Output(y)
	return bl.Graph()
}

// handSoftmax is softmax as a user writes it: in the input's dtype, max and sum kept
// as [..., 1], no casts.
func handSoftmax(t *testing.T, dt dtype.DType, shape core.Shape) *core.Graph {
	t.Helper()
	bl := core.NewBuilder("hand_softmax")
	x := bl.Param("x", core.TensorType{DType: dt, Shape: shape})
	op := func(name string, attrs core.Attrs, in ...core.Value) core.Value {
		v, err := bl.Op(name, in, attrs, core.Location{})
		require.NoError(t, err)
		return v
	}
	last := core.Attrs{"axis": []int64{-1}, "keepdims": true}
	e := op("exp", nil, op("sub", nil, x, op("max", last, x)))
	bl.Output(op("div", nil, e, op("sum", last, e)))
	return bl.Graph()
}

// runRandom compiles g with opts and runs it on random inputs in [-scale, scale),
// returning the reference's outputs and the device's.
func runRandom(t *testing.T, g *core.Graph, opts Options, seed uint64, scale float64) (want []*core.Array, got []*core.Array) {
	t.Helper()
	exe, err := Compile(g, opts)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(seed, 7))
	var ins []*core.Array
	var raw [][]byte
	for _, p := range g.Params {
		a := core.NewArray(g.Type(p))
		for i := range a.Data {
			a.Data[i] = dtype.Round(a.Type.DType, (rng.Float64()*2-1)*scale)
			if a.Type.DType == dtype.Bool {
				a.Data[i] = float64(rng.IntN(2))
			}
		}
		ins = append(ins, a)
		raw = append(raw, a.Bytes())
	}
	want, err = core.Interpret(g, ins)
	require.NoError(t, err)
	out, _, err := exe.Run(raw)
	require.NoError(t, err)
	for i, w := range want {
		got = append(got, core.ArrayFromBytes(w.Type, out[i]))
	}
	return want, got
}

// maxError is the largest |got - want| over the elements, NaN where only one is NaN.
func maxError(want, got *core.Array) float64 {
	worst := 0.0
	for j, w := range want.Data {
		d := math.Abs(got.Data[j] - w)
		if math.IsNaN(w) && math.IsNaN(got.Data[j]) {
			d = 0
		}
		if !(d <= worst) {
			worst = d
		}
	}
	return worst
}

// compareFusedRows checks that g fused into one row kernel is as close to the
// reference as g compiled without row fusion (whose reductions accumulate the same
// way in fp32 tile by tile), element by element within one unit in the last place of
// the output, and reports the share of bytes the two programs agree on.
func compareFusedRows(t *testing.T, g *core.Graph, chip *device.Chip, seed uint64, scale float64) float64 {
	t.Helper()
	fusedOpts := Options{Chip: chip, Verify: true}
	plainOpts := Options{Chip: chip, Verify: true, Disabled: map[string]bool{"fuse-rows": true}}
	want, fused := runRandom(t, g, fusedOpts, seed, scale)
	_, plain := runRandom(t, g, plainOpts, seed, scale)
	same, total := 0, 0
	for i, w := range want {
		ulp := map[dtype.DType]float64{dtype.Float32: 0x1p-23, dtype.Float16: 0x1p-10, dtype.BFloat16: 0x1p-7}[w.Type.DType]
		// Fused and unfused programs add a row's terms in different fp32 orders (one
		// row reduction against tiles of it), whose errors scale with the terms, not
		// with the result: one ulp of the largest output on top of the unfused error.
		bound := maxError(w, plain[i]) + ulp*maxAbs(w.Data)
		for j, ref := range w.Data {
			tol := bound + ulp*math.Abs(ref)
			if d := math.Abs(fused[i].Data[j] - ref); !(d <= tol) && !(math.IsNaN(fused[i].Data[j]) && math.IsNaN(ref)) {
				t.Fatalf("output %d element %d: fused %v, reference %v, unfused %v (the unfused program is off by up to %g)",
					i, j, fused[i].Data[j], ref, plain[i].Data[j], bound)
			}
			if fused[i].Data[j] == plain[i].Data[j] || (math.IsNaN(fused[i].Data[j]) && math.IsNaN(plain[i].Data[j])) {
				same++
			}
			total++
		}
	}
	return float64(same) / float64(max(total, 1))
}

func tasksOf(t *testing.T, g *core.Graph, opts Options) []string {
	t.Helper()
	exe, err := Compile(g, opts)
	require.NoError(t, err)
	return taskOps(exe)
}

func chipNamed(t *testing.T, name string) *device.Chip {
	c, err := device.Preset(name)
	require.NoError(t, err)
	return c
}

// Each normalisation is one row kernel, and matches the reference as closely as the
// unfused program does.
func TestRowOpsAreOneKernel(t *testing.T) {
	cases := []struct {
		name string
		g    func(dt dtype.DType, s core.Shape) *core.Graph
	}{
		{"softmax", func(dt dtype.DType, s core.Shape) *core.Graph { return rowGraph(t, "softmax", dt, s, 0, nil) }},
		{"log_softmax", func(dt dtype.DType, s core.Shape) *core.Graph { return rowGraph(t, "log_softmax", dt, s, 0, nil) }},
		{"layer_norm", func(dt dtype.DType, s core.Shape) *core.Graph { return rowGraph(t, "layer_norm", dt, s, 0, nil) }},
		{"layer_norm_affine", func(dt dtype.DType, s core.Shape) *core.Graph { return rowGraph(t, "layer_norm", dt, s, 2, nil) }},
		{"rms_norm", func(dt dtype.DType, s core.Shape) *core.Graph { return rowGraph(t, "rms_norm", dt, s, 1, nil) }},
		{"hand_softmax", func(dt dtype.DType, s core.Shape) *core.Graph { return handSoftmax(t, dt, s) }},
	}
	for _, chip := range []string{"tiny", "a2"} {
		for _, c := range cases {
			for _, dt := range []dtype.DType{dtype.Float16, dtype.Float32} {
				shape := core.Shape{37, 70}
				if chip == "a2" {
					shape = core.Shape{3, 50, 300}
				}
				t.Run(fmt.Sprintf("%s/%s/%s", chip, c.name, dt), func(t *testing.T) {
					g := c.g(dt, shape)
					opts := Options{Chip: chipNamed(t, chip), Verify: true}
					require.Equal(t, []string{"fused_rows"}, tasksOf(t, g, opts))
					same := compareFusedRows(t, g, opts.Chip, 1, 4)
					t.Logf("identical to the unfused program: %.4f", same)
				})
			}
		}
	}
}

// randomRowGraph builds a random chain of row steps over x of a random shape: row
// reductions (keepdims or not, then reshaped back), elementwise steps on whole rows
// with whole-row, per-row, per-column and constant operands, and per-row math. Every
// value reaches the one result, so the graph is one row group.
func randomRowGraph(t *testing.T, rng *rand.Rand, wide bool) *core.Graph {
	t.Helper()
	dt := []dtype.DType{dtype.Float32, dtype.Float16, dtype.BFloat16}[rng.IntN(3)]
	shape := core.Shape{2 + rng.IntN(299)}
	if wide { // longer than a row the tiny chip's UB holds
		shape[0] = 256 * (16 + rng.IntN(32))
	}
	for r := rng.IntN(3); r > 0; r-- {
		shape = append(core.Shape{1 + rng.IntN(9)}, shape...)
	}
	keep := append(shape[:len(shape)-1].Clone(), 1)
	bl := core.NewBuilder("random_rows")
	op := func(name string, attrs core.Attrs, in ...core.Value) core.Value {
		v, err := bl.Op(name, in, attrs, core.Location{})
		require.NoError(t, err)
		return v
	}
	pick := func(vs []core.Value) core.Value { return vs[rng.IntN(len(vs))] }
	full := []core.Value{bl.Param("x", core.TensorType{DType: dt, Shape: shape})}
	var rows []core.Value
	used := map[core.Value]bool{}
	use := func(v core.Value) core.Value { used[v] = true; return v }
	for i, steps := 0, 3+rng.IntN(6); i < steps; i++ {
		step := rng.IntN(6)
		if i == 0 {
			step = 0 // at least one reduction
		}
		switch step {
		case 0:
			red := []string{"sum", "max", "min"}[rng.IntN(3)]
			kd := rng.IntN(2) == 0
			r := op(red, core.Attrs{"axis": []int64{-1}, "keepdims": kd}, use(pick(full)))
			if !kd {
				r = op("reshape", core.Attrs{"shape": int64s(keep)}, r)
			}
			rows = append(rows, r)
		case 1:
			if len(rows) > 0 {
				name := []string{"sub", "div", "mul", "add", "maximum"}[rng.IntN(5)]
				full = append(full, op(name, nil, use(pick(full)), use(pick(rows))))
			}
		case 2:
			name := []string{"neg", "abs", "relu", "tanh", "exp"}[rng.IntN(5)]
			full = append(full, op(name, nil, use(pick(full))))
		case 3:
			name := []string{"add", "sub", "mul"}[rng.IntN(3)]
			full = append(full, op(name, nil, use(pick(full)), use(pick(full))))
		case 4:
			w := bl.Param(fmt.Sprintf("w%d", i), core.TensorType{DType: dt, Shape: shape[len(shape)-1:]})
			full = append(full, op([]string{"mul", "add"}[rng.IntN(2)], nil, use(pick(full)), w))
		case 5:
			if len(rows) > 0 {
				c := op("full", core.Attrs{"value": 0.5, "dtype": dt.LongName(), "shape": []int64{}})
				rows = append(rows, op("rsqrt", nil, op("add", nil, op("abs", nil, use(pick(rows))), c)))
			}
		}
	}
	out := full[len(full)-1]
	for _, v := range append(full[:len(full)-1], rows...) {
		if !used[v] {
			out = op("add", nil, out, v)
		}
	}
	bl.Output(out)
	return bl.Graph()
}

// Random row graphs of random shapes and dtypes are one row kernel as close to the
// reference as their unfused programs; the last seeds draw rows longer than the tiny
// chip's UB, which run in passes over chunks.
func TestRowFusionOnRandomGraphs(t *testing.T) {
	for seed := uint64(0); seed < 52; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 11))
			wide := seed >= 40
			g := randomRowGraph(t, rng, wide)
			chip := chipNamed(t, []string{"tiny", "a2"}[seed%2])
			if wide {
				chip = chipNamed(t, "tiny")
			}
			require.Equal(t, []string{"fused_rows"}, tasksOf(t, g, Options{Chip: chip, Verify: true}), core.Format(g))
			same := compareFusedRows(t, g, chip, seed, 2)
			t.Logf("%s: identical to the unfused program: %.4f", g.Type(g.Params[0]), same)
		})
	}
}

// A row too long for the UB runs in passes over chunks of it, still one kernel; a row
// no chunk divides stays unfused. Both give the reference's values.
func TestWideRowsRunInPasses(t *testing.T) {
	chip := chipNamed(t, "tiny")
	cases := []struct {
		name  string
		g     *core.Graph
		fused bool
	}{
		{"softmax", rowGraph(t, "softmax", dtype.Float16, core.Shape{3, 6000}, 0, nil), true},
		{"log_softmax", rowGraph(t, "log_softmax", dtype.Float32, core.Shape{2, 3, 4096}, 0, nil), true},
		{"layer_norm", rowGraph(t, "layer_norm", dtype.Float16, core.Shape{5, 8192}, 2, nil), true},
		{"rms_norm", rowGraph(t, "rms_norm", dtype.BFloat16, core.Shape{4, 6144}, 1, nil), true},
		{"hand_softmax", handSoftmax(t, dtype.Float16, core.Shape{3, 12288}), true},
		{"softmax_prime_row", rowGraph(t, "softmax", dtype.Float16, core.Shape{3, 6007}, 0, nil), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ops := tasksOf(t, c.g, Options{Chip: chip, Verify: true})
			if c.fused {
				require.Equal(t, []string{"fused_rows"}, ops)
			} else {
				require.NotContains(t, ops, "fused_rows")
			}
			same := compareFusedRows(t, c.g, chip, 4, 4)
			t.Logf("identical to the unfused program: %.4f", same)
		})
	}
}

// Attention's masked softmax is one row kernel: the scale is a 0-d input (a Python
// scalar), the mask [S, S] repeats over the batch and head axes of the scores.
func TestMaskedSoftmaxIsOneKernel(t *testing.T) {
	for _, chip := range []string{"tiny", "a2"} {
		t.Run(chip, func(t *testing.T) {
			bl := core.NewBuilder("attention_probs")
			s := bl.Param("scores", core.TensorType{DType: dtype.Float16, Shape: core.Shape{2, 3, 24, 40}})
			scale := bl.Param("scale", core.TensorType{DType: dtype.Float16, Shape: core.Shape{}})
			mask := bl.Param("mask", core.TensorType{DType: dtype.Bool, Shape: core.Shape{24, 40}})
			op := func(name string, attrs core.Attrs, in ...core.Value) core.Value {
				v, err := bl.Op(name, in, attrs, core.Location{})
				require.NoError(t, err)
				return v
			}
			neg := op("full", core.Attrs{"value": -1e4, "dtype": "float16", "shape": []int64{}})
			bl.Output(op("softmax", core.Attrs{"axis": int64(-1)}, op("where", nil, mask, op("mul", nil, s, scale), neg)))
			g := bl.Graph()
			c := chipNamed(t, chip)
			require.Equal(t, []string{"fused_rows"}, tasksOf(t, g, Options{Chip: c, Verify: true}))
			compareFusedRows(t, g, c, 5, 3)
		})
	}
}

// Results that are one value per row (logsumexp, a sum of squares without keepdims)
// are row kernels too, and edge shapes (no rows, one row, a 1-d input, rows of one
// element) compile and give the reference's values.
func TestRowKernelResultsAndEdgeShapes(t *testing.T) {
	chip := chipNamed(t, "tiny")
	last := func(keep bool) core.Attrs { return core.Attrs{"axis": []int64{-1}, "keepdims": keep} }
	build := func(shape core.Shape, f func(op func(string, core.Attrs, ...core.Value) core.Value, x core.Value) core.Value) *core.Graph {
		bl := core.NewBuilder("rows")
		x := bl.Param("x", core.TensorType{DType: dtype.Float32, Shape: shape})
		op := func(name string, attrs core.Attrs, in ...core.Value) core.Value {
			v, err := bl.Op(name, in, attrs, core.Location{})
			require.NoError(t, err)
			return v
		}
		bl.Output(f(op, x))
		return bl.Graph()
	}
	logsumexp := func(op func(string, core.Attrs, ...core.Value) core.Value, x core.Value) core.Value {
		m := op("max", last(true), x)
		return op("add", nil, m, op("log", nil, op("sum", last(true), op("exp", nil, op("sub", nil, x, m)))))
	}
	sumSquares := func(op func(string, core.Attrs, ...core.Value) core.Value, x core.Value) core.Value {
		return op("sum", last(false), op("mul", nil, x, x))
	}
	softmax := func(op func(string, core.Attrs, ...core.Value) core.Value, x core.Value) core.Value {
		return op("softmax", core.Attrs{"axis": int64(-1)}, x)
	}
	cases := []struct {
		name  string
		shape core.Shape
		f     func(func(string, core.Attrs, ...core.Value) core.Value, core.Value) core.Value
		fused bool
	}{
		{"logsumexp", core.Shape{5, 9, 70}, logsumexp, true},
		{"sum_squares", core.Shape{37, 70}, sumSquares, true},
		{"softmax_no_rows", core.Shape{0, 64}, softmax, false},
		{"softmax_one_row", core.Shape{1, 2}, softmax, true},
		{"softmax_1d", core.Shape{64}, softmax, true},
		{"softmax_rows_of_one", core.Shape{3, 1}, softmax, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := build(c.shape, c.f)
			ops := tasksOf(t, g, Options{Chip: chip, Verify: true})
			if c.fused {
				require.Equal(t, []string{"fused_rows"}, ops)
			} else {
				require.NotContains(t, ops, "fused_rows")
			}
			compareFusedRows(t, g, chip, 2, 3)
		})
	}
}

// A per-row step after a reduction must not overwrite the reduction's value while a
// later pass over the chunks still reads it (here neg(max), made after the first pass,
// while the last pass computes x - max again).
func TestWideRowsKeepPerRowValuesForLaterPasses(t *testing.T) {
	bl := core.NewBuilder("keep")
	x := bl.Param("x", core.TensorType{DType: dtype.Float32, Shape: core.Shape{3, 8192}})
	op := func(name string, attrs core.Attrs, in ...core.Value) core.Value {
		v, err := bl.Op(name, in, attrs, core.Location{})
		require.NoError(t, err)
		return v
	}
	m := op("max", core.Attrs{"axis": []int64{-1}, "keepdims": true}, x)
	d := op("sub", nil, x, m)
	e := op("exp", nil, d)
	s := op("sum", core.Attrs{"axis": []int64{-1}, "keepdims": true}, e)
	bl.Output(op("add", nil, op("add", nil, op("div", nil, e, s), d), op("neg", nil, m)))
	g := bl.Graph()
	chip := chipNamed(t, "tiny")
	require.Equal(t, []string{"fused_rows"}, tasksOf(t, g, Options{Chip: chip, Verify: true}))
	compareFusedRows(t, g, chip, 6, 3)
}

// maxAbs is the largest finite magnitude of xs.
func maxAbs(xs []float64) float64 {
	m := 0.0
	for _, x := range xs {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			m = max(m, math.Abs(x))
		}
	}
	return m
}
