package isa

// Opcode identifies an instruction; its properties live in the Opcodes table.
//
// The numbering is part of the binary encoding (binary.go): new opcodes are appended,
// never inserted, and a number is never reused.
type Opcode uint16

const (
	OpInvalid Opcode = iota
	TLOAD
	TSTORE
	TMOV
	TEXTRACT
	TMATMUL
	TMATMUL_ACC
	TADD
	TMUL
	TRELU
	TCVT
	SET_FLAG
	WAIT_FLAG
	TSYNC

	// Memory.
	TSTORE_FP
	TPREFETCH
	MGATHER
	MSCATTER

	// Matrix.
	TMATMUL_BIAS
	TMATMUL_MX
	TGEMV
	TGEMV_ACC
	TGEMV_BIAS
	TGEMV_MX

	// Data movement and layout.
	TMOV_FP
	TINSERT
	TRESHAPE
	TTRANS
	TIMG2COL
	TFILLPAD
	TASSIGN

	// Elementwise tile-tile.
	TSUB
	TDIV
	TMIN
	TMAX
	TREM
	TFMOD
	TABS
	TNEG
	TEXP
	TLOG
	TSQRT
	TRSQRT
	TRECIP
	TPRELU
	TAND
	TOR
	TXOR
	TNOT
	TSHL
	TSHR
	TCMP
	TSEL
	TADDC
	TSUBC

	// Tile-scalar.
	TADDS
	TSUBS
	TMULS
	TDIVS
	TMINS
	TMAXS
	TFMODS
	TREMS
	TANDS
	TORS
	TXORS
	TSHLS
	TSHRS
	TLRELU
	TCMPS
	TSELS
	TEXPANDS

	// Reductions.
	TROWSUM
	TROWPROD
	TROWMAX
	TROWMIN
	TCOLSUM
	TCOLPROD
	TCOLMAX
	TCOLMIN

	// Broadcast.
	TROWEXPAND
	TROWEXPANDADD
	TROWEXPANDSUB
	TROWEXPANDMUL
	TROWEXPANDDIV
	TROWEXPANDMAX
	TROWEXPANDMIN
	TROWEXPANDEXPDIF
	TCOLEXPAND
	TCOLEXPANDADD
	TCOLEXPANDSUB
	TCOLEXPANDMUL
	TCOLEXPANDDIV
	TCOLEXPANDMAX
	TCOLEXPANDMIN
	TCOLEXPANDEXPDIF

	// Gather / scatter, sorting, generators, partial ops, quantisation, debug.
	TGATHER
	TGATHERB
	TSCATTER
	TSORT32
	TMRGSORT
	TCI
	TTRI
	TPARTADD
	TPARTMUL
	TPARTMAX
	TPARTMIN
	TQUANT
	TDEQUANT
	TPRINT

	// Queues between the cube and the vector cores.
	TPUSH
	TPOP
	TFREE

	// Scalar control.
	SMOV
	SADD
	SSUB
	SMUL
	SDIV
	SREM
	SMIN
	SMAX
	SLD
	LOOP
	ENDLOOP

	numOpcodes
)

// PipeClass says which pipe runs an instruction. Some instructions (TMOV, TSTORE) run on
// a pipe that depends on their operands' locations; PipeClassByLocation marks those and
// the device backend resolves them with its chip's routing.
type PipeClass uint8

const (
	PipeClassFixed      PipeClass = iota // always OpInfo.Pipe
	PipeClassByLocation                  // chosen from the operand locations
	PipeClassFlagSource                  // the first pipe operand (SET_FLAG)
	PipeClassFlagDest                    // the second pipe operand (WAIT_FLAG)
	PipeClassBarrier                     // the pipe operand (TSYNC)
)

// OpClass groups opcodes as the published ISA does (docs/isa.md has one table each).
type OpClass uint8

const (
	ClassInvalid OpClass = iota
	ClassMemory
	ClassMatrix
	ClassMove
	ClassElementwise
	ClassTileScalar
	ClassReduce
	ClassBroadcast
	ClassOther
	ClassQueue
	ClassSync
	ClassScalar
	NumOpClasses
)

var classNames = [...]string{
	ClassInvalid: "invalid", ClassMemory: "Memory", ClassMatrix: "Matrix", ClassMove: "Data movement and layout",
	ClassElementwise: "Elementwise tile-tile", ClassTileScalar: "Tile-scalar", ClassReduce: "Reductions",
	ClassBroadcast: "Broadcast", ClassOther: "Gather, scatter, sorting, generators, partial ops, quantisation, debug",
	ClassQueue: "Queues between cores", ClassSync: "Synchronisation", ClassScalar: "Scalar control",
}

func (c OpClass) String() string {
	if c < NumOpClasses {
		return classNames[c]
	}
	return "class?"
}

// OpInfo is one row of the opcode table: the single source of truth for an
// instruction's spelling, operand kinds (destination first), pipe, modes, type rule
// and meaning. docs/isa.md is generated from it; verify_ops.go implements Rule and
// interp*.go implements Doc.
type OpInfo struct {
	Name      string
	Class     OpClass
	Operands  []OperandKind
	PipeClass PipeClass
	Pipe      Pipe // meaningful for PipeClassFixed
	// Modes lists the modes (Instr.Mode) the opcode takes besides ModeNone; with
	// ModeRequired, ModeNone is not allowed.
	Modes        []Mode
	ModeRequired bool
	Rule         string // the type rule in words (operand locations, dtypes, shapes)
	Doc          string // what it computes
}

// Info returns the table row of op.
func (op Opcode) Info() *OpInfo {
	if op < numOpcodes {
		return &Opcodes[op]
	}
	return &Opcodes[OpInvalid]
}

func (op Opcode) String() string { return op.Info().Name }

// LookupOpcode finds an opcode by its assembly name (without a mode suffix).
func LookupOpcode(name string) (Opcode, bool) {
	for i := Opcode(1); i < numOpcodes; i++ {
		if Opcodes[i].Name == name {
			return i, true
		}
	}
	return OpInvalid, false
}

// NumOpcodes is the number of defined opcodes plus one for OpInvalid (for loops
// `for op := Opcode(1); int(op) < NumOpcodes(); op++`).
func NumOpcodes() int { return int(numOpcodes) }
