package isa

// Opcode identifies an instruction; its properties live in the Opcodes table.
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

// OpInfo is one row of the opcode table: the single source of truth for an
// instruction's spelling, operand kinds (destination first), pipe and meaning.
type OpInfo struct {
	Name      string
	Operands  []OperandKind
	PipeClass PipeClass
	Pipe      Pipe // meaningful for PipeClassFixed
	Doc       string
}

var (
	tile = KindTile
	gm   = KindGM
	imm  = KindImm
	pipe = KindPipe
)

// Opcodes is the opcode table, indexed by Opcode.
var Opcodes = [numOpcodes]OpInfo{
	OpInvalid:   {Name: "invalid"},
	TLOAD:       {"tload", []OperandKind{tile, gm}, PipeClassFixed, PipeMTE2, "dst = src: copy a GM window into a tile; tile elements outside the window are set to zero"},
	TSTORE:      {"tstore", []OperandKind{gm, tile}, PipeClassByLocation, PipeInvalid, "dst = src: copy the top-left window of a tile to GM, converting to the GM dtype (rounding to nearest even); from Vec on MTE3, from Acc on FIX"},
	TMOV:        {"tmov", []OperandKind{tile, tile}, PipeClassByLocation, PipeInvalid, "dst = src: copy a whole tile between locations (Mat->Left/Right on MTE1, Acc->Vec on FIX, Vec->Vec on V), converting dtype if they differ"},
	TEXTRACT:    {"textract", []OperandKind{tile, tile, imm, imm}, PipeClassFixed, PipeMTE1, "dst = src[row:row+dst.rows, col:col+dst.cols]: copy a sub-tile of a Mat tile into Left/Right"},
	TMATMUL:     {"tmatmul", []OperandKind{tile, tile, tile}, PipeClassFixed, PipeM, "dst = a @ b: Left x Right -> Acc, products accumulated in fp32 (int32 for int8)"},
	TMATMUL_ACC: {"tmatmul.acc", []OperandKind{tile, tile, tile}, PipeClassFixed, PipeM, "dst += a @ b: accumulate into an Acc tile"},
	TADD:        {"tadd", []OperandKind{tile, tile, tile}, PipeClassFixed, PipeV, "dst = a + b elementwise, rounded to dst's dtype"},
	TMUL:        {"tmul", []OperandKind{tile, tile, tile}, PipeClassFixed, PipeV, "dst = a * b elementwise, rounded to dst's dtype"},
	TRELU:       {"trelu", []OperandKind{tile, tile}, PipeClassFixed, PipeV, "dst = max(a, 0) elementwise (NaN stays NaN)"},
	TCVT:        {"tcvt", []OperandKind{tile, tile}, PipeClassFixed, PipeV, "dst = convert(src): round to nearest even for floats, truncate toward zero for integers"},
	SET_FLAG:    {"set_flag", []OperandKind{pipe, pipe, imm}, PipeClassFlagSource, PipeInvalid, "set event id from pipe src to pipe dst once every earlier src instruction has finished"},
	WAIT_FLAG:   {"wait_flag", []OperandKind{pipe, pipe, imm}, PipeClassFlagDest, PipeInvalid, "block pipe dst until event id from src has been set, then consume it"},
	TSYNC:       {"tsync", []OperandKind{pipe}, PipeClassBarrier, PipeInvalid, "barrier: later instructions of the pipe (or of every pipe, for 'all') wait for earlier ones to finish"},
}

// Info returns the table row of op.
func (op Opcode) Info() *OpInfo {
	if op < numOpcodes {
		return &Opcodes[op]
	}
	return &Opcodes[OpInvalid]
}

func (op Opcode) String() string { return op.Info().Name }

// LookupOpcode finds an opcode by its assembly name.
func LookupOpcode(name string) (Opcode, bool) {
	for i := Opcode(1); i < numOpcodes; i++ {
		if Opcodes[i].Name == name {
			return i, true
		}
	}
	return OpInvalid, false
}

// NumOpcodes is the number of defined opcodes (for table-driven tests).
func NumOpcodes() int { return int(numOpcodes) }
