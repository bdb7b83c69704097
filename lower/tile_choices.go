package lower

// TileChoice is the tile the compiler chose for one tile op, as the Tile level's
// recommendation (Python's p.recommend_tile): an expert starts from it and overrides
// it with p.TileConfig.
type TileChoice struct {
	Op      string `json:"op"`   // the op its kernel runs (fused ops: "fused", "fused_rows", ...)
	Kind    string `json:"kind"` // the kernel's tile loop: matmul, elementwise, reduce, rows, ...
	Problem []int  `json:"problem"`
	Tile    []int  `json:"tile"`
	Grid    []int  `json:"grid"`
	Reason  string `json:"reason"` // starts with "given" for a tile the program fixed
	// EstimatedCycles is the device's estimate of the op's task (the one the tile
	// search minimises, tiling_estimate.go) for matmul, attention and row kernels; 0
	// for the other kernels, whose tiles follow fixed rules.
	EstimatedCycles float64 `json:"estimated_cycles"`
	EstimatedMs     float64 `json:"estimated_ms"`
	// MeasuredCycles is the simulated time of the op's task in a run (0: not run).
	MeasuredCycles int64   `json:"measured_cycles"`
	MeasuredMs     float64 `json:"measured_ms"`
	File           string  `json:"file,omitempty"` // the program line that wrote the op
	Line           int     `json:"line,omitempty"`
	// DynamicRows says that the kernel computes only the rows of its output that the
	// run's sizes make valid (TileOp.Dynamic), not the whole padded bound.
	DynamicRows bool `json:"dynamic_rows"`
}

// TileChoices lists the tile of every tile op of the compiled program, in execution
// order, with the time each op's task took in run when run is not nil (a run of this
// program).
func (e *Executable) TileChoices(run *RunStats) []TileChoice {
	tg := e.exec.Blocks.Tiles
	out := make([]TileChoice, 0, len(tg.Ops))
	for _, op := range tg.Ops {
		c := TileChoice{Op: op.Op, Kind: op.Kind.String(), Problem: op.Problem, Tile: op.Tile, Grid: op.Grid,
			Reason: op.Reason, File: op.Loc.File, Line: op.Loc.Line, DynamicRows: op.Dynamic != nil}
		if c.EstimatedCycles = estimateOp(e.chip, tg, op); c.EstimatedCycles > 0 {
			c.EstimatedMs = c.EstimatedCycles / e.chip.ClockHz * 1e3
		}
		out = append(out, c)
	}
	if run != nil && len(run.Tasks) == len(e.exec.Tasks) {
		for i, task := range e.exec.Tasks { // one task per kernel, one kernel per tile op
			if st := run.Tasks[i].Stats; st != nil && task.Kernel < len(out) {
				out[task.Kernel].MeasuredCycles = st.Cycles
				out[task.Kernel].MeasuredMs = float64(st.Cycles) / e.chip.ClockHz * 1e3
			}
		}
	}
	return out
}
