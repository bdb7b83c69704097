package lower

import (
	"fmt"
	"regexp"

	"pypto/core"
	"pypto/device"
	"pypto/isa"
)

// A call_kernel op (a user's block-level kernel, core/ops_call_kernel.go) brings its
// own programs: its tile op has one "tile" per block of the kernel's grid, dealt
// round-robin over the chip's cores like other vector kernels' tiles, and code
// generation binds the user's programs to the task's GM tensors. A core given several
// blocks (a grid larger than the chip) runs their programs one after the other, as one
// program, so a kernel's grid need not know the chip. A mixed kernel becomes a mixed task (Task.Vectors), one group of
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
	for i, p := range k.Programs {
		if _, err := device.Compile(chip, p); err != nil {
			return kernelBackendError(k, i, p, chip, err)
		}
	}
	op.Problem = []int{k.Grid}
	op.Tile = []int{1}
	op.Reason = fmt.Sprintf("user kernel %s: one block per core", k.Name)
	return nil
}

var tileNamed = regexp.MustCompile(`tile (\S+) does not fit|\b(t\d+) \(\d+ B\)`)

// kernelBackendError reports a program of a kernel the backend cannot compile for the
// chip (its tiles live at one time do not fit a buffer) at the line that made the tile
// that does not fit, naming the lines of the tiles live with it.
func kernelBackendError(k *core.Kernel, i int, p *isa.Program, chip *device.Chip, err error) *core.Error {
	e := core.Errorf(core.CompileError, "kernel %s, block %d, on chip %s: %v", k.Name, i/k.GroupSize(), chip.Name, err)
	for n, m := range tileNamed.FindAllStringSubmatch(err.Error(), -1) {
		name := m[1] + m[2]
		loc := k.Sources.Locate(i, p, -1, "tile %"+name+":")
		if n == 0 {
			e.Loc = loc
		} else if !loc.IsZero() {
			e.Because("%s is the tile made at line %d", name, loc.Line)
		}
	}
	return e.Suggest("use smaller tiles, or keep fewer tiles live at once (a tile's bytes are reused once its last reader has run)")
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
	args := kernelArgs(tg, op)
	index := map[int]int{}
	for i, t := range args {
		index[t] = i
	}
	bind := make([]int, len(op.Inputs)+1) // user param -> task param
	for i, t := range append(append([]int(nil), op.Inputs...), op.Output) {
		bind[i] = index[t]
	}
	var out []*isa.Program
	for i := range k.GroupSize() {
		parts := make([]*isa.Program, len(tiles))
		for j, b := range tiles {
			parts[j] = k.Group(b)[i]
		}
		p := concatPrograms(parts)
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

// concatPrograms joins programs with the same params into one that runs them in order:
// each part keeps its tiles and registers (renamed apart), so the backend sees the
// parts' lifetimes and may overlap one part's tail with the next one's loads.
func concatPrograms(parts []*isa.Program) *isa.Program {
	if len(parts) == 1 {
		return parts[0]
	}
	out := &isa.Program{Name: parts[0].Name, Core: parts[0].Core, Params: parts[0].Params}
	for j, p := range parts {
		tileBase, regBase := len(out.Tiles), len(out.Regs)
		shift := func(r isa.RegRef) isa.RegRef {
			if i, ok := r.Index(); ok {
				return isa.UseReg(i + regBase)
			}
			return r
		}
		for _, r := range p.Regs {
			out.Regs = append(out.Regs, isa.RegDecl{Name: fmt.Sprintf("b%d.%s", j, r.Name)})
		}
		for _, t := range p.Tiles {
			t.Name = fmt.Sprintf("b%d.%s", j, t.Name)
			t.ValidRowsReg, t.ValidColsReg = shift(t.ValidRowsReg), shift(t.ValidColsReg)
			out.Tiles = append(out.Tiles, t)
		}
		for _, in := range p.Body {
			in.Args = append([]isa.Operand(nil), in.Args...)
			for a := range in.Args {
				arg := &in.Args[a]
				switch arg.Kind {
				case isa.KindTile:
					arg.Tile += tileBase
				case isa.KindReg:
					arg.Reg += regBase
				case isa.KindGM:
					arg.GM.OffsetReg, arg.GM.RowsReg, arg.GM.ColsReg = shift(arg.GM.OffsetReg), shift(arg.GM.RowsReg), shift(arg.GM.ColsReg)
				}
			}
			out.Body = append(out.Body, in)
		}
	}
	return out
}
