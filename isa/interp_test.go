package isa

import (
	"bytes"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/dtype"
)

// Hand-computed tests of the reference semantics: scalar control, queues, debug
// output, instructions without a value effect, and run-time errors. The per-instruction
// numeric tests against numpy are interp_golden_test.go's.

func mustParse(t *testing.T, src string) *Program {
	t.Helper()
	p, err := Parse(src)
	require.NoError(t, err)
	return p
}

func i32s(vals ...float64) []byte { return dtype.Encode(dtype.Int32, vals) }

func TestInterpretScalarArithmetic(t *testing.T) {
	p := mustParse(t, `kernel s vector
param %out: i32[8]
reg %a
reg %b
reg %c
tile %t: vec i32[1x8]
  smov %a, 17
  smov %b, -5
  sadd %c, %a, %b
  tci %t, 0, 0
  sdiv %c, %a, %b
  srem %b, %a, %b
  smul %a, %a, 3
  ssub %a, %a, 1
  smin %c, %c, %b
  smax %b, %a, 1000
  tstore %out[%a; 1x1; 1,1], %t
end
`)
	// The registers cannot be stored directly; check them through the machine.
	m, err := runForTest(p, [][]byte{make([]byte, 32)})
	if err == nil {
		t.Fatalf("the store at offset 50 should be outside the 8-element param")
	}
	assert.Contains(t, err.Error(), "view of %out at offset 50")
	assert.Nil(t, m)

	p.Body = p.Body[:len(p.Body)-1]
	m, err = runForTest(p, [][]byte{make([]byte, 32)})
	require.NoError(t, err)
	assert.Equal(t, []int64{50, 1000, -3}, m.regs) // 17*3-1; max(50,1000); min(17/-5 = -3, 17 % -5 = 2)
}

func TestInterpretScalarDivisionByZero(t *testing.T) {
	p := mustParse(t, "kernel s vector\nreg %a\nreg %z\n  sdiv %a, 1, %z\nend\n")
	err := Interpret(p, nil)
	var ie *InterpError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, 0, ie.Index)
	assert.Equal(t, "kernel s: instr 0 `sdiv %a, 1, %z`: scalar division by zero", err.Error())
}

// Nested loops with a count from GM write each element of a 3 x n block once; the
// counter registers end equal to their counts.
func TestInterpretLoops(t *testing.T) {
	p := mustParse(t, `kernel loops vector
param %n: i32[1]
param %out: f32[64]
reg %rows
reg %i
reg %j
reg %off
tile %t: vec f32[1x8]
  sld %rows, %n[0; 1x1; 1,1]
  loop %i, %rows
    loop %j, 3
      smul %off, %i, 3
      sadd %off, %off, %j
      texpands %t, 1
      tstore.add %out[%off; 1x1; 1,1], %t
    endloop
    loop %j, 0
      tstore %out[63; 1x1; 1,1], %t
    endloop
  endloop
end
`)
	out := make([]byte, 64*4)
	m, err := runForTest(p, [][]byte{i32s(5), out})
	require.NoError(t, err)
	got := dtype.Decode(dtype.Float32, out, 64)
	for i, v := range got {
		want := 0.0
		if i < 15 {
			want = 1
		}
		assert.Equal(t, want, v, "element %d", i)
	}
	assert.Equal(t, []int64{5, 5, 0, 14}, m.regs, "rows, i = count, j = the count of the last loop, off")
}

func TestInterpretLoopCountErrors(t *testing.T) {
	p := mustParse(t, "kernel l vector\nreg %i\nreg %n\n  smov %n, -1\n  loop %i, %n\n  endloop\nend\n")
	err := Interpret(p, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "loop count -1 is negative")

	p = mustParse(t, "kernel l vector\nreg %i\nreg %j\n  loop %i, 1000\n  loop %j, 1000\n  endloop\n  endloop\nend\n")
	err = InterpretCores([]Core{{Prog: p}}, InterpOptions{MaxSteps: 5000})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "exceeds the budget of 5000 executed instructions in the loop at instr 1 `loop %j, 1000`")
}

// Register-given sizes: a tile's valid rows and a view's rows follow a register, so
// one loop handles a last partial tile.
func TestInterpretDynamicEdgeTile(t *testing.T) {
	p := mustParse(t, `kernel edge vector
param %x: f32[80]
param %y: f32[80]
reg %i
reg %off
reg %vr
tile %t: vec f32[4x8] valid %vr x *
  loop %i, 3
    smul %off, %i, 32
    smul %vr, %i, -4
    sadd %vr, %vr, 10
    smin %vr, %vr, 4
    tload %t, %x[%off; %vr<=4 x 8; 8,1]
    tadds %t, %t, 100
    tstore %y[%off; %vr<=4 x 8; 8,1], %t
  endloop
end
`)
	x := make([]float64, 80)
	for i := range x {
		x[i] = float64(i)
	}
	y := make([]byte, 80*4)
	require.NoError(t, Interpret(p, [][]byte{dtype.Encode(dtype.Float32, x), y}))
	got := dtype.Decode(dtype.Float32, y, 80)
	for i, v := range got {
		assert.Equal(t, float64(i)+100, v, "element %d", i)
	}

	// A register outside its bound fails at run time, naming it.
	p.Body[4].Args[2] = ImmOp(12) // smin %vr, %vr, 12: 10 rows in the first tile
	err := Interpret(p, [][]byte{dtype.Encode(dtype.Float32, x), y})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "view rows %vr = 10, outside [0, 4]")
}

func TestInterpretValidRegister(t *testing.T) {
	p := mustParse(t, `kernel v vector
param %y: f32[16]
reg %c
tile %t: vec f32[2x8] valid * x %c
  smov %c, 3
  texpands %t, 2
  smov %c, 9
  texpands %t, 2
end
`)
	err := Interpret(p, [][]byte{make([]byte, 64)})
	require.Error(t, err)
	assert.Equal(t, "kernel v: instr 3 `texpands %t, 2`: valid cols of %t = %c = 9, outside [0, 8]", err.Error())
}

// A cube core pushes a product to a vector core through a queue; the vector core
// adds one, stores, and frees the slot. Three rounds exercise the depth of two.
func TestInterpretQueuesBetweenCores(t *testing.T) {
	cube := mustParse(t, `kernel producer cube
param %a: f16[256]
param %b: f16[256]
reg %k
tile %ma: mat f16[16x16]
tile %mb: mat f16[16x16]
tile %la: left f16[16x16]
tile %rb: right f16[16x16]
tile %acc: acc f32[16x16]
  tload %ma, %a[0; 16x16; 16,1]
  tload %mb, %b[0; 16x16; 16,1]
  tmov %la, %ma
  tmov %rb, %mb
  tmatmul %acc, %la, %rb
  loop %k, 3
    tpush 2, %acc
    tmatmul.acc %acc, %la, %rb
  endloop
end
`)
	vec := mustParse(t, `kernel consumer vector
param %y: f32[768]
reg %k
reg %off
tile %v: vec f32[16x16]
  loop %k, 3
    tpop %v, 2
    tfree 2
    tadds %v, %v, 1
    smul %off, %k, 256
    tstore %y[%off; 16x16; 16,1], %v
  endloop
end
`)
	a, b := make([]float64, 256), make([]float64, 256)
	for i := range a {
		a[i], b[i] = float64(i%7)-3, float64(i%5)*0.5
	}
	y := make([]byte, 768*4)
	err := InterpretCores([]Core{
		{Prog: cube, Params: [][]byte{dtype.Encode(dtype.Float16, a), dtype.Encode(dtype.Float16, b)}},
		{Prog: vec, Params: [][]byte{y}},
	}, InterpOptions{})
	require.NoError(t, err)
	got := dtype.Decode(dtype.Float32, y, 768)
	for round := 0; round < 3; round++ {
		for r := 0; r < 16; r++ {
			for c := 0; c < 16; c++ {
				sum := 0.0
				for k := 0; k < 16; k++ {
					sum += a[r*16+k] * b[k*16+c]
				}
				assert.Equal(t, float64(round+1)*sum+1, got[round*256+r*16+c])
			}
		}
	}
}

func TestInterpretQueueDeadlockAndMisuse(t *testing.T) {
	pop := mustParse(t, "kernel c vector\ntile %v: vec f32[1x8]\n  tpop %v, 1\nend\n")
	err := Interpret(pop, nil)
	require.Error(t, err)
	assert.Equal(t, "kernel c: instr 0 `tpop %v, 1`: deadlock: waits on queue 1, which no core will serve", err.Error())

	push := mustParse(t, "kernel p vector\ntile %v: vec f32[1x8]\n  tpush 0, %v\n  tpush 0, %v\n  tpush 0, %v\nend\n")
	err = Interpret(push, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "instr 2 `tpush 0, %v`: deadlock")

	free := mustParse(t, "kernel f vector\n  tfree 3\nend\n")
	assert.ErrorContains(t, Interpret(free, nil), "tfree of queue 3, which has no popped entry")

	other := mustParse(t, "kernel o vector\ntile %w: vec f32[2x8]\n  tpop %w, 0\nend\n")
	err = InterpretCores([]Core{{Prog: push}, {Prog: other}}, InterpOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "queue 0 holds a 1x8 tile, %w is 2x8")
}

func TestInterpretPrintAndNoValueInstructions(t *testing.T) {
	p := mustParse(t, `kernel dbg vector
param %x: f32[16]
tile %t: vec f32[2x8] valid 2x3
  tassign %t, 64
  tprefetch %x[0; 2x8; 8,1]
  set_flag mte2, v, 0
  tload %t, %x[0; 2x8; 8,1]
  wait_flag mte2, v, 0
  tsync all
  tprint %t
end
`)
	x := make([]float64, 16)
	for i := range x {
		x[i] = float64(i) / 2
	}
	var out bytes.Buffer
	err := InterpretCores([]Core{{Prog: p, Params: [][]byte{dtype.Encode(dtype.Float32, x)}}}, InterpOptions{Print: &out})
	require.NoError(t, err)
	assert.Equal(t, "%t f32[2x8] valid 2x3:\n0 0.5 1\n4 4.5 5\n", out.String())
}

func TestInterpretRuntimeIndexErrors(t *testing.T) {
	head := "kernel g vector\nparam %i: i32[8]\ntile %s: vec f32[1x8]\ntile %d: vec f32[1x8]\ntile %x: vec i32[1x8]\n  tload %x, %i[0; 1x8; 8,1]\n"
	cases := map[string]string{
		"tgather %d, %s, %x":              "index 9 at (0, 1) is outside %s's 8 elements",
		"tgatherb %d, %s, %x":             "byte offset 9 at (0, 1) is not a multiple of the 4-byte f32 element",
		"tscatter %d, %s, %x":             "index 9 at (0, 1) is outside %d's 8 elements",
		"tdiv %x, %x, %x":                 "integer division by zero",
		"mgather %d, %i[0; 1x8; 8,1], %x": "", // param and tile dtypes differ: a verify error
	}
	for body, want := range cases {
		t.Run(body, func(t *testing.T) {
			err := Interpret(mustParse(t, head+"  "+body+"\nend\n"), [][]byte{i32s(0, 9, 1, 2, 3, 4, 5, 6)})
			require.Error(t, err)
			if want == "" {
				var ve *VerifyError
				assert.ErrorAs(t, err, &ve)
				return
			}
			assert.Contains(t, err.Error(), want)
		})
	}
}

func TestInterpretParamBuffers(t *testing.T) {
	p := mustParse(t, "kernel b vector\nparam %x: f32[16]\nend\n")
	assert.EqualError(t, Interpret(p, nil), "kernel b: 0 param buffers for 1 params")
	assert.EqualError(t, Interpret(p, [][]byte{make([]byte, 8)}), "kernel b: param %x needs 64 bytes (16 x f32), its buffer has 8")
	assert.EqualError(t, InterpretCores(nil, InterpOptions{}), "isa: no program to interpret")
	var ve *VerifyError
	assert.ErrorAs(t, Interpret(&Program{Name: "bad"}, nil), &ve)
}

// The dynamic softmax of testdata (and docs/isa.md) against a float64 softmax.
func TestInterpretSoftmaxDynamic(t *testing.T) {
	p, err := ParseFile("testdata/softmax_dyn.pto")
	require.NoError(t, err)
	const rows, cols = 37, 128
	x := make([]float64, 131072)
	for i := range rows * cols {
		x[i] = math.Sin(float64(i)*0.37) * 4
	}
	y := make([]byte, 131072*4)
	require.NoError(t, Interpret(p, [][]byte{dtype.Encode(dtype.Float32, x), y, i32s(rows)}))
	got := dtype.Decode(dtype.Float32, y, 131072)
	for r := range rows {
		row := dtype.Decode(dtype.Float32, dtype.Encode(dtype.Float32, x[r*cols:(r+1)*cols]), cols)
		mx := math.Inf(-1)
		for _, v := range row {
			mx = math.Max(mx, v)
		}
		sum := 0.0
		for _, v := range row {
			sum += math.Exp(v - mx)
		}
		for c, v := range row {
			assert.InEpsilon(t, math.Exp(v-mx)/sum, got[r*cols+c], 1e-6, "(%d, %d)", r, c)
		}
	}
	for i := rows * cols; i < len(got); i++ {
		require.Zero(t, got[i], "element %d past the rows is untouched", i)
	}
}

// Every opcode has reference semantics.
func TestInterpretCoversEveryOpcode(t *testing.T) {
	for op := Opcode(1); int(op) < NumOpcodes(); op++ {
		if op != LOOP && op != ENDLOOP {
			assert.NotNil(t, execRules[op], "no semantics for %s", op)
		}
	}
}

// A closed Interrupt channel stops the reference interpreter at its next poll, naming
// the loop it was in.
func TestInterpretStopsOnInterrupt(t *testing.T) {
	p, err := Parse("kernel spin vector\nparam %x: f32[64]\nreg %i\ntile %t: vec f32[1x64]\n  loop %i, 1099511627776\n    tload %t, %x[0; 1x64; 64,1]\n  endloop\nend\n")
	require.NoError(t, err)
	stop := make(chan struct{})
	close(stop)
	err = InterpretCores([]Core{{Prog: p, Params: [][]byte{make([]byte, 256)}}}, InterpOptions{Interrupt: stop, MaxSteps: 5000})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "interrupted after 1023 executed instructions in the loop at instr 0 `loop %i, 1.099511627776e+12`, at iteration 512 of 1099511627776")
}
