package lower

import (
	"encoding/json"
	"fmt"
	"sort"

	"pypto/core"
	"pypto/dtype"
	"pypto/internal/ptoas"
	"pypto/isa"
)

// Export of a compiled program as PTO-AS (internal/ptoas) and a manifest that says
// how a device runtime runs it: the tasks in dependency order, each task's kernel
// functions, core kind and block count, and every argument of each function, bound to
// a GM buffer of the program's memory plan (its role, dtype, element count and byte
// offset), to a queue's buffer, or to an integer a dynamic program reads.

// PTOManifestFormat names the manifest's version.
const PTOManifestFormat = "pypto.pto-as/1"

// PTOManifest is manifest.json.
type PTOManifest struct {
	Format string `json:"format"`
	PTOAS  string `json:"ptoas"` // the dialect version the text is written for
	Chip   string `json:"chip"`
	// GMBytes is the program's device memory (its buffers); DeviceBytes adds the
	// queues' buffers, placed after it.
	GMBytes     int `json:"gm_bytes"`
	DeviceBytes int `json:"device_bytes"`
	// WorkspaceBytes are the last of GMBytes: the intermediates, whose stores the
	// L2 holds until the run ends (written back rather than through).
	WorkspaceBytes int             `json:"workspace_bytes"`
	Runtime        map[string]bool `json:"runtime"`
	Buffers        []PTOBuffer     `json:"buffers"`
	Inputs         []int           `json:"inputs"`  // buffer ids, in the program's input order
	Outputs        []int           `json:"outputs"` // buffer ids, in its output order
	Tasks          []PTOTask       `json:"tasks"`
}

// PTOBuffer is one GM buffer of the plan.
type PTOBuffer struct {
	ID     int    `json:"id"`
	Role   string `json:"role"` // input, constant, output, workspace, queue
	Name   string `json:"name"`
	DType  string `json:"dtype"`
	Shape  []int  `json:"shape"`
	Elems  int    `json:"elems"`
	Bytes  int    `json:"bytes"`
	Offset int    `json:"offset"` // byte offset in device memory
	Data   string `json:"data,omitempty"`
}

// PTOTask is one task: its kernel's functions and the buffers they bind.
type PTOTask struct {
	Name string `json:"name"`
	// Core is cube, vector or mixed (a cube and Vectors vector cores per block).
	Core    string            `json:"core"`
	Blocks  int               `json:"blocks"`
	Vectors int               `json:"vectors,omitempty"`
	Deps    []int             `json:"deps"`      // the tasks producing its inputs
	Waits   []int             `json:"waits_for"` // every earlier task it must follow (deps and GM reuse)
	Files   map[string]string `json:"files"`     // form -> file
	// WeightPrep marks a task that computes from weights only: a runtime may run it
	// once and keep its results.
	WeightPrep bool          `json:"weight_prep,omitempty"`
	Functions  []PTOFunction `json:"functions"`
	Queues     []PTOQueue    `json:"queues,omitempty"`
}

// PTOFunction is one kernel function of a task.
type PTOFunction struct {
	Name string   `json:"name"`
	Core string   `json:"core"`
	Args []PTOArg `json:"args"`
}

// PTOArg is one argument of a function.
type PTOArg struct {
	Kind   string `json:"kind"` // gm, queue, scalar
	Name   string `json:"name"`
	Buffer int    `json:"buffer"` // the buffer it binds (gm, queue), or -1
	DType  string `json:"dtype,omitempty"`
	Elems  int    `json:"elems,omitempty"`
	Offset int    `json:"offset,omitempty"` // byte offset of the bound buffer
	Access string `json:"access,omitempty"` // read, write, readwrite (gm)
	Queue  int    `json:"queue,omitempty"`
	// A scalar is the integer at element Element of buffer Source (a dynamic size).
	Source  int `json:"source,omitempty"`
	Element int `json:"element,omitempty"`
}

// PTOQueue is a queue of a mixed task: its buffer and the cross-core events that
// guard its two slots.
type PTOQueue struct {
	Queue     int    `json:"queue"`
	Buffer    int    `json:"buffer"`
	DType     string `json:"dtype"`
	Rows      int    `json:"rows"`
	Cols      int    `json:"cols"`
	Slots     int    `json:"slots"`
	FullEvent int    `json:"full_event"`
	FreeEvent int    `json:"free_event"`
	Producer  string `json:"producer"`
}

// PTOExport is a program written as PTO-AS.
type PTOExport struct {
	Manifest PTOManifest
	Files    map[string][]byte // file name -> contents (.pto modules, constants' bytes)
	Kernels  []PTOKernelInfo
}

// PTOKernelInfo is what the export of one task gives, for reports.
type PTOKernelInfo struct {
	Task      string
	Files     map[string]string // form -> file
	Lines     map[string]int    // form -> lines of text
	Functions int
	Flags     int // set_flags of the manual form
}

// ExportPTO writes every task of the program in both forms and the manifest. bound
// gives the bytes of inputs (by position) that the manifest makes constants: tensors a
// trace captured, which the caller binds itself.
func (e *Executable) ExportPTO(bound map[int][]byte) (*PTOExport, error) {
	rt := e.runtime
	if e.stopAfter != "" {
		return nil, core.Errorf(core.ValueError, "the program was compiled with StopAfter=%q and has no machine programs to export", e.stopAfter)
	}
	ex := e.exec
	tg := ex.Blocks.Tiles
	out := &PTOExport{Files: map[string][]byte{}}
	m := &out.Manifest
	m.Format, m.PTOAS, m.Chip, m.GMBytes, m.WorkspaceBytes = PTOManifestFormat, "0.1.1", e.chip.Name, ex.GMBytes, ex.WorkspaceBytes
	m.Runtime = map[string]bool{"concurrent_tasks": rt.ConcurrentTasks(), "overlap_launch": rt.OverlapLaunch(), "prefetch_l2": rt.PrefetchL2(),
		"balance_blocks": rt.BalanceBlocks(), "early_start": rt.EarlyStart()}
	used := map[int]bool{}
	for _, t := range tg.Params {
		used[t] = true
	}
	for _, t := range tg.Outputs {
		used[t] = true
	}
	for _, task := range ex.Tasks {
		for _, a := range task.Args {
			used[a] = true
		}
	}
	constant := map[int][]byte{} // tensor -> its bytes
	first := len(tg.Params) - len(e.constants)
	for i, data := range e.constants {
		constant[tg.Params[first+i]] = data
	}
	for i, data := range bound {
		if i < 0 || i >= first {
			return nil, core.Errorf(core.ValueError, "bound input %d: the program has %d inputs", i, first)
		}
		constant[tg.Params[i]] = data
	}
	role := func(t int) string {
		switch {
		case tg.Tensors[t].Role == RoleOutput:
			return "output"
		case tg.Tensors[t].Role == RoleInput:
			if _, ok := constant[t]; ok {
				return "constant"
			}
			return "input"
		}
		return "workspace"
	}
	var ids []int
	for t := range used {
		ids = append(ids, t)
	}
	sort.Ints(ids)
	for _, t := range ids {
		typ := tg.Tensors[t].Type
		b := PTOBuffer{ID: t, Role: role(t), Name: tensorName(tg, t), DType: typ.DType.LongName(), Shape: shapeInts(typ.Shape),
			Elems: typ.Shape.NumElements(), Bytes: typ.Bytes(), Offset: ex.Buffers[t].Offset}
		if data, ok := constant[t]; ok {
			b.Data = fmt.Sprintf("constant_%d.bin", t)
			out.Files[b.Data] = data
		}
		m.Buffers = append(m.Buffers, b)
	}
	for _, t := range tg.Params[:first] {
		if _, ok := constant[t]; !ok {
			m.Inputs = append(m.Inputs, t)
		}
	}
	m.Outputs = append(m.Outputs, tg.Outputs...)
	next := alignUp(ex.GMBytes, gmAlign)
	hz := ex.Hazards()
	for k, task := range ex.Tasks {
		pt, info, err := e.exportTask(out, task, &next)
		if err != nil {
			return nil, err
		}
		pt.Deps = append([]int{}, task.Deps...)
		pt.Waits = append([]int{}, hz[k]...)
		pt.WeightPrep = ex.WeightPrep(task)
		m.Tasks = append(m.Tasks, *pt)
		out.Kernels = append(out.Kernels, info)
	}
	m.DeviceBytes = next
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, core.Errorf(core.InternalError, "manifest: %v", err)
	}
	out.Files["manifest.json"] = append(data, '\n')
	return out, nil
}

func alignUp(n, a int) int { return (n + a - 1) / a * a }

func shapeInts(s core.Shape) []int {
	out := make([]int, len(s))
	for i, d := range s {
		out[i] = d
	}
	return out
}

func tensorName(tg *TileGraph, t int) string {
	return fmt.Sprintf("t%d", t)
}

// exportTask writes task's two forms and its manifest entry; queue buffers are placed
// from *next on.
func (e *Executable) exportTask(out *PTOExport, task *Task, next *int) (*PTOTask, PTOKernelInfo, error) {
	info := PTOKernelInfo{Task: task.Name, Files: map[string]string{}, Lines: map[string]int{}}
	auto, err := ptoas.WriteTask(ptoas.Task{Name: task.Name, Programs: task.Programs, Vectors: task.Vectors})
	if err != nil {
		return nil, info, core.Errorf(core.CompileError, "%v", err)
	}
	manual, err := ptoas.WriteTask(ptoas.ManualTask(task.Name, task.Machine, task.Vectors))
	if err != nil {
		return nil, info, core.Errorf(core.CompileError, "%v", err)
	}
	base := fileName(task.Name)
	for form, mod := range map[string]*ptoas.Module{"auto": auto, "manual": manual} {
		name := base + ".pto"
		if form == "manual" {
			name = base + ".manual.pto"
		}
		out.Files[name] = []byte(mod.Text)
		info.Files[form] = name
		info.Lines[form] = countLines(mod.Text)
	}
	info.Functions, info.Flags = len(auto.Functions), manual.Flags
	pt := &PTOTask{Name: task.Name, Core: task.Core.String(), Blocks: len(task.Programs) / task.GroupSize(), Files: info.Files}
	if task.Vectors > 0 {
		pt.Core, pt.Vectors = "mixed", task.Vectors
	}
	queueBuf := map[int]int{}
	for _, q := range auto.Queues {
		id := -1 - len(out.Manifest.Buffers)
		b := PTOBuffer{ID: id, Role: "queue", Name: fmt.Sprintf("%s_queue%d", task.Name, q.ID), DType: ptoDTypeName(q.DType),
			Shape: []int{q.Elems}, Elems: q.Elems, Bytes: q.Bytes, Offset: *next}
		*next = alignUp(*next+q.Bytes, gmAlign)
		out.Manifest.Buffers = append(out.Manifest.Buffers, b)
		queueBuf[q.ID] = id
		producer := "vector"
		if q.Producer == isa.Cube {
			producer = "cube"
		}
		pt.Queues = append(pt.Queues, PTOQueue{Queue: q.ID, Buffer: id, DType: q.DType, Rows: q.Rows, Cols: q.Cols, Slots: 2,
			FullEvent: q.FullEvent, FreeEvent: q.FreeEvent, Producer: producer})
	}
	access := ParamAccess(task.Programs)
	for _, f := range auto.Functions {
		pf := PTOFunction{Name: f.Name, Core: f.Core.String()}
		for _, a := range f.Args {
			var arg PTOArg
			switch {
			case a.Queue >= 0:
				arg = PTOArg{Kind: "queue", Name: a.Name, Buffer: queueBuf[a.Queue], Queue: a.Queue}
			case a.Param >= 0:
				t := task.Args[a.Param]
				prm := task.Programs[0].Params[a.Param]
				arg = PTOArg{Kind: "gm", Name: a.Name, Buffer: t, DType: prm.DType.LongName(), Elems: prm.Elems,
					Offset: e.exec.Buffers[t].Offset, Access: access[a.Param]}
			default:
				arg = PTOArg{Kind: "scalar", Name: a.Name, Buffer: -1, DType: "index", Source: task.Args[a.Source], Element: a.Elem}
			}
			pf.Args = append(pf.Args, arg)
		}
		pt.Functions = append(pt.Functions, pf)
	}
	return pt, info, nil
}

func ptoDTypeName(el string) string {
	switch el {
	case "f32":
		return dtype.Float32.LongName()
	case "f16":
		return dtype.Float16.LongName()
	case "bf16":
		return dtype.BFloat16.LongName()
	case "i8":
		return dtype.Int8.LongName()
	case "i32":
		return dtype.Int32.LongName()
	}
	return el
}

// ParamAccess says how programs (a task's, of one param list) use each param: read,
// write, readwrite, or "" when none does.
func ParamAccess(progs []*isa.Program) []string {
	if len(progs) == 0 {
		return nil
	}
	read := make([]bool, len(progs[0].Params))
	write := make([]bool, len(progs[0].Params))
	for _, p := range progs {
		for _, in := range p.Body {
			for i, a := range in.Args {
				if a.Kind != isa.KindGM || a.GM.Param >= len(read) {
					continue
				}
				if i == 0 && (in.Op == isa.TSTORE || in.Op == isa.TSTORE_FP || in.Op == isa.MSCATTER) {
					write[a.GM.Param] = true
				} else {
					read[a.GM.Param] = true
				}
			}
		}
	}
	out := make([]string, len(read))
	for i := range out {
		switch {
		case read[i] && write[i]:
			out[i] = "readwrite"
		case write[i]:
			out[i] = "write"
		case read[i]:
			out[i] = "read"
		}
	}
	return out
}

// fileName makes a task name a file name.
func fileName(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !(c == '_' || c == '-' || c == '.' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "kernel"
	}
	return string(b)
}

func countLines(s string) int {
	n := 0
	for _, c := range s {
		if c == '\n' {
			n++
		}
	}
	return n
}
