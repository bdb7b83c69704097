package isa

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Verifier rules of the instructions, declarations and control flow added with the
// full vocabulary: a valid and the failing cases of each rule.

const vecHeader2 = `kernel v vector
param %x: f32[4096]
param %h: f16[4096]
param %q: i32[4096]
param %b: i8[4096]
reg %r
reg %s
tile %f: vec f32[8x32]
tile %g: vec f32[8x32]
tile %f16: vec f16[8x32]
tile %i: vec i32[8x32]
tile %j: vec i32[8x32]
tile %k: vec i8[8x32]
tile %col: vec f32[8x1] dn
tile %row: vec f32[1x32]
tile %wide: vec f32[8x64]
tile %mask: vec i8[8x32]
`

const cubeHeader2 = `kernel c cube
param %a: f16[4096]
param %o: f32[4096]
param %q8: i8[4096]
tile %m: mat f16[64x64]
tile %mf: mat f32[64x64]
tile %l: left f16[64x64]
tile %rt: right f16[64x64]
tile %acc: acc f32[64x64]
tile %acci: acc i32[64x64]
tile %bias: bias f32[1x64]
tile %sc: scaling f32[1x64]
tile %sa: scaling f32[64x2]
tile %sb: scaling f32[2x64]
tile %v: vec f32[64x64]
`

func TestVerifyNewDeclarations(t *testing.T) {
	runVerifyCases(t, []verifyCase{
		{name: "layouts", header: cubeHeader2, decls: "tile %n: left f16[32x32] nz\ntile %z: right i8[64x32] zn\ntile %d: mat f32[16x16] dn\ntile %ac: acc f32[32x32] nz\n"},
		{name: "right in nz", header: cubeHeader2, decls: "tile %e: right f16[32x32] nz\n", want: "right tiles cannot have layout nz (allowed: nd, zn)"},
		{name: "vec in nz", header: vecHeader2, decls: "tile %e: vec f16[32x32] nz\n", want: "vec tiles cannot have layout nz (allowed: nd, dn)"},
		{name: "zn i8 fractal", header: cubeHeader2, decls: "tile %e: right i8[16x32] zn\n", want: "zn i8 tile shape 16x32 is not a whole number of 32x16 fractals"},
		{name: "nz f32 mat fractal", header: cubeHeader2, decls: "tile %e: mat f32[16x12] nz\n", want: "nz f32 tile shape 16x12 is not a whole number of 16x8 fractals"},
		{name: "dn column", header: vecHeader2, decls: "tile %e: vec f32[4x1] dn\n", want: "column of 4 x f32 (dn) is not a multiple of 32 bytes"},
		{name: "scaling bytes", header: cubeHeader2, decls: "tile %e: scaling f32[1x4]\n", want: "scaling tile of 16 bytes is not a multiple of 32 bytes"},
		{name: "valid sizes", header: vecHeader2, decls: "tile %e: vec f32[8x32] valid 3x*\ntile %e2: vec f32[8x32] valid %r x %s\n"},
		{name: "valid too large", header: vecHeader2, decls: "tile %e: vec f32[8x32] valid 9x*\n", want: "valid rows 9 outside [0, 8]"},
		{name: "register and reg names", header: vecHeader2, decls: "reg %f2\n"},
	})
}

func TestVerifyMalformedNewDeclarations(t *testing.T) {
	p := mustParse(t, vecHeader2+"end\n")
	p.Tiles[0].ValidRowsReg, p.Tiles[0].ValidRows = UseReg(0), 2
	assert.EqualError(t, Verify(p, nil), "kernel v: tile %f: vec f32[8x32] valid %r x *: valid rows come from a register and also from the number 2")
	p = mustParse(t, vecHeader2+"end\n")
	p.Tiles[0].ValidColsReg = UseReg(5)
	assert.EqualError(t, Verify(p, nil), "kernel v: tile %f: vec f32[8x32] valid *x%<reg 5?>: valid cols refer to register 5, but the program declares 2 registers")
	p = mustParse(t, vecHeader2+"end\n")
	p.Regs[1].Name = "x"
	assert.EqualError(t, Verify(p, nil), "kernel v: reg %x: name is already used by param %x: f32[4096]")
}

func TestVerifyNewVectorOps(t *testing.T) {
	runVerifyCases(t, []verifyCase{
		{name: "arithmetic", header: vecHeader2, body: "  tsub %f, %f, %g\n  tdiv %i, %i, %j\n  tmin %k, %k, %k\n  trem %f, %f, %g\n  taddc %f, %f, %g, %f\n  tpartmax %f, %f, %g"},
		{name: "sub of bool", header: vecHeader2, decls: "tile %bo: vec bool[1x32]\n", body: "  tsub %bo, %bo, %bo", want: "tsub takes numeric (not bool) tiles, %bo is bool"},
		{name: "math", header: vecHeader2, body: "  texp %f, %f\n  tlog %f16, %f16\n  trsqrt %f, %g\n  tprelu %f, %f, %g"},
		{name: "exp of ints", header: vecHeader2, body: "  texp %i, %i", want: "texp takes f32, f16 or bf16 tiles, %i is i32"},
		{name: "bitwise", header: vecHeader2, body: "  tand %i, %i, %j\n  tnot %k, %k\n  tshl %i, %i, %j"},
		{name: "xor of floats", header: vecHeader2, body: "  txor %f, %f, %g", want: "txor takes i8, i32 or bool tiles, %f is f32"},
		{name: "shift mixing dtypes", header: vecHeader2, body: "  tshr %i, %i, %k", want: "tshr does not convert: %i is i32, %k is i8 (tcvt first)"},
		{name: "scalar forms", header: vecHeader2, body: "  tadds %f, %g, 0.5\n  tmuls %k, %k, -128\n  tshls %i, %j, 3\n  tlrelu %f, %f, 0.1\n  tands %i, %i, 7\n  texpands %k, 127"},
		{name: "i8 scalar out of range", header: vecHeader2, body: "  tadds %k, %k, 128", want: "tadds scalar 128 is not an integer in the range of i8 [-128, 127]"},
		{name: "int scalar not an integer", header: vecHeader2, body: "  tmuls %i, %i, 0.5", want: "tmuls scalar 0.5 is not an integer in the range of i32 [-2.147483648e+09, 2.147483647e+09]"},
		{name: "expands of a bad scalar", header: vecHeader2, body: "  texpands %k, 300", want: "texpands scalar 300 is not an integer in the range of i8 [-128, 127]"},
		{name: "leaky relu of ints", header: vecHeader2, body: "  tlrelu %i, %i, 1", want: "tlrelu takes f32, f16 or bf16 tiles, %i is i32"},
		{name: "compare", header: vecHeader2, body: "  tcmp.lt %mask, %f, %g\n  tcmps.ne %mask, %i, 3\n  tsel %f, %mask, %f, %g\n  tsels %i, %mask, %i, -1"},
		{name: "compare into f32", header: vecHeader2, body: "  tcmp.eq %g, %f, %f", want: "tcmp mask %g is f32, want i8 (8 packed bits per byte)"},
		{name: "mask too small", header: vecHeader2, decls: "tile %m2: vec i8[8x32]\n", body: "  tcmp.gt %m2, %wide, %wide\n  tcmp.gt %col, %f, %f", want: "tcmp mask %col is f32, want i8 (8 packed bits per byte)"},
		{name: "mask rows", header: vecHeader2, decls: "tile %m4: vec i8[4x32]\n", body: "  tsel %f, %m4, %f, %g", want: "tsel mask %m4 (4x32) cannot hold a bit per element of %f (8x32): want 8 rows and at least 4 cols"},
		{name: "reductions", header: vecHeader2, body: "  trowsum %col, %f\n  trowmax %f, %f\n  tcolmin %row, %f\n  tcolprod %f, %f"},
		{name: "row reduction rows", header: vecHeader2, body: "  trowsum %row, %f", want: "trowsum writes one value per row: %row has 1 rows, %f has 8"},
		{name: "column reduction cols", header: vecHeader2, body: "  tcolsum %col, %f", want: "tcolsum writes one value per column: %col has 1 cols, %f has 32"},
		{name: "reduce converting", header: vecHeader2, body: "  trowsum %i, %f", want: "trowsum does not convert: %i is i32, %f is f32"},
		{name: "broadcasts", header: vecHeader2, body: "  trowexpand %f, %col\n  tcolexpand %f, %row\n  trowexpandsub %f, %f, %col\n  tcolexpandexpdif %f, %g, %row"},
		{name: "row broadcast of a row", header: vecHeader2, body: "  trowexpanddiv %f, %f, %row", want: "trowexpanddiv broadcasts one value per row: %f has 8 rows, %row has 1"},
		{name: "expdif of ints", header: vecHeader2, decls: "tile %ic: vec i32[8x8]\n", body: "  trowexpandexpdif %i, %j, %ic", want: "trowexpandexpdif takes f32, f16 or bf16 tiles, %i is i32"},
		{name: "gather scatter sort", header: vecHeader2, decls: "tile %p: vec f32[8x64]\n", body: "  tgather %f, %wide, %i\n  tgatherb %f, %g, %j\n  tscatter %wide, %f, %i\n  tsort32 %p, %f, %i\n  tmrgsort %p, %p, 8"},
		{name: "gather index dtype", header: vecHeader2, body: "  tgather %f, %g, %f", want: "tgather index tile %f is f32, want i32"},
		{name: "sort shape", header: vecHeader2, body: "  tsort32 %wide, %wide, %i", want: "tsort32 index tile %i is 8x32, want 8x64 like %wide"},
		{name: "merge run", header: vecHeader2, body: "  tmrgsort %f, %f, 3", want: "tmrgsort run length 3 is not a positive integer dividing the 16 pairs of a row"},
		{name: "generators", header: vecHeader2, body: "  tci %i, 0, 1\n  tci %f, 0.5, 0.25\n  ttri %f, -2\n  ttri.upper %k, 0"},
		{name: "tci of ints with a fraction", header: vecHeader2, body: "  tci %i, 0.5, 1", want: "tci scalar 0.5 is not an integer in the range of i32 [-2.147483648e+09, 2.147483647e+09]"},
		{name: "quantise", header: vecHeader2, body: "  tquant %k, %f, %col, %col\n  tdequant %f16, %k, %col, %col"},
		{name: "quantise to floats", header: vecHeader2, body: "  tquant %g, %f, %col, %col", want: "tquant takes i8 or i32 tiles, %g is f32"},
		{name: "quantise scale rows", header: vecHeader2, body: "  tquant %k, %f, %row, %col", want: "tquant scale and offset are f32 with one row per row of %f (8): %row is f32[1x32]"},
		{name: "transpose", header: vecHeader2, decls: "tile %tt: vec f32[32x8]\n", body: "  ttrans %tt, %f", want: ""},
		{name: "transpose shape", header: vecHeader2, body: "  ttrans %g, %f", want: "ttrans result %g is 8x32, want 32x8"},
		{name: "fill pad", header: vecHeader2, body: "  tfillpad %f, %g, -Inf"},
		{name: "print and assign", header: vecHeader2, body: "  tprint %f\n  tassign %f, 1024"},
		{name: "assign misaligned", header: vecHeader2, body: "  tassign %f, 48", want: "tassign address 48 is not a non-negative integer multiple of the vec alignment (32 bytes)"},
		{name: "assign past capacity", header: vecHeader2, body: "  tassign %f, 3584", capacity: func(Location) int { return 4096 },
			want: "tassign places %f at [3584, 4608), past the 4096-byte vec buffer"},
		{name: "convert modes", header: vecHeader2, body: "  tcvt.floor %i, %f\n  tcvt.odd %f16, %f\n  tcvt %f, %k"},
	})
}

func TestVerifyNewMemoryAndCubeOps(t *testing.T) {
	runVerifyCases(t, []verifyCase{
		{name: "memory", header: vecHeader2, body: "  tstore.add %x[0; 8x32; 32,1], %f\n  tprefetch %h[0; 64x64; 64,1]\n  mgather %f, %x[0; 64x64; 64,1], %i\n  mscatter %q[0; 1x4096; 0,1], %j, %i"},
		{name: "prefetch past the end", header: vecHeader2, body: "  tprefetch %h[1; 64x64; 64,1]", want: "view reaches past the end of %h (4096 elements): offset 1 + 63*64 + 63*1"},
		{name: "gather converting", header: vecHeader2, body: "  mgather %f, %h[0; 1x8; 8,1], %i", want: "mgather does not convert: param %h is f16, tile %f is f32"},
		{name: "scatter through a zero stride", header: vecHeader2, body: "  mscatter %x[0; 4x8; 0,1], %f, %i", want: "mscatter view writes elements of %x more than once (zero stride over 4x8)"},
		{name: "cube", header: cubeHeader2, body: "  tmov %bias, %mf\n  tmov %sc, %mf\n  tmatmul.bias %acc, %l, %rt, %bias\n  tgemv.acc %acc, %l, %rt\n  tmatmul.mx %acc, %l, %sa, %rt, %sb\n  tstore.fp %q8[0; 64x64; 64,1], %acc, %sc\n  tmov.fp %v, %acc, %sc\n  tinsert %m, %acc, 0, 0",
			want: "tmov copies whole tiles: %bias is 1x64, %mf is 64x64"},
		{name: "cube ops", header: cubeHeader2, decls: "tile %mb: mat f32[1x64]\n", body: "  tmov %bias, %mb\n  tmov %sc, %mb\n  tmatmul.bias %acc, %l, %rt, %bias\n  tgemv.acc %acc, %l, %rt\n  tmatmul.mx %acc, %l, %sa, %rt, %sb\n  tstore.fp %q8[0; 64x64; 64,1], %acc, %sc\n  tmov.fp %v, %acc, %sc\n  tinsert %m, %acc, 0, 0\n  tprefetch %a[0; 1x1; 1,1]"},
		{name: "bias of the wrong dtype", header: cubeHeader2, decls: "tile %bi: bias i32[1x64]\n", body: "  tgemv.bias %acc, %l, %rt, %bi", want: "tgemv.bias bias %bi must be a bias f32 tile with 64 cols, not bias i32[1x64]"},
		{name: "mx scale shape", header: cubeHeader2, body: "  tmatmul.mx %acc, %l, %sb, %rt, %sb", want: "tmatmul.mx scale %sb must be a scaling f32[64x2] tile, not scaling f32[2x64]"},
		{name: "mx of i8 into f32", header: cubeHeader2, decls: "tile %l8: left i8[64x64]\ntile %r8: right i8[64x64]\n", body: "  tmatmul.mx %acc, %l8, %sa, %r8, %sb\n  tmatmul.mx %acci, %l8, %sa, %r8, %sb",
			want: "tmatmul.mx of i8 operands accumulates in f32, not i32"},
		{name: "store fp scale", header: cubeHeader2, body: "  tstore.fp %o[0; 64x64; 64,1], %acc, %bias", want: "tstore.fp scale %bias must be a scaling f32 tile with 64 cols like %acc, not bias f32[1x64]"},
		{name: "insert into vec from acc", header: cubeHeader2, body: "  tinsert %v, %acc, 0, 0", want: "tinsert moves acc -> mat or vec -> vec, not acc -> vec"},
		{name: "insert out of bounds", header: cubeHeader2, decls: "tile %small: acc f32[16x16]\n", body: "  tinsert %m, %small, 56, 0", want: "%small of size 16x16 at (56, 0) does not fit in %m (64x64)"},
		{name: "reshape", header: cubeHeader2, decls: "tile %m2: mat f32[64x32]\ntile %m3: mat f16[32x32]\n", body: "  treshape %m2, %m\n  treshape %m3, %m", want: "treshape keeps the bytes: %m3 has 2048, %m has 8192"},
		{name: "reshape across buffers", header: cubeHeader2, body: "  treshape %l, %m", want: "treshape stays in one buffer: %l is in left, %m in mat"},
		{name: "img2col", header: cubeHeader2, decls: "tile %img: mat f16[20x16]\ntile %col: left f16[32x144]\ntile %c2: left f16[16x144]\n", body: "  timg2col %col, %img, 4, 3, 3, 1, 1, 1, 1, 5\n  timg2col %c2, %img, 4, 3, 3, 1, 0, 0, 0, 3\n  timg2col %c2, %img, 4, 3, 3, 1, 1, 1, 1, 5", want: "timg2col result needs 20x144, %c2 is 16x144"},
		{name: "img2col rows", header: cubeHeader2, decls: "tile %img: mat f16[5x16]\ntile %col: left f16[32x48]\n", body: "  timg2col %col, %img, 3, 3, 3, 1, 1, 1, 1, 1", want: "timg2col: %img has 5 rows, not whole image rows of 3 pixels"},
		{name: "img2col zero stride", header: cubeHeader2, decls: "tile %img: mat f16[5x16]\ntile %col: left f16[32x48]\n", body: "  timg2col %col, %img, 4, 3, 3, 0, 1, 1, 1, 1", want: "timg2col parameters W, kh, kw, s, oh >= 1 and pl, pr, pt >= 0 must be integers, got 0"},
		{name: "queues", header: cubeHeader2, body: "  tpush 0, %acc\n  tpop %m, 7\n  tfree 7"},
		{name: "queue id", header: cubeHeader2, body: "  tpush 8, %acc", want: "tpush queue 8 is not an integer in [0, 8)"},
		{name: "push from mat", header: cubeHeader2, body: "  tpush 0, %m", want: "tpush sends acc or vec tiles, not mat tile %m"},
		{name: "push from vec on a cube", header: cubeHeader2, body: "  tpush 0, %v", want: "uses pipe mte3, which a cube core does not have (it has s, mte1, mte2, m, fix)"},
		{name: "vector op on a cube", header: cubeHeader2, body: "  texp %v, %v", want: "uses pipe v, which a cube core does not have (it has s, mte1, mte2, m, fix)"},
	})
}

func TestVerifyScalarAndModes(t *testing.T) {
	runVerifyCases(t, []verifyCase{
		{name: "scalar", header: vecHeader2, body: "  smov %r, 5\n  sadd %s, %r, -3\n  smul %s, %s, %r\n  sld %r, %q[7; 1x1; 1,1]\n  tload %f, %x[%r+8; %s<=8 x 32; 32,1]"},
		{name: "fractional scalar", header: vecHeader2, body: "  sadd %r, %r, 0.5", want: "operand 3: scalar 0.5 is not an integer of magnitude at most 2^53"},
		{name: "huge scalar", header: vecHeader2, body: "  smov %r, 1e17", want: "operand 2: scalar 1e+17 is not an integer of magnitude at most 2^53"},
		{name: "scalar load of floats", header: vecHeader2, body: "  sld %r, %x[0; 1x1; 1,1]", want: "sld reads integers, param %x is f32"},
		{name: "scalar load of a row", header: vecHeader2, body: "  sld %r, %q[0; 1x2; 1,1]", want: "sld reads one element: the view must be 1x1, not 1x2"},
		{name: "negative loop count", header: vecHeader2, body: "  loop %r, -1\n  endloop", want: "loop count -1 is negative"},
		{name: "view bound", header: vecHeader2, body: "  tload %f, %x[0; %r<=9 x 32; 32,1]", want: "view 9x32 is larger than tile %f (8x32)"},
	})
	// Modes that the text cannot write are built in Go.
	p := mustParse(t, vecHeader2+"  tcmp.lt %mask, %f, %g\n  tcvt %f, %g\nend\n")
	p.Body[0].Mode = ModeNone
	assert.EqualError(t, Verify(p, nil), "kernel v: instr 0 `tcmp %mask, %f, %g`: tcmp needs a mode (.eq .ne .lt .le .gt .ge)")
	p.Body[0].Mode = RoundFloor
	assert.EqualError(t, Verify(p, nil), "kernel v: instr 0 `tcmp.floor %mask, %f, %g`: tcmp does not take mode 9 (floor); it takes .eq .ne .lt .le .gt .ge")
	p.Body[0].Mode = CmpLT
	p.Body[1].Op, p.Body[1].Mode = TADD, CmpEQ
	p.Body[1].Args = append(p.Body[1].Args, TileOp(1))
	assert.EqualError(t, Verify(p, nil), "kernel v: instr 1 `tadd.eq %f, %g, %g`: tadd takes no mode, has mode 1 (eq)")
}

func TestVerifyFlow(t *testing.T) {
	runVerifyCases(t, []verifyCase{
		{name: "nested loops", header: vecHeader2, body: "  loop %r, 4\n    loop %s, %r\n      smul %x2, %r, %s\n    endloop\n  endloop", decls: "reg %x2\n"},
		{name: "counter written", header: vecHeader2, body: "  loop %r, 4\n    sadd %r, %r, 1\n  endloop", want: "writes %r, the counter of the loop at instr 0"},
		{name: "counter reused by an inner loop", header: vecHeader2, body: "  loop %r, 4\n    loop %r, 2\n    endloop\n  endloop", want: "writes %r, the counter of the loop at instr 0"},
		{name: "endloop alone", header: vecHeader2, body: "  endloop", want: "endloop without a loop"},
		{name: "loop left open", header: vecHeader2, body: "  loop %r, 4\n  tadd %f, %f, %g", want: "loop without an endloop"},
		{name: "balanced events in a loop", header: vecHeader2, body: "  set_flag v, mte3, 0\n  loop %r, 4\n    wait_flag v, mte3, 0\n    set_flag v, mte3, 0\n  endloop\n  wait_flag v, mte3, 0"},
		{name: "loop leaves an event set", header: vecHeader2, body: "  loop %r, 4\n    set_flag mte2, v, 1\n  endloop\n  wait_flag mte2, v, 1",
			want: "the body of the loop at instr 0 leaves event mte2->v #1 set; a loop body must leave events as it found them"},
		{name: "loop consumes an event", header: vecHeader2, body: "  set_flag mte2, v, 1\n  loop %r, 4\n    wait_flag mte2, v, 1\n  endloop",
			want: "the body of the loop at instr 1 consumes event mte2->v #1, set before the loop; a loop body must leave events as it found them"},
		{name: "wait without set", header: vecHeader2, body: "  wait_flag mte2, v, 3", want: "waits for event mte2->v #3, which no earlier set_flag set (it would wait forever)"},
		{name: "set twice", header: vecHeader2, body: "  set_flag mte2, v, 3\n  set_flag mte2, v, 3", want: "sets event mte2->v #3 again while the set at instr 0 has not been waited for"},
		{name: "set never waited", header: vecHeader2, body: "  set_flag mte2, v, 3\n  set_flag v, mte3, 0\n  wait_flag v, mte3, 0", want: "sets event mte2->v #3, which no later wait_flag waits for"},
	})
}

// The new declarations and operands print and parse back, and malformed new syntax is
// reported with what was expected.
func TestParseNewSyntax(t *testing.T) {
	src := `kernel k vector
param %x: f32[4096]
reg %r
reg %n
tile %t: vec f32[8x32] valid %n x 20 dn
tile %u: vec f32[8x32] valid *x%r
  loop %r, %n
    tload %t, %x[%r+64; %n<=8 x %r<=32; 32,1]
    tcvt.floor %u, %t
  endloop
  tstore.add %x[%r; 8x32; 32,1], %u
end
`
	p := mustParse(t, src)
	assert.Equal(t, TileDecl{Name: "t", Loc: Vec, DType: 1, Rows: 8, Cols: 32, ValidRowsReg: UseReg(1), ValidCols: 20, Layout: LayoutDN}, p.Tiles[0])
	assert.Equal(t, GMView{Param: 0, Offset: 64, Rows: 8, Cols: 32, RowStride: 32, ColStride: 1, OffsetReg: UseReg(0), RowsReg: UseReg(1), ColsReg: UseReg(0)}, p.Body[1].Args[1].GM)
	assert.Equal(t, Instr{Op: TCVT, Mode: RoundFloor, Args: []Operand{TileOp(1), TileOp(0)}}, p.Body[2])
	assert.Equal(t, Instr{Op: LOOP, Args: []Operand{RegOp(0), RegOp(1)}}, p.Body[0])
	assert.Equal(t, Instr{Op: ENDLOOP}, p.Body[3])
	want := `kernel k vector
param %x: f32[4096]
reg %r
reg %n
tile %t: vec f32[8x32] valid %n x 20 dn
tile %u: vec f32[8x32] valid *x%r
  loop %r, %n
    tload %t, %x[%r+64; %n<=8 x %r<=32; 32,1]
    tcvt.floor %u, %t
  endloop
  tstore.add %x[%r; 8x32; 32,1], %u
end
`
	require.Equal(t, want, Format(p))

	head := "kernel k vector\nparam %x: f32[64]\nreg %r\ntile %t: vec f32[1x8]\n"
	cases := []struct{ src, want string }{
		{head + "reg r\n", "5:5: expected reg (%name), found 'r'"},
		{head + "reg %r\n", "5:5: %r is already declared on line 3"},
		{head + "reg %q extra\n", "5:8: expected end of line after the reg declaration, found 'extra'"},
		{head + "tile %u: vec f32[1x8] valid\n", "5:28: expected valid rows (an integer, a register or '*'), found end of line"},
		{head + "tile %u: vec f32[1x8] valid 1\n", "5:30: expected 'x' between the valid rows and cols, found end of line"},
		{head + "tile %u: vec f32[1x8] valid %t x 1\n", "5:29: expected reg, found tile %t"},
		{head + "tile %u: vec f32[1x8] zz\n", "5:23: expected 'valid', a layout (nd, dn, nz, zn) or end of line after the tile shape, found 'zz'"},
		{head + "tile %u: vec f32[1x8] dn nz\n", "5:26: expected end of line after the tile declaration, found 'nz'"},
		{head + "  tcmp %t, %t, %t\n", "5:3: expected one of tcmp.eq tcmp.ne tcmp.lt tcmp.le tcmp.gt tcmp.ge, found 'tcmp'"},
		{head + "  tadd.lt %t, %t, %t\n", "5:3: expected tadd, found 'tadd.lt'"},
		{head + "  tcvt.sideways %t, %t\n", "5:3: expected instruction, 'param', 'tile' or 'end', found 'tcvt.sideways'"},
		{head + "  smov %t, 1\n", "5:8: expected reg, found tile %t"},
		{head + "  smov %r, x\n", "5:12: expected number, found 'x'"},
		{head + "  tload %t, %x[%q; 1x8; 8,1]\n", "5:16: expected reg, found %q, which is not declared"},
		{head + "  tload %t, %x[%r+; 1x8; 8,1]\n", "5:19: expected offset after '+' (an integer), found ';'"},
		{head + "  tload %t, %x[0; %r x 8; 8,1]\n", "5:22: expected '<=' and the largest rows after the register, found 'x'"},
		{head + "  tload %t, %x[0; %r<=a x 8; 8,1]\n", "5:23: expected largest rows (an integer), found 'a'"},
		{head + "  endloop 3\n", "5:11: expected end of line after the 0 operands of endloop (), found '3'"},
	}
	for _, c := range cases {
		t.Run(c.want, func(t *testing.T) {
			_, err := Parse(c.src)
			require.Error(t, err)
			assert.Equal(t, c.want, err.Error())
		})
	}
}
