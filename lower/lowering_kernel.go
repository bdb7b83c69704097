package lower

import (
	"fmt"

	"pypto/core"
	"pypto/device"
	"pypto/isa"
)

// A call_kernel op (a user's block-level kernel, core/ops_call_kernel.go) brings its
// own programs: its tile op has one "tile" per block of the kernel's grid, each block
// runs on a core of its own, and code generation binds the user's programs to the
// task's GM tensors. A mixed kernel becomes a mixed task (Task.Vectors), one group of
// a cube and its vector cores per block, as the compiler's own mixed kernels.

func init() {
	lowerings["call_kernel"] = lowering{kind: TileKernel, core: isa.Vector}
}

// kernelTiling checks a kernel against the chip it is compiled for (buffer capacities,
// core counts, the instructions the simulator implements) and gives its tile op one
// grid point per block. Errors name the user's line in the kernel.
func kernelTiling(op *TileOp, chip *device.Chip) *core.Error {
	k, err := core.KernelOf(op.Attrs)
	if err != nil {
		return err
	}
	op.Core = k.Programs[0].Core
	cores := chip.Cores(op.Core)
	if k.Grid > cores {
		return core.Errorf(core.CompileError, "kernel %s has a grid of %d blocks, but chip %s has %d %s cores", k.Name, k.Grid, chip.Name, cores, op.Core).
			Suggest("give each block more work and use a grid of at most %d", cores)
	}
	if k.Vectors > 0 {
		if per := chip.VectorCores / chip.CubeCores; per != k.Vectors {
			return core.Errorf(core.CompileError, "kernel %s has %d vector programs per block, but an AI core of chip %s has %d vector cores", k.Name, k.Vectors, chip.Name, per).
				Suggest("declare the kernel with vectors=%d", per)
		}
	}
	for i, p := range k.Programs {
		if err := isa.Verify(p, chip.Capacity); err != nil {
			e := k.ErrorAt(i, err)
			e.Kind = core.CompileError
			return e.Because("chip %s has %s", chip.Name, bufferSizes(chip, p.Core))
		}
		for j, in := range p.Body {
			if !device.Supports(in.Op) {
				e := k.ErrorAt(i, &isa.VerifyError{Kernel: p.Name, Index: j, Where: isa.FormatInstr(p, in),
					Msg: fmt.Sprintf("the simulated device does not implement %s yet", in.Op)})
				e.Kind = core.CompileError
				return e
			}
		}
	}
	op.Problem = []int{k.Grid}
	op.Tile = []int{1}
	op.Reason = fmt.Sprintf("user kernel %s: one block per core", k.Name)
	return nil
}

// bufferSizes lists a core kind's buffers with their sizes, for capacity errors.
func bufferSizes(chip *device.Chip, kind isa.CoreKind) string {
	s := ""
	for loc := isa.Location(1); int(loc) < isa.NumLocations; loc++ {
		if chip.HasLocation(kind, loc) && chip.Capacity(loc) > 0 {
			if s != "" {
				s += ", "
			}
			s += fmt.Sprintf("%s %d bytes", loc, chip.Capacity(loc))
		}
	}
	return s
}

// kernelBlock gives the programs of the block that computes tile b of a call_kernel
// op: the user's programs with params bound to the task's GM tensors (kernelArgs, in
// which a tensor passed twice is one param).
func kernelBlock(tg *TileGraph, op *TileOp, tiles []int, name string) ([]*isa.Program, error) {
	k, err := core.KernelOf(op.Attrs)
	if err != nil {
		return nil, err
	}
	if len(tiles) != 1 {
		return nil, fmt.Errorf("kernel %s: a block computes %d grid points, want 1", k.Name, len(tiles))
	}
	args := kernelArgs(op)
	index := map[int]int{}
	for i, t := range args {
		index[t] = i
	}
	bind := make([]int, len(op.Inputs)+1) // user param -> task param
	for i, t := range append(append([]int(nil), op.Inputs...), op.Output) {
		bind[i] = index[t]
	}
	var out []*isa.Program
	for i, p := range k.Group(tiles[0]) {
		q := *p
		q.Name = name
		if k.Vectors > 0 {
			q.Name = fmt.Sprintf("%s_c", name)
			if i > 0 {
				q.Name = fmt.Sprintf("%s_v%d", name, i-1)
			}
		}
		q.Params = make([]isa.Param, len(args))
		for j := len(bind) - 1; j >= 0; j-- { // a param passed twice keeps its first name
			q.Params[bind[j]] = p.Params[j]
		}
		q.Body = make([]isa.Instr, len(p.Body))
		for j, in := range p.Body {
			in.Args = append([]isa.Operand(nil), in.Args...)
			for a := range in.Args {
				if in.Args[a].Kind == isa.KindGM {
					in.Args[a].GM.Param = bind[in.Args[a].GM.Param]
				}
			}
			q.Body[j] = in
		}
		out = append(out, &q)
	}
	return out, nil
}
