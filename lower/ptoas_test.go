package lower

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/device"
	"pypto/dtype"
)

// ptoCase is a small program of one kind of kernel.
type ptoCase struct {
	name  string
	build func(b *core.Builder, p func(string, ...int) core.Value, op func(string, core.Attrs, ...core.Value) core.Value)
}

var ptoCases = []ptoCase{
	{"gemm", func(b *core.Builder, p func(string, ...int) core.Value, op func(string, core.Attrs, ...core.Value) core.Value) {
		b.Output(op("matmul", nil, p("a", 256, 512), p("b", 512, 192)))
	}},
	{"softmax", func(b *core.Builder, p func(string, ...int) core.Value, op func(string, core.Attrs, ...core.Value) core.Value) {
		b.Output(op("softmax", nil, p("x", 96, 320)))
	}},
	{"layer_norm", func(b *core.Builder, p func(string, ...int) core.Value, op func(string, core.Attrs, ...core.Value) core.Value) {
		b.Output(op("layer_norm", nil, p("x", 64, 256), p("g", 256), p("b", 256)))
	}},
	{"matmul_bias_relu", func(b *core.Builder, p func(string, ...int) core.Value, op func(string, core.Attrs, ...core.Value) core.Value) {
		b.Output(op("relu", nil, op("add", nil, op("matmul", nil, p("a", 256, 256), p("b", 256, 256)), p("bias", 256))))
	}},
	{"attention", func(b *core.Builder, p func(string, ...int) core.Value, op func(string, core.Attrs, ...core.Value) core.Value) {
		b.Output(op("scaled_dot_product_attention", nil, p("q", 1, 2, 128, 64), p("k", 1, 2, 128, 64), p("v", 1, 2, 128, 64)))
	}},
}

func buildPTOCase(t *testing.T, c ptoCase) *core.Graph {
	b := core.NewBuilder(c.name)
	p := func(n string, s ...int) core.Value {
		return b.Param(n, core.TensorType{DType: dtype.Float16, Shape: core.Shape(s)})
	}
	op := func(n string, a core.Attrs, in ...core.Value) core.Value {
		v, err := b.Op(n, in, a, core.Location{})
		require.NoError(t, err)
		return v
	}
	c.build(b, p, op)
	return b.Graph()
}

func ptoInputs(g *core.Graph, seed uint64) [][]byte {
	rng := rand.New(rand.NewPCG(seed, 7))
	var out [][]byte
	for _, prm := range g.Params {
		typ := g.Type(prm)
		vals := make([]float64, typ.Shape.NumElements())
		for i := range vals {
			vals[i] = rng.NormFloat64()
		}
		out = append(out, dtype.Encode(typ.DType, vals))
	}
	return out
}

func exportReader(ex *PTOExport) func(string) ([]byte, error) {
	return func(n string) ([]byte, error) {
		d, ok := ex.Files[n]
		if !ok {
			return nil, fmt.Errorf("no file %s", n)
		}
		return d, nil
	}
}

// An exported program read back runs to the same output bytes in the same simulated
// cycles, in both forms, with the plain runtime and with every scheduling feature.
func TestPTOExportRoundTripsBytesAndCycles(t *testing.T) {
	chip := presets(t)[1] // a2 (on tiny, the backend may set an event again before its drain waits, which the reader refuses)
	for _, c := range ptoCases {
		for _, rt := range []Runtime{PlainRuntime(), {}} {
			t.Run(fmt.Sprintf("%s/%v", c.name, rt.ConcurrentTasks()), func(t *testing.T) {
				g := buildPTOCase(t, c)
				exe, err := Compile(g, Options{Chip: chip, Verify: true})
				require.NoError(t, err)
				exe.runtime = rt
				inputs := ptoInputs(g, 1)
				want, wst, err := exe.Run(inputs)
				require.NoError(t, err)
				ex, err := exe.ExportPTO(nil)
				require.NoError(t, err)
				for _, form := range []string{"auto", "manual"} {
					pp, err := LoadPTOProgram(nil, ex.Files["manifest.json"], exportReader(ex), form)
					require.NoError(t, err, form)
					got, gst, err := pp.Run(inputs, device.RunOptions{})
					require.NoError(t, err, form)
					require.Len(t, got, len(want))
					for i := range got {
						assert.True(t, bytes.Equal(want[i], got[i]), "%s output %d differs", form, i)
					}
					assert.Equal(t, wst.Cycles, gst.Cycles, form)
				}
			})
		}
	}
}

// The manifest binds every argument of every function to a buffer of the plan, in
// the tasks' order, and the captured tensors given as bound become constants.
func TestPTOManifestDescribesTheProgram(t *testing.T) {
	chip := presets(t)[1]
	g := buildPTOCase(t, ptoCases[3])
	exe, err := Compile(g, Options{Chip: chip})
	require.NoError(t, err)
	bias := bytes.Repeat([]byte{0, 0x3c}, 256) // 1.0 in f16
	ex, err := exe.ExportPTO(map[int][]byte{2: bias})
	require.NoError(t, err)
	var m PTOManifest
	require.NoError(t, json.Unmarshal(ex.Files["manifest.json"], &m))
	assert.Equal(t, PTOManifestFormat, m.Format)
	assert.Equal(t, chip.Name, m.Chip)
	assert.Equal(t, exe.Exec().WorkspaceBytes, m.WorkspaceBytes)
	assert.Len(t, m.Inputs, 2, "the bound bias is a constant, not an input")
	roles := map[string]int{}
	byID := map[int]PTOBuffer{}
	for _, b := range m.Buffers {
		roles[b.Role]++
		byID[b.ID] = b
		if b.Role == "constant" {
			assert.Equal(t, bias, ex.Files[b.Data])
		}
		if b.Role == "workspace" {
			assert.GreaterOrEqual(t, b.Offset, m.GMBytes-m.WorkspaceBytes, "intermediates lie in the workspace")
		}
		if b.Role == "queue" {
			assert.GreaterOrEqual(t, b.Offset, m.GMBytes, "queues are placed after the program's memory")
			assert.LessOrEqual(t, b.Offset+b.Bytes, m.DeviceBytes)
		}
	}
	assert.Equal(t, 1, roles["constant"])
	assert.Equal(t, 1, roles["output"])
	assert.Positive(t, roles["queue"], "the fused epilogue's queues")
	require.Len(t, m.Tasks, len(exe.Exec().Tasks))
	task := m.Tasks[0]
	assert.Equal(t, "mixed", task.Core)
	require.Len(t, task.Functions, 2)
	for _, f := range task.Functions {
		for _, a := range f.Args {
			b, ok := byID[a.Buffer]
			require.True(t, ok, "argument %s binds buffer %d", a.Name, a.Buffer)
			if a.Kind == "gm" {
				assert.Equal(t, b.Offset, a.Offset)
			}
		}
	}
	assert.Contains(t, ex.Files, task.Files["auto"])
	assert.Contains(t, ex.Files, task.Files["manual"])
}

// Edited exports fail where the edit is: a pop from a queue no core pushes deadlocks
// when the program runs, a removed flag pair is a race, both at the file position of
// the instruction.
func TestPTOImportReportsRunTimeFaultsAtTheirLine(t *testing.T) {
	chip := presets(t)[1]
	g := buildPTOCase(t, ptoCases[3])
	exe, err := Compile(g, Options{Chip: chip})
	require.NoError(t, err)
	ex, err := exe.ExportPTO(nil)
	require.NoError(t, err)
	inputs := ptoInputs(g, 2)
	file := "fused_matmul_0.pto"
	src := string(ex.Files[file])
	require.Contains(t, src, `pypto.instr = "tpop %prod, 1"`)

	t.Run("deadlock", func(t *testing.T) {
		edited := copyExport(ex)
		// Vector core 1 pops queue 0 instead of its own queue 1: queue 1's pushes
		// are never popped and the cube waits for a free slot for ever.
		edited.Files[file] = []byte(strings.ReplaceAll(src, `pypto.instr = "tpop %prod, 1"`, `pypto.instr = "tpop %prod, 0"`))
		pp, err := LoadPTOProgram(nil, edited.Files["manifest.json"], exportReader(edited), "auto")
		require.NoError(t, err)
		_, _, err = pp.Run(inputs, device.RunOptions{})
		require.Error(t, err)
		assert.Regexp(t, regexp.MustCompile(`fused_matmul_0\.pto:\d+:\d+: `), err.Error())
	})

	t.Run("race", func(t *testing.T) {
		edited := copyExport(ex)
		man := string(ex.Files["fused_matmul_0.manual.pto"])
		// Drop the first set/wait pair of MTE1 -> M: the cube's matmul then reads an
		// operand whose move nothing orders before it.
		set := "pto.set_flag[<PIPE_MTE1>, <PIPE_M>, <EVENT_ID0>]\n"
		wait := "pto.wait_flag[<PIPE_MTE1>, <PIPE_M>, <EVENT_ID0>]\n"
		require.Contains(t, man, set)
		man = strings.Replace(man, set, "// (removed)\n", 1)
		man = strings.Replace(man, wait, "// (removed)\n", 1)
		edited.Files["fused_matmul_0.manual.pto"] = []byte(man)
		pp, err := LoadPTOProgram(nil, edited.Files["manifest.json"], exportReader(edited), "manual")
		require.NoError(t, err)
		_, _, err = pp.Run(inputs, device.RunOptions{})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "race")
		assert.Regexp(t, regexp.MustCompile(`fused_matmul_0\.manual\.pto:\d+:\d+: `), err.Error())
	})

	t.Run("set never waited", func(t *testing.T) {
		edited := copyExport(ex)
		man := string(ex.Files["fused_matmul_0.manual.pto"])
		wait := "pto.wait_flag[<PIPE_MTE1>, <PIPE_M>, <EVENT_ID0>]\n"
		edited.Files["fused_matmul_0.manual.pto"] = []byte(strings.Replace(man, wait, "// (removed)\n", 1))
		_, err := LoadPTOProgram(nil, edited.Files["manifest.json"], exportReader(edited), "manual")
		require.Error(t, err)
		assert.Regexp(t, regexp.MustCompile(`fused_matmul_0\.manual\.pto:\d+:\d+: `), err.Error())
	})
}

func copyExport(ex *PTOExport) *PTOExport {
	out := &PTOExport{Files: map[string][]byte{}}
	for k, v := range ex.Files {
		out.Files[k] = v
	}
	return out
}

// A dynamic program (its kernels loop over the rows the run's size needs, read from
// GM) exports its sizes as scalar arguments that name their GM source, and reads back
// to the same bytes and cycles for every run size.
func TestPTOExportOfADynamicProgram(t *testing.T) {
	chip := presets(t)[1]
	g, dyn := ffnGraph(t, 200, 96, 160, 80)
	exe, err := Compile(g, Options{Chip: chip, Verify: true, Dynamic: dyn})
	require.NoError(t, err)
	ex, err := exe.ExportPTO(nil)
	require.NoError(t, err)
	var m PTOManifest
	require.NoError(t, json.Unmarshal(ex.Files["manifest.json"], &m))
	scalars := 0
	for _, task := range m.Tasks {
		for _, f := range task.Functions {
			for _, a := range f.Args {
				if a.Kind == "scalar" {
					scalars++
					assert.Equal(t, "index", a.DType)
					assert.Contains(t, m.Inputs, a.Source, "a size is read from an input buffer")
				}
			}
		}
	}
	assert.Positive(t, scalars)
	for _, rows := range []int{1, 77, 200} {
		inputs := ffnInputs(g, rows)
		want, wst, err := exe.Run(inputs)
		require.NoError(t, err)
		for _, form := range []string{"auto", "manual"} {
			pp, err := LoadPTOProgram(nil, ex.Files["manifest.json"], exportReader(ex), form)
			require.NoError(t, err)
			got, gst, err := pp.Run(inputs, device.RunOptions{})
			require.NoError(t, err)
			assert.Equal(t, want, got, "%s rows=%d", form, rows)
			assert.Equal(t, wst.Cycles, gst.Cycles, "%s rows=%d", form, rows)
		}
	}
}
