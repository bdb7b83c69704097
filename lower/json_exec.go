package lower

// TaskJSON is one task of an execution graph.
type TaskJSON struct {
	ID      int    `json:"id"`
	Name    string `json:"name"`
	Kernel  int    `json:"kernel"`
	Core    string `json:"core"`
	Blocks  int    `json:"blocks"`
	Vectors int    `json:"vectors"` // vector programs per block of a mixed task
	Deps    []int  `json:"deps"`
	Args    []int  `json:"args"` // tile-graph tensors bound to the programs' params
	// Programs names the task's PTO programs, block after block.
	Programs []string `json:"programs"`
}

// BufferJSON places one GM tensor.
type BufferJSON struct {
	Tensor int `json:"tensor"`
	Offset int `json:"offset"`
	Bytes  int `json:"bytes"`
}

// ExecGraphJSON is an execution graph in its JSON form (its tile and block graphs and
// its programs are exported by their own levels).
type ExecGraphJSON struct {
	Tasks            []TaskJSON   `json:"tasks"`
	Buffers          []BufferJSON `json:"buffers"`
	GMBytes          int          `json:"gm_bytes"`
	WorkspaceBytes   int          `json:"workspace_bytes"`
	WorkspaceNoReuse int          `json:"workspace_no_reuse_bytes"`
}

// ExportJSON gives the execution graph's JSON form.
func (g *ExecGraph) ExportJSON() ExecGraphJSON {
	out := ExecGraphJSON{Tasks: []TaskJSON{}, Buffers: []BufferJSON{}, GMBytes: g.GMBytes,
		WorkspaceBytes: g.WorkspaceBytes, WorkspaceNoReuse: g.WorkspaceNoReuse}
	for i, t := range g.Tasks {
		tj := TaskJSON{ID: i, Name: t.Name, Kernel: t.Kernel, Core: t.Core.String(), Blocks: len(t.Programs) / t.GroupSize(),
			Vectors: t.Vectors, Deps: ints(t.Deps), Args: ints(t.Args), Programs: make([]string, len(t.Programs))}
		for j, p := range t.Programs {
			tj.Programs[j] = p.Name
		}
		out.Tasks = append(out.Tasks, tj)
	}
	for i, b := range g.Buffers {
		out.Buffers = append(out.Buffers, BufferJSON{Tensor: i, Offset: b.Offset, Bytes: b.Bytes})
	}
	return out
}
