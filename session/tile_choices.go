package session

import "pypto/lower"

// tileChooser is a Program compiled for a chip, whose tile ops have chosen tiles.
type tileChooser interface {
	TileChoices() []lower.TileChoice
}

func (p loweredProgram) TileChoices() []lower.TileChoice { return p.exe.TileChoices() }

// TileChoices are the tiles of the executor's program (of its most recent
// specialisation when it is symbolic); false when there is none yet, or on the
// reference device.
func (e *Executor) TileChoices() ([]lower.TileChoice, bool) {
	prog := e.prog
	if prog == nil {
		if sp := e.specs.latest(); sp != nil {
			prog = sp.prog
		}
	}
	if tc, ok := prog.(tileChooser); ok {
		return tc.TileChoices(), true
	}
	return nil, false
}
