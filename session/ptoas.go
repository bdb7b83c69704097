package session

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"pypto/core"
	"pypto/device"
	"pypto/internal/ptoas"
	"pypto/isa"
	"pypto/lower"
)

// PTO-AS export and import (lower/ptoas_*.go, internal/ptoas) for the Python API.

// ExportPTO writes the program of the executor's last run (a concrete executor's
// program; a symbolic one's last specialisation) as PTO-AS and a manifest. The tensors
// the trace captured become constant buffers whose bytes the export carries.
func (e *Executor) ExportPTO() (*lower.PTOExport, error) {
	prog := e.latestProgram()
	switch {
	case e.graph == nil:
		return nil, core.Errorf(core.ValueError, "nothing is compiled: every output of the function is an input or a constant")
	case prog == nil:
		return nil, core.Errorf(core.ValueError, "the executor has a symbolic trace and has not run yet, so no program is compiled").
			Suggest("run it once (each run's sizes compile a program), then export")
	}
	lp, ok := baseProgram(prog).(loweredProgram)
	if !ok {
		return nil, core.Errorf(core.ValueError, "the program was compiled for device %q, which runs no PTO programs", e.device).
			Suggest("compile for a chip (p.set_device(\"a2\") or p.CompileConfig(chip=\"a2\"))")
	}
	bound := map[int][]byte{}
	for i, data := range e.bound {
		k := len(e.inputs) + i
		if n, ok := prog.(narrowedProgram); ok { // the program holds int64 values in int32
			d, err := n.plan.NarrowInput(k, data)
			if err != nil {
				return nil, err
			}
			data = d
		}
		bound[k] = data
	}
	return lp.exe.ExportPTO(bound)
}

// ExportProgramsPTO writes block-kernel programs (their PTO text, as p.block_kernel
// traces it: grid blocks of 1 + vectors programs each) as PTO-AS, auto and manual
// forms, for device (the current one when empty).
func (s *Session) ExportProgramsPTO(name, text string, vectors int, dev string) (auto, manual *ptoas.Module, err error) {
	chip, err := s.chipFor(dev)
	if err != nil {
		return nil, nil, err
	}
	progs, err := parsePrograms(text)
	if err != nil {
		return nil, nil, err
	}
	task := ptoas.Task{Name: name, Programs: progs, Vectors: vectors}
	if auto, err = ptoas.WriteTask(task); err != nil {
		return nil, nil, core.Errorf(core.CompileError, "%v", err)
	}
	var ms []*device.MachineProgram
	for _, p := range progs {
		m, err := device.Compile(chip, p)
		if err != nil {
			return nil, nil, core.Errorf(core.CompileError, "%v", err)
		}
		ms = append(ms, m)
	}
	if manual, err = ptoas.WriteTask(ptoas.ManualTask(name, ms, vectors)); err != nil {
		return nil, nil, core.Errorf(core.CompileError, "%v", err)
	}
	return auto, manual, nil
}

// parsePrograms splits PTO text holding several kernels ("kernel ... end" each).
func parsePrograms(text string) ([]*isa.Program, error) {
	var progs []*isa.Program
	var cur []string
	for _, line := range strings.SplitAfter(text, "\n") {
		cur = append(cur, line)
		if strings.TrimSpace(line) == "end" {
			p, err := isa.Parse(strings.Join(cur, ""))
			if err != nil {
				return nil, core.Errorf(core.ValueError, "%v", err)
			}
			progs = append(progs, p)
			cur = nil
		}
	}
	if len(progs) == 0 {
		return nil, core.Errorf(core.ValueError, "no kernel in the programs' text")
	}
	return progs, nil
}

// chipFor is the chip preset of device (the current device when empty).
func (s *Session) chipFor(dev string) (*device.Chip, error) {
	if dev == "" {
		dev = s.Device()
	}
	chip, err := device.Preset(dev)
	if err != nil {
		return nil, core.Errorf(core.ValueError, "device %q runs no PTO programs: %v", dev, err).
			Suggest("use a chip preset (p.set_device(\"a2\"))")
	}
	return chip, nil
}

// LoadPTOProgram reads a directory written by an export (its manifest.json and the
// kernel files of one form, "auto" or "manual") and builds it for device (the
// manifest's chip when empty).
func (s *Session) LoadPTOProgram(dir, form, dev string) (*lower.PTOProgram, error) {
	if form != "auto" && form != "manual" {
		return nil, core.Errorf(core.ValueError, "form %q: want \"auto\" or \"manual\"", form)
	}
	manifest, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return nil, core.Errorf(core.ValueError, "%s is not a PTO-AS export (no manifest.json): %v", dir, err)
	}
	var chip *device.Chip
	if dev != "" {
		if chip, err = s.chipFor(dev); err != nil {
			return nil, err
		}
	}
	read := func(name string) ([]byte, error) {
		if filepath.Base(name) != name {
			return nil, core.Errorf(core.ValueError, "manifest.json names %q, which is not a file of the directory", name)
		}
		return os.ReadFile(filepath.Join(dir, name))
	}
	return lower.LoadPTOProgram(chip, manifest, read, form)
}

// RunPTOProgram runs a loaded program on inputs (the manifest's inputs' bytes).
func RunPTOProgram(pp *lower.PTOProgram, inputs [][]byte, maxSteps int64) ([][]byte, Stats, error) {
	outs, st, err := pp.Run(inputs, device.RunOptions{MaxInstructions: maxSteps})
	if err != nil {
		return nil, Stats{}, AsError(core.DeviceError, err)
	}
	return outs, Stats{Cycles: st.Cycles, Seconds: st.Seconds, KernelCycles: st.KernelCycles, KernelSeconds: st.KernelSeconds,
		Tasks: st.Ran(), Detail: st}, nil
}

// PTOKernelSource is a PTO-AS kernel read as the PTO programs a block kernel runs.
type PTOKernelSource struct {
	Name     string     `json:"name"`
	Programs string     `json:"programs"` // PTO text, one kernel per block (group)
	Grid     int        `json:"grid"`
	Vectors  int        `json:"vectors"`
	Core     string     `json:"core"` // vector, cube or mixed
	Params   []PTOParam `json:"params"`
	Form     string     `json:"form"`
	// Sources locates each program's instructions in the file (call_kernel's
	// "sources": errors found when the kernel runs name the line they come from).
	Sources string `json:"sources"`
}

// PTOParam is one GM param of a kernel and how the programs use it.
type PTOParam struct {
	Name   string `json:"name"`
	DType  string `json:"dtype"`
	Elems  int    `json:"elems"`
	Access string `json:"access"` // read, write, readwrite, or "" (unused)
	Scalar bool   `json:"scalar"` // an integer the caller passes (an index argument)
}

// ReadPTOKernel reads the PTO-AS kernel in file (the first of a module's functions,
// or a mixed task's pair) as block-kernel programs. blocks > 0 overrides pypto.blocks.
// Placed tiles become TASSIGNs at the start of each program, so the backend keeps
// their addresses (and the program's own flags) and completes the synchronisation as
// for any manual program.
func ReadPTOKernel(file string, blocks int) (*PTOKernelSource, error) {
	src, err := os.ReadFile(file)
	if err != nil {
		return nil, core.Errorf(core.ValueError, "%v", err)
	}
	fns, err := ptoas.Read(file, string(src), blocks)
	if err != nil {
		return nil, core.Errorf(core.ValueError, "%v", err)
	}
	ks := &PTOKernelSource{Name: fns[0].Name, Grid: fns[0].Blocks, Core: fns[0].Core.String(), Form: "auto"}
	var progs []*isa.Program
	var addrs [][]int
	var pos [][]ptoas.Pos
	switch len(fns) {
	case 1:
		progs, addrs, pos = fns[0].Programs, fns[0].Addrs, fns[0].Pos
	case 2:
		cube, vec := fns[0], fns[1]
		if cube.Core != isa.Cube {
			cube, vec = vec, cube
		}
		if cube.Core != isa.Cube || vec.SubBlocks == 0 || cube.Blocks != vec.Blocks {
			return nil, core.Errorf(core.ValueError, "%s: two functions make a mixed kernel only as a cube function and a vector function (pypto.subblocks) of one block count", file)
		}
		ks.Name, ks.Core, ks.Vectors, ks.Grid = strings.TrimSuffix(cube.Name, "_cube"), "mixed", vec.SubBlocks, cube.Blocks
		for b := range cube.Blocks {
			progs = append(progs, cube.Programs[b])
			addrs = append(addrs, pickAddrs(cube.Addrs, b))
			pos = append(pos, cube.Pos[b])
			for v := range vec.SubBlocks {
				progs = append(progs, vec.Programs[b*vec.SubBlocks+v])
				addrs = append(addrs, pickAddrs(vec.Addrs, b*vec.SubBlocks+v))
				pos = append(pos, vec.Pos[b*vec.SubBlocks+v])
			}
		}
	default:
		return nil, core.Errorf(core.ValueError, "%s has %d functions; a kernel is one function, or a mixed kernel's cube and vector functions", file, len(fns))
	}
	for _, f := range fns {
		if f.Form == ptoas.Manual {
			ks.Form = "manual"
		}
	}
	var b strings.Builder
	sources := core.KernelSources{}
	locs := map[ptoas.Pos]int{}
	for i, p := range progs {
		var ps core.ProgramSources
		if i < len(addrs) && addrs[i] != nil {
			p = placed(p, addrs[i])
			for range len(p.Body) - len(pos[i]) {
				ps.Instrs = append(ps.Instrs, -1)
			}
		}
		for _, at := range pos[i] {
			n, ok := locs[at]
			if !ok {
				n = len(sources.Locs)
				locs[at] = n
				sources.Locs = append(sources.Locs, core.Location{File: file, Line: at.Line})
			}
			ps.Instrs = append(ps.Instrs, n)
		}
		sources.Programs = append(sources.Programs, ps)
		b.WriteString(isa.Format(p))
	}
	ks.Programs = b.String()
	data, err := json.Marshal(sources)
	if err != nil {
		return nil, core.Errorf(core.InternalError, "kernel sources: %v", err)
	}
	ks.Sources = string(data)
	access := lower.ParamAccess(progs)
	scalars := map[string]bool{}
	for _, s := range fns[0].Scalars {
		scalars[s] = true
	}
	for i, prm := range progs[0].Params {
		ks.Params = append(ks.Params, PTOParam{Name: prm.Name, DType: prm.DType.LongName(), Elems: prm.Elems, Access: access[i], Scalar: scalars[prm.Name] && i >= len(progs[0].Params)-len(fns[0].Scalars)})
	}
	return ks, nil
}

func pickAddrs(a [][]int, i int) []int {
	if a == nil {
		return nil
	}
	return a[i]
}

// placed is p with a TASSIGN of each placed tile before its body.
func placed(p *isa.Program, addrs []int) *isa.Program {
	q := *p
	q.Body = nil
	for t, a := range addrs {
		if a >= 0 {
			q.Body = append(q.Body, isa.Instr{Op: isa.TASSIGN, Args: []isa.Operand{isa.TileOp(t), isa.ImmOp(float64(a))}})
		}
	}
	q.Body = append(q.Body, p.Body...)
	return &q
}
