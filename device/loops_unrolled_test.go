package device_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/device"
	"pypto/device/calib"
	"pypto/isa"
)

// unrolled returns p with every loop of constant trip count replaced by copies of its
// body, each preceded by an SMOV of the counter's value (and one after the last copy,
// the counter's value after the loop). A loop of n trips has 1 LOOP and n ENDLOOP
// executions; its unrolled form n + 1 SMOVs: the same number of scalar instructions.
func unrolled(t testing.TB, p *isa.Program) *isa.Program { return unrolledLoops(t, p, false) }

// unrolledOuter unrolls only the loops that hold other loops: the calibration GEMM's
// tile loops, leaving one K loop per output tile in straight-line code (the shape of
// the compiler's matmul kernels).
func unrolledOuter(t testing.TB, p *isa.Program) *isa.Program { return unrolledLoops(t, p, true) }

func unrolledLoops(t testing.TB, p *isa.Program, outerOnly bool) *isa.Program {
	t.Helper()
	var expand func(body []isa.Instr) []isa.Instr
	expand = func(body []isa.Instr) []isa.Instr {
		var out []isa.Instr
		for i := 0; i < len(body); i++ {
			in := body[i]
			if in.Op != isa.LOOP {
				out = append(out, in)
				continue
			}
			require.Equal(t, isa.KindImm, in.Args[1].Kind, "unrolled needs constant trip counts")
			depth, end := 1, i+1
			for ; depth > 0; end++ {
				switch body[end].Op {
				case isa.LOOP:
					depth++
				case isa.ENDLOOP:
					depth--
				}
			}
			inner := expand(body[i+1 : end-1])
			if outerOnly && !slices.ContainsFunc(body[i+1:end-1], func(x isa.Instr) bool { return x.Op == isa.LOOP }) {
				out = append(out, in)
				out = append(out, inner...)
				out = append(out, body[end-1])
				i = end - 1
				continue
			}
			n := int(in.Args[1].Imm)
			for k := 0; k <= n; k++ {
				out = append(out, isa.Instr{Op: isa.SMOV, Args: []isa.Operand{in.Args[0], isa.ImmOp(float64(k))}})
				if k < n {
					out = append(out, inner...)
				}
			}
			i = end - 1
		}
		return out
	}
	q := *p
	q.Body = expand(p.Body)
	return &q
}

// runBoth runs the same blocks looped and unrolled, timing-only, and returns both
// task times and the static instruction counts of block 0.
func runBoth(t *testing.T, chip *device.Chip, kind isa.CoreKind, progs []*isa.Program, addrs []int, gmBytes int) (looped, flat *device.TaskStats, nLooped, nFlat int) {
	t.Helper()
	return runForms(t, chip, kind, progs, nil, addrs, gmBytes)
}

// runForms is runBoth with the looped form given by form (nil: progs as they are).
func runForms(t *testing.T, chip *device.Chip, kind isa.CoreKind, progs []*isa.Program, form func(testing.TB, *isa.Program) *isa.Program, addrs []int, gmBytes int) (looped, flat *device.TaskStats, nLooped, nFlat int) {
	t.Helper()
	run := func(ps []*isa.Program) (*device.TaskStats, int) {
		blocks := make([]device.Block, len(ps))
		for i, p := range ps {
			m, err := device.Compile(chip, p)
			require.NoError(t, err)
			blocks[i] = device.Block{Prog: m, ParamAddrs: addrs}
		}
		st, err := device.RunTask(chip, make([]byte, gmBytes), kind, blocks, device.RunOptions{NoValues: true})
		require.NoError(t, err)
		return st, len(blocks[0].Prog.Instrs)
	}
	flatProgs := make([]*isa.Program, len(progs))
	loopProgs := make([]*isa.Program, len(progs))
	for i, p := range progs {
		flatProgs[i], loopProgs[i] = unrolled(t, p), p
		if form != nil {
			loopProgs[i] = form(t, p)
		}
	}
	looped, nLooped = run(loopProgs)
	flat, nFlat = run(flatProgs)
	return
}

// A loop costs what its instructions unrolled cost: the flags that synchronise the
// loop (carried, priming, draining, entry and exit) order the same hazards the
// straight-line flags of the unrolled code do, at nearly the same places.
func TestLoopedGEMMCostsWhatItsUnrolledFormCosts(t *testing.T) {
	chip, err := device.Preset("a2")
	require.NoError(t, err)
	one := calib.Published(6144, chip.CubeCores)
	one.M, one.N = 4*one.BaseM, 6*one.BaseN // one tile per core: the K loop alone
	for _, g := range []calib.GEMM{one, calib.Published(1536, chip.CubeCores), calib.Published(3072, chip.CubeCores)} {
		mkn := g.M
		progs, err := g.Programs()
		require.NoError(t, err)
		a, b, c := g.M*g.K*2, g.K*g.N*2, g.M*g.N*2
		looped, flat, nl, nf := runBoth(t, chip, isa.Cube, progs, []int{0, a, a + b}, a+b+c)
		ratio := float64(looped.Cycles) / float64(flat.Cycles)
		t.Logf("gemm %d: looped %d cycles (%d instructions), unrolled %d (%d): ratio %.4f", mkn, looped.Cycles, nl, flat.Cycles, nf, ratio)
		if g.M == one.M {
			assert.InDelta(t, 1, ratio, 0.02, "gemm %d", mkn)
		} else {
			// Across tiles the looped form still pays a little: the K loop's draining
			// waits after its ENDLOOP hold MTE2 until the last stage's extracts, where
			// the unrolled next tile's first load waits only for its own tile's.
			assert.InDelta(t, 1, ratio, 0.05, "gemm %d", mkn)
		}
		assert.Less(t, 4*nl, nf, "the looped program is the smaller one")
	}
	// Output tiles in straight-line code, each with its K loop (the compiler's form):
	// the K loop's drains wait just before the next tile's first loads.
	for _, mkn := range []int{1536, 3072} {
		g := calib.Published(mkn, chip.CubeCores)
		progs, err := g.Programs()
		require.NoError(t, err)
		a, b, c := g.M*g.K*2, g.K*g.N*2, g.M*g.N*2
		looped, flat, nl, nf := runForms(t, chip, isa.Cube, progs, unrolledOuter, []int{0, a, a + b}, a+b+c)
		ratio := float64(looped.Cycles) / float64(flat.Cycles)
		t.Logf("gemm %d, tiles unrolled: looped %d cycles (%d instructions), unrolled %d (%d): ratio %.4f", mkn, looped.Cycles, nl, flat.Cycles, nf, ratio)
		assert.InDelta(t, 1, ratio, 0.02, "gemm %d with its K loops in straight-line tiles", mkn)
	}
}

// The same for vector row loops: a double-buffered elementwise loop and a row
// reduction whose accumulator is carried from one iteration to the next.
func TestLoopedRowKernelsCostWhatTheirUnrolledFormsCost(t *testing.T) {
	chip, err := device.Preset("a2")
	require.NoError(t, err)
	for name, src := range map[string]string{"exp rows": expRowsLoop, "row sums": rowSumLoop} {
		p, err := isa.Parse(src)
		require.NoError(t, err, name)
		looped, flat, nl, nf := runBoth(t, chip, isa.Vector, []*isa.Program{p}, []int{0, 1 << 20}, 2<<20)
		ratio := float64(looped.Cycles) / float64(flat.Cycles)
		t.Logf("%s: looped %d cycles (%d instructions), unrolled %d (%d): ratio %.4f", name, looped.Cycles, nl, flat.Cycles, nf, ratio)
		assert.InDelta(t, 1, ratio, 0.02, name)
	}
}

// expRowsLoop is exp over 64 row blocks, two blocks per iteration in alternating
// tiles (the structure of the compiler's row kernels).
const expRowsLoop = `
kernel exp_rows vector
param %x: f32[131072]
param %y: f32[131072]
reg %i
reg %off
tile %a0: vec f32[16x64]
tile %a1: vec f32[16x64]
tile %b0: vec f32[16x64]
tile %b1: vec f32[16x64]
  loop %i, 64
    smul %off, %i, 2048
    tload %a0, %x[%off; 16x64; 64,1]
    texp %b0, %a0
    tstore %y[%off; 16x64; 64,1], %b0
    tload %a1, %x[%off+1024; 16x64; 64,1]
    texp %b1, %a1
    tstore %y[%off+1024; 16x64; 64,1], %b1
  endloop
end
`

// rowSumLoop sums 64 blocks of 16 x 64 into one accumulator, then scales and stores
// it: a value carried across iterations and an exit edge to the code after the loop.
const rowSumLoop = `
kernel row_sums vector
param %x: f32[131072]
param %y: f32[1024]
reg %i
reg %off
tile %a0: vec f32[16x64]
tile %a1: vec f32[16x64]
tile %acc: vec f32[16x64]
  texpands %acc, 0
  loop %i, 32
    smul %off, %i, 2048
    tload %a0, %x[%off; 16x64; 64,1]
    tadd %acc, %acc, %a0
    tload %a1, %x[%off+1024; 16x64; 64,1]
    tadd %acc, %acc, %a1
  endloop
  tmuls %acc, %acc, 0.5
  tstore %y[0; 16x64; 64,1], %acc
end
`

// Every flag the inserter puts into a looped program is needed: without any one of
// its (pipe pair, event id) streams the simulator's race checker reports a race (or
// the run deadlocks), while the complete program runs clean.
func TestEveryLoopFlagIsNeeded(t *testing.T) {
	chip, err := device.Preset("a2")
	require.NoError(t, err)
	g := calib.GEMM{M: 256, K: 1536, N: 512, BaseM: 128, BaseN: 256, BaseK: 64, StepK: 4, Cores: 1}
	gemm, err := g.Programs()
	require.NoError(t, err)
	rows, err := isa.Parse(rowSumLoop)
	require.NoError(t, err)
	exp, err := isa.Parse(expRowsLoop)
	require.NoError(t, err)
	for _, c := range []struct {
		p     *isa.Program
		addrs []int
		gm    int
	}{{gemm[0], []int{0, 4 << 20, 8 << 20}, 9 << 20}, {rows, []int{0, 1 << 20}, 2 << 20}, {exp, []int{0, 1 << 20}, 2 << 20}} {
		m, err := device.Compile(chip, c.p)
		require.NoError(t, err)
		run := func(m *device.MachineProgram) error {
			_, err := device.RunTask(chip, make([]byte, c.gm), c.p.Core, []device.Block{{Prog: m, ParamAddrs: c.addrs}}, device.RunOptions{})
			return err
		}
		require.NoError(t, run(m), c.p.Name)
		type key struct {
			src, dst isa.Pipe
			id       float64
		}
		var keys []key
		for _, in := range m.Instrs {
			if in.Src < 0 && in.Op == isa.SET_FLAG {
				k := key{in.Args[0].Pipe, in.Args[1].Pipe, in.Args[2].Imm}
				if !slices.Contains(keys, k) {
					keys = append(keys, k)
				}
			}
		}
		require.NotEmpty(t, keys)
		for _, k := range keys {
			cut := *m
			cut.Instrs = nil
			for _, in := range m.Instrs {
				if (in.Op == isa.SET_FLAG || in.Op == isa.WAIT_FLAG) && (key{in.Args[0].Pipe, in.Args[1].Pipe, in.Args[2].Imm}) == k {
					continue
				}
				cut.Instrs = append(cut.Instrs, in)
			}
			var open []int
			for pc := range cut.Instrs {
				switch cut.Instrs[pc].Op {
				case isa.LOOP:
					open = append(open, pc)
				case isa.ENDLOOP:
					l := open[len(open)-1]
					open = open[:len(open)-1]
					cut.Instrs[pc].Match, cut.Instrs[l].Match = l, pc
				}
			}
			assert.Error(t, run(&cut), "%s without the flags %s -> %s id %v", c.p.Name, k.src, k.dst, k.id)
		}
	}
}
