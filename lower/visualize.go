package lower

import (
	"time"

	"pypto/core"
	"pypto/internal/linediff"
	"pypto/isa"
)

// What the visualisation shows of a compilation (Options.Visualize): every level in
// its JSON form (json_*.go, one exporter beside each text form), the device's cost
// estimate of every kernel, the first block's PTO and machine programs of every task,
// and the pass list with each pass's time and the difference it made to the text of
// the level it left. The diffs are of the text forms (compilation.text: the exec
// graph's summary form, one line per machine program for the backend), so they read
// as the dumps do.

// passRecord is one pass as the visualisation lists it.
type passRecord struct {
	Name     string
	From, To Level // the level before and after the pass
	Duration time.Duration
	Diff     linediff.Diff
}

// recorder keeps the text of each level as the last pass left it.
type recorder struct {
	level Level
	text  map[Level]string
}

func (r *recorder) before(c *compilation, p Pass) {
	if r.text == nil {
		r.level, r.text = LevelTensor, map[Level]string{LevelTensor: core.Format(c.graph)}
	}
	if p.Produces == LevelTile && c.lowered == nil {
		c.lowered = c.graph // the graph the tile ops' Node values name
	}
}

func (r *recorder) after(c *compilation, p Pass, d time.Duration) {
	text := c.text(p.Produces, false) // summaries where the full text is the programs
	old := ""
	if p.Produces == r.level {
		old = r.text[r.level]
	}
	c.records = append(c.records, passRecord{Name: p.Name, From: r.level, To: p.Produces, Duration: d,
		Diff: linediff.Lines(old, text, linediff.DefaultLimits)})
	r.level, r.text[p.Produces] = p.Produces, text
}

// PassJSON is one pass of the compilation in the visualisation.
type PassJSON struct {
	Name   string        `json:"name"`
	From   string        `json:"from"` // the level before it
	Level  string        `json:"level"`
	Millis float64       `json:"ms"`
	Diff   linediff.Diff `json:"diff"`
}

// EstimateJSON is the device's estimate of one tile op's task (the cost model the tile
// search uses: device.EstimateTask on the blocks the code generator emits).
type EstimateJSON struct {
	Cycles int64   `json:"cycles"`
	Micros float64 `json:"us"` // at the chip's clock
	Error  string  `json:"error,omitempty"`
}

// ProgramJSON is the first block of a task: its PTO program(s) and machine program(s)
// (a mixed task's cube and vector programs), as text.
type ProgramJSON struct {
	Task    int      `json:"task"`
	Names   []string `json:"names"`
	Cores   []string `json:"cores"`
	PTO     []string `json:"pto"`
	Machine []string `json:"machine"`
	Instrs  []int    `json:"instructions"` // machine instructions of each program
}

// Visualization is everything the viewer shows of one compiled program.
type Visualization struct {
	Name          string         `json:"name"`
	Chip          string         `json:"chip"`
	ClockHz       float64        `json:"clock_hz"`
	CompileMillis float64        `json:"compile_ms"`
	Input         core.GraphJSON `json:"input"`  // the Tensor Graph as traced
	Tensor        core.GraphJSON `json:"tensor"` // the Tensor Graph the tile pass lowered
	Tile          TileGraphJSON  `json:"tile"`
	Block         BlockGraphJSON `json:"block"`
	Exec          ExecGraphJSON  `json:"exec"`
	Estimates     []EstimateJSON `json:"estimates"` // by tile op
	Programs      []ProgramJSON  `json:"programs"`  // by task
	Passes        []PassJSON     `json:"passes"`
}

// Visualization exports the program for the viewer. It needs Options.Visualize.
func (e *Executable) Visualization() (*Visualization, error) {
	if e.lowered == nil {
		return nil, core.Errorf(core.ValueError, "the program was compiled without visualisation").
			Suggest("compile with p.CompileConfig(enable_visualization=True)")
	}
	tg := e.exec.Blocks.Tiles
	v := &Visualization{Name: tg.Name, Chip: e.chip.Name, ClockHz: e.chip.ClockHz,
		CompileMillis: float64(e.compile.Microseconds()) / 1e3, Input: core.ExportJSON(e.graph),
		Tensor: core.ExportJSON(e.lowered), Tile: tg.ExportJSON(), Block: e.exec.Blocks.ExportJSON(),
		Exec: e.exec.ExportJSON(), Estimates: []EstimateJSON{}, Programs: []ProgramJSON{}, Passes: []PassJSON{}}
	est := newEstimator(e.chip)
	for _, op := range tg.Ops {
		cy, err := est.cycles(tg, op)
		ej := EstimateJSON{Cycles: cy, Micros: float64(cy) / e.chip.ClockHz * 1e6}
		if err != nil {
			ej = EstimateJSON{Cycles: -1, Error: err.Error()}
		}
		v.Estimates = append(v.Estimates, ej)
	}
	for i, t := range e.exec.Tasks {
		pj := ProgramJSON{Task: i, Names: []string{}, Cores: []string{}, PTO: []string{}, Machine: []string{}, Instrs: []int{}}
		if len(t.Programs) > 0 {
			for j, p := range t.Group(0) {
				pj.Names = append(pj.Names, p.Name)
				pj.Cores = append(pj.Cores, p.Core.String())
				pj.PTO = append(pj.PTO, isa.Format(p))
				if j < len(t.Machine) {
					pj.Machine = append(pj.Machine, t.Machine[j].String())
					pj.Instrs = append(pj.Instrs, len(t.Machine[j].Instrs))
				}
			}
		}
		v.Programs = append(v.Programs, pj)
	}
	for _, r := range e.passes {
		v.Passes = append(v.Passes, PassJSON{Name: r.Name, From: string(r.From), Level: string(r.To),
			Millis: float64(r.Duration.Microseconds()) / 1e3, Diff: r.Diff})
	}
	return v, nil
}
