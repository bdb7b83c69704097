package session

import "pypto/lower"

// tileChooser is a Program compiled for a chip, whose tile ops have chosen tiles.
type tileChooser interface {
	TileChoices(run *lower.RunStats) []lower.TileChoice
}

func (p loweredProgram) TileChoices(run *lower.RunStats) []lower.TileChoice {
	return p.exe.TileChoices(run)
}

// TileChoices are the tiles of the executor's program (of its most recent
// specialisation when it is symbolic); false when there is none yet, or on the
// reference device. A concrete executor that has run also gives each op's measured
// time in its last run.
func (e *Executor) TileChoices() ([]lower.TileChoice, bool) {
	prog := e.prog
	var run *lower.RunStats
	if prog == nil {
		if sp := e.specs.latest(); sp != nil {
			prog = sp.prog
		}
	} else if st, ok := e.LastStats(); ok {
		run, _ = st.Detail.(*lower.RunStats)
	}
	if tc, ok := baseProgram(prog).(tileChooser); ok {
		return tc.TileChoices(run), true
	}
	return nil, false
}
