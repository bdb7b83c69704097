package isa

// Mode is an instruction modifier, written as a suffix of the opcode in the text
// (`tcmp.lt`, `tcvt.floor`, `tstore.add`, `ttri.upper`). The published ISA passes these
// as template parameters of one instruction; keeping them out of the opcode list keeps
// one opcode per published name. OpInfo.Modes lists the modes an opcode takes;
// ModeNone is its default behaviour (or, where OpInfo.ModeRequired, invalid).
type Mode uint8

const (
	ModeNone Mode = iota

	// Compare predicates of TCMP and TCMPS (false when either side is NaN, except ne).
	CmpEQ
	CmpNE
	CmpLT
	CmpLE
	CmpGT
	CmpGE

	// Rounding modes of TCVT. ModeNone rounds to nearest even for float results and
	// truncates toward zero for integer results, as TCVT always has.
	RoundRint  // to nearest, ties to even
	RoundAway  // to nearest, ties away from zero (C round)
	RoundFloor // toward -inf
	RoundCeil  // toward +inf
	RoundTrunc // toward zero
	RoundOdd   // to the neighbour with an odd last digit when inexact (von Neumann)

	// AtomicAdd makes TSTORE add the tile into GM instead of overwriting it.
	AtomicAdd

	// TriUpper makes TTRI build an upper instead of a lower triangle.
	TriUpper

	// StoreRelu makes a TSTORE from Acc apply max(x, 0) in the fixpipe on the way out
	// (the fixpipe's activation stage), before rounding to the GM dtype.
	StoreRelu

	numModes
)

var modeNames = [...]string{
	ModeNone: "",
	CmpEQ:    "eq", CmpNE: "ne", CmpLT: "lt", CmpLE: "le", CmpGT: "gt", CmpGE: "ge",
	RoundRint: "rint", RoundAway: "round", RoundFloor: "floor", RoundCeil: "ceil", RoundTrunc: "trunc", RoundOdd: "odd",
	AtomicAdd: "add",
	TriUpper:  "upper",
	StoreRelu: "relu",
}

// String is the suffix spelling ("" for ModeNone).
func (m Mode) String() string {
	if m < numModes {
		return modeNames[m]
	}
	return "mode?"
}

// ParseMode is the inverse of Mode.String for the modes other than ModeNone.
func ParseMode(s string) (Mode, bool) {
	for i := Mode(1); i < numModes; i++ {
		if modeNames[i] == s {
			return i, true
		}
	}
	return ModeNone, false
}

// The mode sets of the opcode table.
var (
	compareModes  = []Mode{CmpEQ, CmpNE, CmpLT, CmpLE, CmpGT, CmpGE}
	roundingModes = []Mode{RoundRint, RoundAway, RoundFloor, RoundCeil, RoundTrunc, RoundOdd}
	storeModes    = []Mode{AtomicAdd, StoreRelu}
	triangleModes = []Mode{TriUpper}
)

// Takes reports whether op accepts mode m (ModeNone unless the opcode requires one).
func (op Opcode) Takes(m Mode) bool {
	info := op.Info()
	if m == ModeNone {
		return !info.ModeRequired
	}
	for _, x := range info.Modes {
		if x == m {
			return true
		}
	}
	return false
}
