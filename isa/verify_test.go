package isa

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/dtype"
)

// The verifier tests write programs as text: a declaration header per core kind, plus
// each case's extra declarations and body. want is the VerifyError's Msg, "" for valid.
const cubeHeader = `kernel c cube
param %a: f16[4096]
param %o: f32[4096]
param %q: i8[4096]
param %r: i32[4096]
tile %m: mat f16[64x64]
tile %mq: mat i8[64x64]
tile %mf: mat f32[64x64]
tile %l: left f16[64x64]
tile %rt: right f16[64x64]
tile %ls: left f16[32x64]
tile %rs: right f16[64x16]
tile %lq: left i8[64x64]
tile %rq: right i8[64x64]
tile %acc: acc f32[64x64]
tile %accs: acc f32[32x16]
tile %acci: acc i32[64x64]
tile %v: vec f16[64x64]
tile %vf: vec f32[64x64]
`

const vectorHeader = `kernel v vector
param %x: f16[4096]
param %y: f32[4096]
tile %a: vec f16[16x16]
tile %b: vec f16[16x16]
tile %f: vec f32[16x16]
tile %w: vec f16[16x32]
`

type verifyCase struct {
	name     string
	header   string
	decls    string
	body     string
	capacity func(Location) int
	want     string
}

func (c verifyCase) program(t *testing.T) *Program {
	t.Helper()
	p, err := Parse(c.header + c.decls + c.body + "\nend\n")
	require.NoError(t, err)
	return p
}

func runVerifyCases(t *testing.T, cases []verifyCase) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Verify(c.program(t), c.capacity)
			if c.want == "" {
				assert.NoError(t, err)
				return
			}
			var ve *VerifyError
			require.ErrorAs(t, err, &ve)
			assert.Equal(t, c.want, ve.Msg)
		})
	}
}

func TestVerifyDeclarations(t *testing.T) {
	vecCap := func(l Location) int {
		if l == Vec {
			return 1024
		}
		return 0
	}
	runVerifyCases(t, []verifyCase{
		{name: "param of no elements", header: vectorHeader, decls: "param %e: f16[0]\n"},
		{name: "param with negative elements", header: vectorHeader, decls: "param %e: f16[-1]\n", want: "negative element count -1"},
		{name: "tile of zero rows", header: vectorHeader, decls: "tile %e: vec f16[0x16]\n", want: "shape 0x16: rows and cols must be at least 1"},
		{name: "cube core with a vec tile", header: cubeHeader, decls: "tile %e: vec f16[1x16]\n"},
		{name: "vector core with a mat tile", header: vectorHeader, decls: "tile %e: mat f16[16x16]\n", want: "a vector core has only the vec buffer, not mat"},
		{name: "acc of i32", header: cubeHeader, decls: "tile %e: acc i32[16x16]\n"},
		{name: "acc of f16", header: cubeHeader, decls: "tile %e: acc f16[16x16]\n", want: "acc tiles hold f32 or i32, not f16"},
		{name: "left of i8", header: cubeHeader, decls: "tile %e: left i8[16x32]\n"},
		{name: "right of i32", header: cubeHeader, decls: "tile %e: right i32[16x16]\n", want: "right tiles hold f16, bf16, f32 or i8, not i32"},
		{name: "vec row of 32 bytes", header: vectorHeader, decls: "tile %e: vec f32[1x8]\ntile %e2: vec i8[3x32]\n"},
		{name: "vec row of 16 bytes", header: vectorHeader, decls: "tile %e: vec f16[16x8]\n", want: "row of 8 x f16 is not a multiple of 32 bytes"},
		{name: "mat row of 48 bytes", header: cubeHeader, decls: "tile %e: mat i8[16x48]\n", want: "row of 48 x i8 is not a multiple of 32 bytes"},
		{name: "bias row of 64 bytes", header: cubeHeader, decls: "tile %e: bias f32[1x16]\n"},
		{name: "acc of 32x48", header: cubeHeader, decls: "tile %e: acc f32[32x48]\n"},
		{name: "left of 16x8", header: cubeHeader, decls: "tile %e: left f16[16x8]\n", want: "left tile shape 16x8 is not a multiple of 16x16"},
		{name: "acc of 8x16", header: cubeHeader, decls: "tile %e: acc f32[8x16]\n", want: "acc tile shape 8x16 is not a multiple of 16x16"},
		{name: "tile that just fits", header: vectorHeader, decls: "tile %e: vec f32[16x16]\n", capacity: vecCap},
		{name: "tile over capacity", header: vectorHeader, decls: "tile %e: vec f32[16x32]\n", capacity: vecCap, want: "tile needs 2048 bytes, the vec buffer holds 1024"},
		{name: "tile of absurd size", header: vectorHeader, decls: "tile %e: vec f32[4611686018427387904x8]\n", capacity: vecCap, want: "tile needs more than 9223372036854775807 bytes, the vec buffer holds 1024"},
	})
}

// Declarations that the text cannot express (Parse rejects them) are built in Go.
func TestVerifyMalformedDeclarations(t *testing.T) {
	base := func() *Program {
		p, err := Parse(vectorHeader + "end\n")
		require.NoError(t, err)
		return p
	}
	cases := []struct {
		name   string
		mutate func(p *Program)
		want   string
	}{
		{"invalid core", func(p *Program) { p.Core = CoreInvalid }, "kernel v: core kind is core?, want cube or vector"},
		{"empty param name", func(p *Program) { p.Params[1].Name = "" }, `kernel v: param %"": f32[4096]: name is empty`},
		{"param and tile share a name", func(p *Program) { p.Tiles[0].Name = "x" },
			"kernel v: tile %x: vec f16[16x16]: name is already used by param %x: f16[4096]"},
		{"two tiles share a name", func(p *Program) { p.Tiles[1].Name = "a" },
			"kernel v: tile %a: vec f16[16x16]: name is already used by tile %a: vec f16[16x16]"},
		{"invalid param dtype", func(p *Program) { p.Params[0].DType = dtype.Invalid }, "kernel v: param %x: invalid[4096]: invalid dtype invalid"},
		{"invalid tile location", func(p *Program) { p.Tiles[0].Loc = 99 }, "kernel v: tile %a: loc? f16[16x16]: invalid location loc?"},
		{"invalid tile dtype", func(p *Program) { p.Tiles[0].DType = 42 }, "kernel v: tile %a: vec dtype(42)[16x16]: invalid dtype dtype(42)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := base()
			c.mutate(p)
			err := Verify(p, nil)
			require.Error(t, err)
			assert.Equal(t, c.want, err.Error())
			var ve *VerifyError
			require.ErrorAs(t, err, &ve)
			assert.Equal(t, -1, ve.Index)
		})
	}
	assert.EqualError(t, Verify(nil, nil), "kernel \"\": nil program")
}

// Instructions the text cannot express: wrong operand counts and kinds, bad indices.
func TestVerifyMalformedInstructions(t *testing.T) {
	cases := []struct {
		name string
		in   Instr
		want string
	}{
		{"undefined opcode", Instr{Op: 999}, "undefined opcode 999"},
		{"invalid opcode", Instr{Op: OpInvalid}, "undefined opcode 0"},
		{"too few operands", Instr{Op: TLOAD, Args: []Operand{TileOp(0)}}, "tload takes 2 operands (tile, gm), has 1"},
		{"operand of the wrong kind", Instr{Op: TRELU, Args: []Operand{TileOp(0), ImmOp(1)}}, "operand 2 is a imm operand, want tile"},
		{"tile out of range", Instr{Op: TRELU, Args: []Operand{TileOp(0), TileOp(4)}}, "operand 2 refers to tile 4, but the program declares 4 tiles"},
		{"negative tile", Instr{Op: TRELU, Args: []Operand{TileOp(-1), TileOp(0)}}, "operand 1 refers to tile -1, but the program declares 4 tiles"},
		{"param out of range", Instr{Op: TLOAD, Args: []Operand{TileOp(0), GMOp(GMView{Param: 2})}}, "operand 2 refers to param 2, but the program declares 2 params"},
		{"invalid pipe", Instr{Op: TSYNC, Args: []Operand{PipeOp(PipeInvalid)}}, "operand 1 is not a valid pipe"},
		{"pipe out of range", Instr{Op: TSYNC, Args: []Operand{PipeOp(77)}}, "operand 1 is not a valid pipe"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Parse(vectorHeader + "  tsync v\nend\n")
			require.NoError(t, err)
			p.Body = append(p.Body, c.in)
			err = Verify(p, nil)
			var ve *VerifyError
			require.ErrorAs(t, err, &ve)
			assert.Equal(t, 1, ve.Index)
			assert.Equal(t, c.want, ve.Msg)
			assert.Equal(t, FormatInstr(p, c.in), ve.Where)
		})
	}
}

func TestVerifyErrorNamesTheInstruction(t *testing.T) {
	p, err := Parse(vectorHeader + "  tadd %a, %a, %b\n  tadd %a, %a, %f\nend\n")
	require.NoError(t, err)
	assert.EqualError(t, Verify(p, nil), "kernel v: instr 1 `tadd %a, %a, %f`: tadd does not convert: %a is f16, %f is f32 (tcvt first)")
}

func TestVerifyPipesOnCore(t *testing.T) {
	runVerifyCases(t, []verifyCase{
		{name: "vector op on a vector core", header: vectorHeader, body: "  trelu %a, %b"},
		{name: "vector op on a cube core", header: cubeHeader, body: "  trelu %v, %v",
			want: "uses pipe v, which a cube core does not have (it has s, mte1, mte2, m, fix)"},
		{name: "acc->vec on a cube core", header: cubeHeader, body: "  tmov %v, %acc"},
		{name: "vec->vec on a cube core", header: cubeHeader, body: "  tmov %v, %v",
			want: "uses pipe v, which a cube core does not have (it has s, mte1, mte2, m, fix)"},
		{name: "store from vec on a cube core", header: cubeHeader, body: "  tstore %a[0; 64x64; 64,1], %v",
			want: "uses pipe mte3, which a cube core does not have (it has s, mte1, mte2, m, fix)"},
		{name: "flag between cube pipes", header: cubeHeader, body: "  set_flag m, fix, 0\n  wait_flag m, fix, 0"},
		{name: "flag to a pipe the vector core lacks", header: vectorHeader, body: "  set_flag v, m, 0",
			want: "uses pipe m, which a vector core does not have (it has s, mte2, mte3, v)"},
		{name: "barrier on all pipes", header: vectorHeader, body: "  tsync all"},
		{name: "barrier on a missing pipe", header: vectorHeader, body: "  tsync fix",
			want: "uses pipe fix, which a vector core does not have (it has s, mte2, mte3, v)"},
	})
}

func TestVerifyLoadStore(t *testing.T) {
	runVerifyCases(t, []verifyCase{
		{name: "load into mat", header: cubeHeader, body: "  tload %m, %a[0; 64x64; 64,1]"},
		{name: "load into vec", header: vectorHeader, body: "  tload %a, %x[0; 16x16; 16,1]"},
		{name: "load into left", header: cubeHeader, body: "  tload %l, %a[0; 64x64; 64,1]",
			want: "tload writes mat or vec tiles, not left tile %l (load into mat, then tmov or textract into left)"},
		{name: "load converting", header: vectorHeader, body: "  tload %a, %y[0; 16x16; 16,1]",
			want: "tload does not convert: param %y is f32, tile %a is f16"},
		{name: "load of the last element", header: vectorHeader, body: "  tload %a, %x[4095; 1x1; 0,0]"},
		{name: "load past the end", header: vectorHeader, body: "  tload %a, %x[3841; 16x16; 16,1]",
			want: "view reaches past the end of %x (4096 elements): offset 3841 + 15*16 + 15*1"},
		{name: "load whose strides overflow", header: vectorHeader, body: "  tload %a, %x[0; 16x16; 9223372036854775807,1]",
			want: "view reaches past the end of %x (4096 elements): offset 0 + 15*9223372036854775807 + 15*1"},
		{name: "load whose sum overflows", header: vectorHeader, body: "  tload %a, %x[9223372036854775807; 2x2; 1,1]",
			want: "view reaches past the end of %x (4096 elements): offset 9223372036854775807 + 1*1 + 1*1"},
		{name: "transposed load", header: vectorHeader, body: "  tload %a, %x[0; 16x16; 1,256]"},
		{name: "broadcast load", header: vectorHeader, body: "  tload %a, %x[4080; 16x16; 0,1]"},
		{name: "edge window", header: vectorHeader, body: "  tload %a, %x[4094; 1x2; 16,1]"},
		{name: "empty window at the end", header: vectorHeader, body: "  tload %a, %x[4096; 0x16; 16,1]"},
		{name: "view larger than the tile", header: vectorHeader, body: "  tload %a, %x[0; 16x17; 17,1]",
			want: "view 16x17 is larger than tile %a (16x16)"},
		{name: "negative stride", header: vectorHeader, body: "  tload %a, %x[4095; 16x16; -16,1]",
			want: "view offset and strides must be non-negative, got offset 4095, strides -16,1"},
		{name: "negative offset", header: vectorHeader, body: "  tload %a, %x[-1; 1x1; 1,1]",
			want: "view offset and strides must be non-negative, got offset -1, strides 1,1"},
		{name: "negative shape", header: vectorHeader, body: "  tload %a, %x[0; -1x1; 1,1]",
			want: "view shape -1x1 is negative"},
		{name: "store from vec", header: vectorHeader, body: "  tstore %x[0; 16x16; 16,1], %a"},
		{name: "store from mat", header: cubeHeader, body: "  tstore %a[0; 64x64; 64,1], %m",
			want: "tstore reads vec or acc tiles, not mat tile %m"},
		{name: "store from vec converting", header: vectorHeader, body: "  tstore %y[0; 16x16; 16,1], %a",
			want: "tstore from vec does not convert: tile %a is f16, param %y is f32 (tcvt first)"},
		{name: "store from acc rounding to f16", header: cubeHeader, body: "  tstore %a[0; 64x64; 64,1], %acc"},
		{name: "store from acc as f32", header: cubeHeader, body: "  tstore %o[0; 64x64; 64,1], %acc"},
		{name: "store from i32 acc", header: cubeHeader, body: "  tstore %r[0; 64x64; 64,1], %acci"},
		{name: "store from acc to i8", header: cubeHeader, body: "  tstore %q[0; 64x64; 64,1], %acc",
			want: "tstore from acc cannot convert f32 to i8 (f32 stores as f32, f16 or bf16; i32 as i32)"},
		{name: "store from i32 acc to f16", header: cubeHeader, body: "  tstore %a[0; 64x64; 64,1], %acci",
			want: "tstore from acc cannot convert i32 to f16 (f32 stores as f32, f16 or bf16; i32 as i32)"},
		{name: "store with a zero stride", header: vectorHeader, body: "  tstore %x[0; 16x16; 0,1], %a",
			want: "tstore view writes elements of %x more than once (zero stride over 16x16)"},
		{name: "store of one row with a zero row stride", header: vectorHeader, body: "  tstore %x[0; 1x16; 0,1], %a"},
		{name: "store past the end", header: vectorHeader, body: "  tstore %x[4000; 16x16; 16,1], %a",
			want: "view reaches past the end of %x (4096 elements): offset 4000 + 15*16 + 15*1"},
	})
}

func TestVerifyMoves(t *testing.T) {
	runVerifyCases(t, []verifyCase{
		{name: "mat to left", header: cubeHeader, body: "  tmov %l, %m"},
		{name: "mat to right", header: cubeHeader, body: "  tmov %rt, %m"},
		{name: "left to mat", header: cubeHeader, body: "  tmov %m, %l",
			want: "tmov cannot move left -> mat (allowed: mat->left, mat->right, mat->bias, mat->scaling, acc->vec, vec->vec)"},
		{name: "mat to acc", header: cubeHeader, body: "  tmov %acc, %mf",
			want: "tmov cannot move mat -> acc (allowed: mat->left, mat->right, mat->bias, mat->scaling, acc->vec, vec->vec)"},
		{name: "mat to left converting", header: cubeHeader, body: "  tmov %lq, %m",
			want: "tmov mat -> left does not convert: %m is f16, %lq is i8"},
		{name: "acc to vec converting", header: cubeHeader, body: "  tmov %v, %acc"},
		{name: "vec to vec converting", header: vectorHeader, body: "  tmov %f, %a"},
		{name: "different shapes", header: cubeHeader, body: "  tmov %ls, %m",
			want: "tmov copies whole tiles: %ls is 32x64, %m is 64x64"},
		{name: "extract", header: cubeHeader, body: "  textract %rs, %m, 0, 48\n  textract %ls, %m, 32, 0"},
		{name: "extract from left", header: cubeHeader, body: "  textract %ls, %l, 0, 0",
			want: "textract moves mat -> left/right, not left -> left"},
		{name: "extract into vec", header: cubeHeader, body: "  textract %v, %m, 0, 0",
			want: "textract moves mat -> left/right, not mat -> vec"},
		{name: "extract converting", header: cubeHeader, body: "  textract %lq, %m, 0, 0",
			want: "textract does not convert: %m is f16, %lq is i8"},
		{name: "extract at a fractional offset", header: cubeHeader, body: "  textract %ls, %m, 0.5, 0",
			want: "sub-tile offset (0.5, 0) must be non-negative integers inside %m (64x64)"},
		{name: "extract at a negative offset", header: cubeHeader, body: "  textract %ls, %m, 0, -16",
			want: "sub-tile offset (0, -16) must be non-negative integers inside %m (64x64)"},
		{name: "extract at NaN", header: cubeHeader, body: "  textract %ls, %m, NaN, 0",
			want: "sub-tile offset (NaN, 0) must be non-negative integers inside %m (64x64)"},
		{name: "extract past the edge", header: cubeHeader, body: "  textract %ls, %m, 48, 0",
			want: "sub-tile at (48, 0) of size 32x64 does not fit in %m (64x64)"},
	})
}

func TestVerifyMatmul(t *testing.T) {
	runVerifyCases(t, []verifyCase{
		{name: "f16", header: cubeHeader, body: "  tmatmul %acc, %l, %rt\n  tmatmul.acc %acc, %l, %rt"},
		{name: "i8 into i32", header: cubeHeader, body: "  tmatmul %acci, %lq, %rq"},
		{name: "non-square", header: cubeHeader, body: "  tmatmul %accs, %ls, %rs"},
		{name: "f32", header: cubeHeader, decls: "tile %lf: left f32[16x16]\ntile %rf: right f32[16x16]\ntile %af: acc f32[16x16]\n", body: "  tmatmul %af, %lf, %rf"},
		{name: "bf16", header: cubeHeader, decls: "tile %lb: left bf16[16x16]\ntile %rb: right bf16[16x16]\ntile %ab: acc f32[16x16]\n", body: "  tmatmul.acc %ab, %lb, %rb"},
		{name: "operands swapped", header: cubeHeader, body: "  tmatmul %acc, %rt, %l",
			want: "tmatmul computes acc = left @ right, got acc = right @ left"},
		{name: "into vec", header: cubeHeader, body: "  tmatmul.acc %vf, %l, %rt",
			want: "tmatmul.acc computes acc = left @ right, got vec = left @ right"},
		{name: "mixed dtypes", header: cubeHeader, body: "  tmatmul %acc, %l, %rq",
			want: "tmatmul operands differ in dtype: %l is f16, %rq is i8"},
		{name: "inner dimensions", header: cubeHeader, body: "  tmatmul %accs, %ls, %rt\n  tmatmul %accs, %ls, %rs",
			want: "tmatmul result %accs is 32x16, want 32x64"},
		{name: "inner mismatch", header: cubeHeader, decls: "tile %l2: left f16[32x32]\n", body: "  tmatmul %accs, %l2, %rs",
			want: "tmatmul inner dimensions differ: %l2 is 32x32, %rs is 64x16"},
		{name: "i8 into f32", header: cubeHeader, body: "  tmatmul %acc, %lq, %rq",
			want: "tmatmul of i8 operands accumulates in i32, not f32"},
		{name: "f16 into i32", header: cubeHeader, body: "  tmatmul %acci, %l, %rt",
			want: "tmatmul of f16 operands accumulates in f32, not i32"},
	})
}

func TestVerifyVectorOps(t *testing.T) {
	runVerifyCases(t, []verifyCase{
		{name: "add mul relu", header: vectorHeader, body: "  tadd %a, %a, %b\n  tmul %b, %a, %b\n  trelu %a, %b"},
		{name: "add of a cube tile", header: cubeHeader, body: "  tadd %v, %v, %m",
			want: "tadd works on vec tiles, %m is in mat"},
		{name: "mul of different shapes", header: vectorHeader, body: "  tmul %a, %a, %w",
			want: "tmul operands differ in shape: %a is 16x16, %w is 16x32"},
		{name: "relu converting", header: vectorHeader, body: "  trelu %f, %a",
			want: "trelu does not convert: %f is f32, %a is f16 (tcvt first)"},
		{name: "relu of different shapes", header: vectorHeader, body: "  trelu %w, %a",
			want: "trelu operands differ in shape: %w is 16x32, %a is 16x16"},
		{name: "cvt", header: vectorHeader, body: "  tcvt %f, %a\n  tcvt %a, %f"},
		{name: "cvt of different shapes", header: vectorHeader, body: "  tcvt %w, %f",
			want: "tcvt operands differ in shape: %w is 16x32, %f is 16x16"},
		{name: "cvt of a cube tile", header: cubeHeader, body: "  tcvt %vf, %mf",
			want: "tcvt works on vec tiles, %mf is in mat"},
	})
}

func TestVerifySync(t *testing.T) {
	runVerifyCases(t, []verifyCase{
		{name: "flags", header: vectorHeader, body: "  set_flag mte2, v, 0\n  wait_flag mte2, v, 0\n  set_flag v, s, 7\n  wait_flag v, s, 7"},
		{name: "flag to itself", header: vectorHeader, body: "  set_flag v, v, 0",
			want: "set_flag from pipe v to itself (pipes are in order already; use two pipes)"},
		{name: "flag to all", header: vectorHeader, body: "  wait_flag all, v, 0",
			want: "wait_flag names two pipes; all is only for tsync"},
		{name: "event id too large", header: vectorHeader, body: fmt.Sprintf("  set_flag mte2, v, %d", NumEventIDs),
			want: "event id 8 is not an integer in [0, 8)"},
		{name: "negative event id", header: vectorHeader, body: "  set_flag mte2, v, -1",
			want: "event id -1 is not an integer in [0, 8)"},
		{name: "fractional event id", header: vectorHeader, body: "  wait_flag mte2, v, 1.5",
			want: "event id 1.5 is not an integer in [0, 8)"},
		{name: "infinite event id", header: vectorHeader, body: "  wait_flag mte2, v, Inf",
			want: "event id +Inf is not an integer in [0, 8)"},
		{name: "barriers", header: cubeHeader, body: "  tsync all\n  tsync m\n  tsync s"},
	})
}

// Every opcode needs verifier rules, so adding an opcode without them fails here.
func TestVerifyRulesCoverEveryOpcode(t *testing.T) {
	for op := Opcode(1); int(op) < NumOpcodes(); op++ {
		assert.NotNil(t, opRules[op], "no verifier rule for %s", op)
	}
	assert.Len(t, opRules, NumOpcodes()-1)
}

// The testdata programs are valid under a realistic capacity (an A2 core's buffers).
func TestVerifyWithCapacity(t *testing.T) {
	a2 := map[Location]int{Mat: 512 << 10, Left: 64 << 10, Right: 64 << 10, Acc: 128 << 10, Vec: 192 << 10}
	for _, f := range []string{"testdata/matmul.pto", "testdata/vector.pto"} {
		p, err := ParseFile(f)
		require.NoError(t, err)
		assert.NoError(t, Verify(p, func(l Location) int { return a2[l] }), f)
	}
	p, err := ParseFile("testdata/matmul.pto")
	require.NoError(t, err)
	err = Verify(p, func(l Location) int { return a2[l] / 16 })
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "kernel mm_0: tile %a_l0: left f16[64x64]: tile needs 8192 bytes, the left buffer holds 4096"), err.Error())
}

// An immediate operand is not a tile: tfillpad's pad value must not be checked as
// tile 0 (which here has another shape).
func TestVerifyTFillPadIgnoresItsImmediate(t *testing.T) {
	p := &Program{Name: "pad", Core: Vector,
		Tiles: []TileDecl{{Name: "other", Loc: Vec, DType: dtype.Int32, Rows: 1, Cols: 8}, {Name: "dst", Loc: Vec, DType: dtype.Float32, Rows: 4, Cols: 8},
			{Name: "src", Loc: Vec, DType: dtype.Float32, Rows: 4, Cols: 8, ValidRows: 2, ValidCols: 5}},
		Body: []Instr{{Op: TFILLPAD, Args: []Operand{TileOp(1), TileOp(2), ImmOp(-1)}}}}
	require.NoError(t, Verify(p, nil))
}
