package lower

import (
	"encoding/json"
	"errors"
	"fmt"

	"pypto/core"
	"pypto/device"
	"pypto/internal/checked"
	"pypto/internal/ptoas"
	"pypto/isa"
)

// Import of PTO-AS: kernels read back into machine programs, and a directory with a
// manifest into a program that runs like an Executable.

// PTOKernel is the programs of one task read from PTO-AS and built for a chip: an
// auto form through the backend (placement and flags), a manual one as it says
// (device.CompilePlaced: its flags are then checked by the simulator as it runs).
type PTOKernel struct {
	Task   *Task // Programs and Machine set; Args: the params in order
	placed [][]int
	// Pos[i][pc] is where instruction pc of program i came from in the file.
	Pos   [][]ptoas.Pos
	File  string
	Form  ptoas.Form
	Funcs []*ptoas.ReadFunction
}

// LoadPTOKernel reads a PTO-AS module (one function, or a mixed task's cube and vector
// functions) and builds its programs for chip. blocks > 0 overrides the functions'
// pypto.blocks.
func LoadPTOKernel(chip *device.Chip, file, src string, blocks int) (*PTOKernel, error) {
	fns, err := ptoas.Read(file, src, blocks)
	if err != nil {
		return nil, ptoError(err)
	}
	k := &PTOKernel{File: file, Funcs: fns, Task: &Task{Name: fns[0].Name}}
	switch len(fns) {
	case 1:
		f := fns[0]
		k.Task.Core, k.Task.Programs, k.Pos = f.Core, f.Programs, f.Pos
		k.addrs(f, allIndices(len(f.Programs)))
	case 2:
		cube, vec := fns[0], fns[1]
		if cube.Core != isa.Cube {
			cube, vec = vec, cube
		}
		if cube.Core != isa.Cube || vec.Core != isa.Vector || vec.SubBlocks == 0 || cube.Blocks != vec.Blocks {
			return nil, core.Errorf(core.ValueError, "%s: two functions make a mixed task only as a cube function and a vector function (pypto.subblocks) of the same block count", file)
		}
		k.Task.Name = trimSuffix(cube.Name, "_cube")
		k.Task.Core, k.Task.Vectors = isa.Cube, vec.SubBlocks
		var addrs [][]int
		for b := range cube.Blocks {
			k.Task.Programs = append(k.Task.Programs, cube.Programs[b])
			k.Pos = append(k.Pos, cube.Pos[b])
			addrs = append(addrs, pick(cube.Addrs, b))
			for v := range vec.SubBlocks {
				i := b*vec.SubBlocks + v
				k.Task.Programs = append(k.Task.Programs, vec.Programs[i])
				k.Pos = append(k.Pos, vec.Pos[i])
				addrs = append(addrs, pick(vec.Addrs, i))
			}
		}
		if (cube.Addrs == nil) != (vec.Addrs == nil) {
			return nil, core.Errorf(core.ValueError, "%s: the cube function places its tiles and the vector function does not (or the other way); place both or neither", file)
		}
		if cube.Addrs != nil {
			k.Form = ptoas.Manual
			k.placed = addrs
		}
	default:
		return nil, core.Errorf(core.ValueError, "%s has %d functions; a kernel is one function, or a mixed task's cube and vector functions", file, len(fns))
	}
	for _, f := range fns {
		if f.Form == ptoas.Manual {
			k.Form = ptoas.Manual
		}
	}
	for i := range k.Task.Programs[0].Params {
		k.Task.Args = append(k.Task.Args, i)
	}
	if err := k.build(chip); err != nil {
		return nil, err
	}
	return k, nil
}

func trimSuffix(s, suf string) string {
	if len(s) > len(suf) && s[len(s)-len(suf):] == suf {
		return s[:len(s)-len(suf)]
	}
	return s
}

func allIndices(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func pick(a [][]int, i int) []int {
	if a == nil {
		return nil
	}
	return a[i]
}

// addrs records a single function's placement.
func (k *PTOKernel) addrs(f *ptoas.ReadFunction, idx []int) {
	if f.Addrs == nil {
		return
	}
	for _, i := range idx {
		k.placed = append(k.placed, f.Addrs[i])
	}
}

// build compiles every program for chip: placed programs exactly as they say, the
// others through the backend.
func (k *PTOKernel) build(chip *device.Chip) error {
	t := k.Task
	t.Machine = make([]*device.MachineProgram, len(t.Programs))
	for i, p := range t.Programs {
		var m *device.MachineProgram
		var err error
		if k.placed != nil {
			m, err = device.CompilePlaced(chip, p, k.placed[i])
		} else {
			m, err = device.Compile(chip, p)
		}
		if err != nil {
			return k.located(i, err)
		}
		t.Machine[i] = m
	}
	return nil
}

// located adds the file position of the instruction a backend or simulator error of
// program i names.
func (k *PTOKernel) located(i int, err error) error {
	var ce *device.CompileError
	if errors.As(err, &ce) && ce.PC >= 0 && i < len(k.Pos) && ce.PC < len(k.Pos[i]) {
		p := k.Pos[i][ce.PC]
		return core.Errorf(core.CompileError, "%s:%d:%d: kernel %s: %s", k.File, p.Line, p.Col, ce.Program, ce.Msg)
	}
	return core.Errorf(core.CompileError, "%s: %v", k.File, err)
}

// ptoError turns a reader's error into the user's.
func ptoError(err error) error {
	var re *ptoas.ReadError
	if errors.As(err, &re) {
		return core.Errorf(core.ValueError, "%s", re.Error())
	}
	return core.Errorf(core.ValueError, "%v", err)
}

// RunError explains a failed run of the kernel's task: the file position of the
// instruction the device names, where it knows one.
func (k *PTOKernel) RunError(err error) error {
	var se *device.SimError
	if errors.As(err, &se) && se.PC >= 0 && se.Block >= 0 {
		i := se.Block * k.Task.GroupSize()
		if k.Task.Vectors > 0 && se.Core >= 0 {
			i += se.Core % k.Task.GroupSize()
		}
		if i < len(k.Task.Machine) {
			m := k.Task.Machine[i]
			if se.PC < len(m.Instrs) {
				if src := m.Instrs[se.PC].Src; src >= 0 && src < len(k.Pos[i]) {
					p := k.Pos[i][src]
					return core.Errorf(core.DeviceError, "%s:%d:%d: kernel %s: %s", k.File, p.Line, p.Col, m.Name, se.Msg)
				}
			}
		}
	}
	return core.Errorf(core.DeviceError, "%s: %v", k.File, err)
}

// PTOProgram is a program read from a PTO-AS export: its manifest and its tasks'
// machine programs, run as the compiled program they came from runs.
type PTOProgram struct {
	chip     *device.Chip
	manifest PTOManifest
	tasks    []*Task
	kernels  []*PTOKernel
	hz       [][]int
	addrs    [][]int // each task's param addresses
	inputs   []PTOBuffer
	outputs  []PTOBuffer
	consts   map[int][]byte // constant buffers' bytes
	rt       Runtime
	prep     []bool
}

// LoadPTOProgram reads a manifest and the kernel files it names (read gives a file's
// bytes) in one form ("auto" or "manual") and builds them for chip (nil: the
// manifest's chip).
func LoadPTOProgram(chip *device.Chip, manifest []byte, read func(name string) ([]byte, error), form string) (*PTOProgram, error) {
	pp := &PTOProgram{consts: map[int][]byte{}}
	if err := json.Unmarshal(manifest, &pp.manifest); err != nil {
		return nil, core.Errorf(core.ValueError, "manifest.json: %v", err)
	}
	m := &pp.manifest
	if m.Format != PTOManifestFormat {
		return nil, core.Errorf(core.ValueError, "manifest.json: format %q, this reader reads %q", m.Format, PTOManifestFormat)
	}
	if chip == nil {
		c, err := device.Preset(m.Chip)
		if err != nil {
			return nil, core.Errorf(core.ValueError, "manifest.json: chip %q: %v", m.Chip, err)
		}
		chip = c
	}
	pp.chip = chip
	if m.GMBytes < 0 || m.GMBytes > chip.HBMBytes {
		return nil, core.Errorf(core.ValueError, "manifest.json: gm_bytes %d is not a memory size of chip %s", m.GMBytes, chip.Name)
	}
	if m.WorkspaceBytes < 0 || m.WorkspaceBytes > m.GMBytes {
		return nil, core.Errorf(core.ValueError, "manifest.json: workspace_bytes %d is not a part of the %d bytes of gm_bytes", m.WorkspaceBytes, m.GMBytes)
	}
	bufs := map[int]PTOBuffer{}
	for _, b := range m.Buffers {
		if b.Role == "queue" {
			continue
		}
		if b.Offset < 0 || b.Bytes < 0 || b.Offset+b.Bytes > m.GMBytes {
			return nil, core.Errorf(core.ValueError, "manifest.json: buffer %d (%d bytes at %d) lies outside the %d bytes of gm_bytes", b.ID, b.Bytes, b.Offset, m.GMBytes)
		}
		bufs[b.ID] = b
		if b.Role == "constant" {
			data, err := read(b.Data)
			if err != nil {
				return nil, core.Errorf(core.ValueError, "manifest.json: constant buffer %d: %v", b.ID, err)
			}
			if len(data) != b.Bytes {
				return nil, core.Errorf(core.ValueError, "%s: %d bytes, the buffer has %d", b.Data, len(data), b.Bytes)
			}
			pp.consts[b.ID] = data
		}
	}
	for _, list := range []struct {
		ids []int
		out *[]PTOBuffer
	}{{m.Inputs, &pp.inputs}, {m.Outputs, &pp.outputs}} {
		for _, id := range list.ids {
			b, ok := bufs[id]
			if !ok {
				return nil, core.Errorf(core.ValueError, "manifest.json: input or output buffer %d is not in buffers", id)
			}
			*list.out = append(*list.out, b)
		}
	}
	pp.rt = Runtime{NoConcurrentTasks: !m.Runtime["concurrent_tasks"], NoOverlapLaunch: !m.Runtime["overlap_launch"], NoPrefetchL2: !m.Runtime["prefetch_l2"],
		NoBalanceBlocks: !m.Runtime["balance_blocks"], NoEarlyStart: !m.Runtime["early_start"]}
	for ti, mt := range m.Tasks {
		file, ok := mt.Files[form]
		if !ok {
			return nil, core.Errorf(core.ValueError, "manifest.json: task %s has no %q file", mt.Name, form)
		}
		src, err := read(file)
		if err != nil {
			return nil, core.Errorf(core.ValueError, "manifest.json: task %s: %v", mt.Name, err)
		}
		k, err := LoadPTOKernel(chip, file, string(src), mt.Blocks)
		if err != nil {
			return nil, err
		}
		if (k.Task.Vectors > 0) != (mt.Core == "mixed") || (mt.Core != "mixed" && k.Task.Core.String() != mt.Core) {
			return nil, core.Errorf(core.ValueError, "%s: its functions make a %s task, the manifest says %s", file, taskCore(k.Task), mt.Core)
		}
		if len(mt.Functions) == 0 {
			return nil, core.Errorf(core.ValueError, "manifest.json: task %s has no functions", mt.Name)
		}
		var addrs []int
		nparams := 0
		for _, a := range mt.Functions[0].Args {
			if a.Kind != "gm" {
				continue
			}
			b, ok := bufs[a.Buffer]
			if !ok {
				return nil, core.Errorf(core.ValueError, "manifest.json: task %s binds buffer %d, which is not in buffers", mt.Name, a.Buffer)
			}
			addrs = append(addrs, b.Offset)
			nparams++
		}
		if p := k.Task.Programs[0]; len(p.Params) != nparams {
			return nil, core.Errorf(core.ValueError, "%s: its programs have %d GM params, the manifest binds %d", file, len(p.Params), nparams)
		}
		for _, d := range mt.Waits {
			if d < 0 || d >= ti {
				return nil, core.Errorf(core.ValueError, "manifest.json: task %s waits for task %d, which is not an earlier task", mt.Name, d)
			}
		}
		k.Task.Name = mt.Name
		pp.tasks = append(pp.tasks, k.Task)
		pp.kernels = append(pp.kernels, k)
		pp.hz = append(pp.hz, mt.Waits)
		pp.addrs = append(pp.addrs, addrs)
		pp.prep = append(pp.prep, mt.WeightPrep)
	}
	return pp, nil
}

func taskCore(t *Task) string {
	if t.Vectors > 0 {
		return "mixed"
	}
	return t.Core.String()
}

// Manifest is the program's manifest.
func (pp *PTOProgram) Manifest() PTOManifest { return pp.manifest }

// Tasks are the program's tasks with their machine programs.
func (pp *PTOProgram) Tasks() []*Task { return pp.tasks }

// Chip is the chip the programs are built for.
func (pp *PTOProgram) Chip() *device.Chip { return pp.chip }

// Run runs the program on inputs (the manifest's inputs, in order, each its buffer's
// bytes) and returns its outputs.
func (pp *PTOProgram) Run(inputs [][]byte, opts device.RunOptions) ([][]byte, *RunStats, error) {
	if len(inputs) != len(pp.inputs) {
		return nil, nil, core.Errorf(core.ValueError, "the program takes %d inputs, got %d", len(pp.inputs), len(inputs))
	}
	m := pp.manifest
	if err := checked.Host(m.GMBytes, func() string { return "the program's global memory" }); err != nil {
		return nil, nil, core.MemoryErrorOf(err)
	}
	gm := make([]byte, m.GMBytes)
	for i, b := range pp.inputs {
		if len(inputs[i]) != b.Bytes {
			return nil, nil, core.Errorf(core.ValueError, "input %d (%s) has %d bytes, its buffer %d", i, b.Name, len(inputs[i]), b.Bytes)
		}
		copy(gm[b.Offset:], inputs[i])
	}
	for id, data := range pp.consts {
		for _, b := range m.Buffers {
			if b.ID == id && b.Role == "constant" {
				copy(gm[b.Offset:], data)
			}
		}
	}
	index := map[*Task]int{}
	for i, t := range pp.tasks {
		index[t] = i
	}
	addrs := func(t *Task) []int { return pp.addrs[index[t]] }
	explain := func(t *Task, err error) error { return pp.kernels[index[t]].RunError(err) }
	ws := [2]int{m.GMBytes - m.WorkspaceBytes, m.GMBytes}
	stats, err := dispatchTasks(pp.chip, pp.tasks, pp.hz, addrs, gm, ws, opts, pp.rt, nil, explain, "")
	if err != nil {
		return nil, nil, err
	}
	var outs [][]byte
	for _, b := range pp.outputs {
		outs = append(outs, append([]byte(nil), gm[b.Offset:b.Offset+b.Bytes]...))
	}
	return outs, stats, nil
}

// Inputs and Outputs describe the program's inputs and outputs (their buffers).
func (pp *PTOProgram) Inputs() []PTOBuffer  { return pp.inputs }
func (pp *PTOProgram) Outputs() []PTOBuffer { return pp.outputs }

var _ = fmt.Sprint
