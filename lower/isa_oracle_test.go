package lower

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/isa"
)

// runOnISA executes a compiled program's PTO programs with the ISA's reference
// semantics (isa.Interpret) instead of the device: it checks the compiler's output
// against the meaning of the instructions alone, whatever the simulator supports.
func runOnISA(t *testing.T, exe *Executable, inputs [][]byte) [][]byte {
	t.Helper()
	eg := exe.Exec()
	tg := eg.Blocks.Tiles
	gm := make([]byte, eg.GMBytes)
	for i, p := range tg.Params {
		copy(gm[eg.Buffers[p].Offset:], inputs[i])
	}
	for _, task := range eg.Tasks {
		for _, prog := range task.Programs {
			params := make([][]byte, len(task.Args))
			for j, a := range task.Args {
				off := eg.Buffers[a].Offset
				params[j] = gm[off : off+tg.Tensors[a].Type.Bytes()]
			}
			require.NoError(t, isa.Interpret(prog, params), "task %s program %s", task.Name, prog.Name)
		}
	}
	var outs [][]byte
	for _, o := range tg.Outputs {
		off := eg.Buffers[o].Offset
		outs = append(outs, append([]byte(nil), gm[off:off+tg.Tensors[o].Type.Bytes()]...))
	}
	return outs
}

// compareOnISA compiles g, runs it through runOnISA on random inputs and compares with
// the reference interpreter within rel*|ref| + abs.
func compareOnISA(t *testing.T, g *core.Graph, rel, abs float64) {
	t.Helper()
	g = chipGraph(t, g)
	for _, chip := range presets(t) {
		exe, err := Compile(g, Options{Chip: chip, Verify: true, StopAfter: "plan-exec"})
		require.NoError(t, err)
		ins, raw := randomInputs(g)
		want, err := core.Interpret(g, ins)
		require.NoError(t, err)
		got := runOnISA(t, exe, raw)
		for i, w := range want {
			gv := core.ArrayFromBytes(w.Type, got[i])
			for j := range w.Data {
				if gv.Data[j] == w.Data[j] { // infinities too
					continue
				}
				d := math.Abs(gv.Data[j] - w.Data[j])
				if !(d <= rel*math.Abs(w.Data[j])+abs) && !(math.IsNaN(gv.Data[j]) && math.IsNaN(w.Data[j])) {
					t.Fatalf("%s: output %d element %d: ISA %v, reference %v", chip.Name, i, j, gv.Data[j], w.Data[j])
				}
			}
		}
	}
}
