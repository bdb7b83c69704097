package isa

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/dtype"
)

// canonical drops the comment and blank lines a testdata file starts with.
func canonical(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		if s := strings.TrimSpace(l); s != "" && !strings.HasPrefix(s, "#") && !strings.HasPrefix(s, "//") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n") + "\n"
}

func TestTextRoundTripTestdata(t *testing.T) {
	files, err := filepath.Glob("testdata/*.pto")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			p, err := ParseFile(f)
			require.NoError(t, err)
			assert.Equal(t, canonical(t, f), Format(p), "testdata is canonical text")
			again, err := Parse(Format(p))
			require.NoError(t, err)
			assertSameProgram(t, p, again)
			assert.Equal(t, p, again, "deep-equal, not only equal under assertSameProgram")
			assert.NoError(t, Verify(p, nil), "testdata programs are valid")
		})
	}
}

func TestParseBuildsTheProgram(t *testing.T) {
	p, err := ParseFile("testdata/matmul.pto")
	require.NoError(t, err)
	assert.Equal(t, "mm_0", p.Name)
	assert.Equal(t, Cube, p.Core)
	assert.Equal(t, []Param{{"a", dtype.Float16, 156000}, {"b", dtype.Float16, 67600}, {"c", dtype.Float16, 39000}}, p.Params)
	assert.Equal(t, TileDecl{Name: "acc", Loc: Acc, DType: dtype.Float32, Rows: 64, Cols: 64}, p.Tiles[4])
	assert.Equal(t, Instr{Op: TLOAD, Args: []Operand{TileOp(0), GMOp(GMView{Param: 0, Offset: 0, Rows: 64, Cols: 64, RowStride: 520, ColStride: 1})}}, p.Body[0])
	assert.Equal(t, Instr{Op: SET_FLAG, Args: []Operand{PipeOp(PipeMTE2), PipeOp(PipeMTE1), ImmOp(0)}}, p.Body[2])
	assert.Equal(t, Instr{Op: TEXTRACT, Args: []Operand{TileOp(3), TileOp(1), ImmOp(0), ImmOp(0)}}, p.Body[5])
	assert.Equal(t, Instr{Op: TMATMUL_ACC, Args: []Operand{TileOp(4), TileOp(2), TileOp(3)}}, p.Body[9])
	assert.Equal(t, Instr{Op: TSYNC, Args: []Operand{PipeOp(PipeAll)}}, p.Body[13])
}

// assertSameProgram compares programs field by field, immediates by their bits, so
// that NaN equals NaN and -0 differs from +0 (reflect.DeepEqual gets both wrong).
func assertSameProgram(t testing.TB, want, got *Program) {
	t.Helper()
	if !sameProgram(want, got) {
		t.Fatalf("programs differ:\n%s\n---\n%s", Format(want), Format(got))
	}
}

func sameProgram(a, b *Program) bool {
	if a.Name != b.Name || a.Core != b.Core || len(a.Params) != len(b.Params) || len(a.Regs) != len(b.Regs) || len(a.Tiles) != len(b.Tiles) || len(a.Body) != len(b.Body) {
		return false
	}
	for i := range a.Params {
		if a.Params[i] != b.Params[i] {
			return false
		}
	}
	for i := range a.Regs {
		if a.Regs[i] != b.Regs[i] {
			return false
		}
	}
	for i := range a.Tiles {
		if a.Tiles[i] != b.Tiles[i] {
			return false
		}
	}
	for i := range a.Body {
		x, y := a.Body[i], b.Body[i]
		if x.Op != y.Op || x.Mode != y.Mode || len(x.Args) != len(y.Args) {
			return false
		}
		for k := range x.Args {
			u, w := x.Args[k], y.Args[k]
			if u.Kind != w.Kind || u.Tile != w.Tile || u.GM != w.GM || u.Pipe != w.Pipe || u.Reg != w.Reg || math.Float64bits(u.Imm) != math.Float64bits(w.Imm) {
				return false
			}
		}
	}
	return true
}

// A program built in Go (as lower/ does) prints, and parses back deep-equal.
func TestFormatBuiltProgram(t *testing.T) {
	p := &Program{
		Name:   "imm",
		Core:   Vector,
		Params: []Param{{Name: "x y", DType: dtype.BFloat16, Elems: 0}},
		Tiles:  []TileDecl{{Name: "t", Loc: Vec, DType: dtype.Int8, Rows: 1, Cols: 32}},
		Body: []Instr{
			{Op: TLOAD, Args: []Operand{TileOp(0), GMOp(GMView{Param: 0, Offset: 5, Rows: 0, Cols: 0, RowStride: 3, ColStride: 0})}},
			{Op: SET_FLAG, Args: []Operand{PipeOp(PipeV), PipeOp(PipeMTE3), ImmOp(-0.0)}},
			{Op: SET_FLAG, Args: []Operand{PipeOp(PipeV), PipeOp(PipeMTE3), ImmOp(math.Copysign(0, -1))}},
			{Op: SET_FLAG, Args: []Operand{PipeOp(PipeV), PipeOp(PipeMTE3), ImmOp(0.1)}},
			{Op: SET_FLAG, Args: []Operand{PipeOp(PipeV), PipeOp(PipeMTE3), ImmOp(1e300)}},
			{Op: SET_FLAG, Args: []Operand{PipeOp(PipeV), PipeOp(PipeMTE3), ImmOp(math.Inf(-1))}},
			{Op: SET_FLAG, Args: []Operand{PipeOp(PipeV), PipeOp(PipeMTE3), ImmOp(math.NaN())}},
			{Op: SET_FLAG, Args: []Operand{PipeOp(PipeV), PipeOp(PipeMTE3), ImmOp(5e-324)}},
		},
	}
	text := Format(p)
	assert.Equal(t, `kernel imm vector
param %"x y": bf16[0]
tile %t: vec i8[1x32]
  tload %t, %"x y"[5; 0x0; 3,0]
  set_flag v, mte3, 0
  set_flag v, mte3, -0
  set_flag v, mte3, 0.1
  set_flag v, mte3, 1e+300
  set_flag v, mte3, -Inf
  set_flag v, mte3, NaN
  set_flag v, mte3, 5e-324
end
`, text)
	got, err := Parse(text)
	require.NoError(t, err)
	assertSameProgram(t, p, got)
}

func TestParseToleratesLayout(t *testing.T) {
	src := "\n\n   # leading comment\n// another\r\n\t kernel  k   cube # trailing\r\n" +
		"param %g : f32 [ 64 ]\n" +
		"tile %m : mat f32[ 2 x 8 ]\n" +
		"tload   %m ,%g[ 0 ;2x8 ; 8 , 1 ]// comment\n" +
		"tile %v: vec f32[2x8]\n" + // declarations may follow instructions
		"TSYNC all\n" +
		"end # done\n\n# trailing comment\n"
	_, err := Parse(src)
	require.Error(t, err, "opcodes are lower case")
	p, err := Parse(strings.Replace(src, "TSYNC", "tsync", 1))
	require.NoError(t, err)
	assert.Equal(t, "kernel k cube\nparam %g: f32[64]\ntile %m: mat f32[2x8]\ntile %v: vec f32[2x8]\n  tload %m, %g[0; 2x8; 8,1]\n  tsync all\nend\n", Format(p))
}

func TestParseFileErrorsNameTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.pto")
	require.NoError(t, os.WriteFile(path, []byte("# header\nkernel k cube\n  tfoo %x\nend\n"), 0o644))
	_, err := ParseFile(path)
	require.Error(t, err)
	assert.Equal(t, path+":3:3: expected instruction, 'param', 'tile' or 'end', found 'tfoo'", err.Error())
	var pe *ParseError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, 3, pe.Line)
	assert.Equal(t, 3, pe.Col)

	_, err = ParseFile(filepath.Join(t.TempDir(), "missing.pto"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestParseErrors(t *testing.T) {
	head := "kernel k cube\nparam %a: f16[4096]\ntile %m: mat f16[64x64]\ntile %l: left f16[64x64]\n"
	cases := []struct{ src, want string }{
		{"", "1:1: expected 'kernel', found end of input"},
		{"# only a comment\n", "2:1: expected 'kernel', found end of input"},
		{"tload %x\n", "1:1: expected 'kernel', found 'tload'"},
		{"kernel\n", "1:7: expected kernel name (identifier or quoted string), found end of line"},
		{"kernel 9k cube\n", "1:8: expected kernel name (identifier or quoted string), found '9k'"},
		{"kernel k gpu\n", "1:10: expected core kind (cube or vector), found 'gpu'"},
		{"kernel k cube extra\n", "1:15: expected end of line after the kernel header, found 'extra'"},
		{"kernel \"k\n", "1:8: expected kernel name, found an unterminated string"},
		{"kernel k cube\n", "2:1: expected 'end', found end of input"},
		{head + "end\nend\n", "6:1: expected end of input after 'end', found 'end'"},
		{head + "end junk\n", "5:5: expected end of line after 'end', found 'junk'"},
		{head + "param a: f16[1]\n", "5:7: expected param (%name), found 'a'"},
		{head + "param %1: f16[1]\n", "5:8: expected param name after '%', found '1'"},
		{head + "param %\"\": f16[1]\n", "5:8: expected param name, found an empty name"},
		{head + "param %\"\\q\": f16[1]\n", "5:8: expected param name, found invalid quoted string \"\\q\""},
		{head + "param %a: f16[1]\n", "5:7: %a is already declared on line 2"},
		{head + "tile %a: vec f16[16x16]\n", "5:6: %a is already declared on line 2"},
		{head + "param %b f16[1]\n", "5:10: expected ':' after the param name, found 'f16'"},
		{head + "param %b: f64[1]\n", "5:11: expected dtype (f32, f16, bf16, i8, i32, bool), found 'f64'"},
		{head + "param %b: f16 1\n", "5:15: expected '[' after the dtype, found '1'"},
		{head + "param %b: f16[x]\n", "5:15: expected element count (an integer), found 'x'"},
		{head + "param %b: f16[99999999999999999999]\n", "5:15: expected element count, found 99999999999999999999, which is out of range"},
		{head + "param %b: f16[1\n", "5:16: expected ']' after the element count, found end of line"},
		{head + "param %b: f16[1] x\n", "5:18: expected end of line after the param declaration, found 'x'"},
		{head + "tile %t: l1 f16[16x16]\n", "5:10: expected location (mat, left, right, acc, vec, bias, scaling), found 'l1'"},
		{head + "tile %t: vec f16[16,16]\n", "5:20: expected 'x' between rows and cols, found ','"},
		{head + "tile %t: vec f16[16x]\n", "5:21: expected cols (an integer), found ']'"},
		{head + "tfoo %m\n", "5:1: expected instruction, 'param', 'tile' or 'end', found 'tfoo'"},
		{head + "tmov %l\n", "5:8: expected ',' before operand 2 of tmov, found end of line"},
		{head + "tmov %l, %m, %m\n", "5:12: expected end of line after the 2 operands of tmov (tile, tile), found ','"},
		{head + "tmov l, %m\n", "5:6: expected tile (%name), found 'l'"},
		{head + "tmov %q, %m\n", "5:6: expected tile, found %q, which is not declared"},
		{head + "tmov %a, %m\n", "5:6: expected tile, found param %a"},
		{head + "tload %m, %m[0; 1x1; 1,1]\n", "5:11: expected param, found tile %m"},
		{head + "tload %m, %a\n", "5:13: expected '[' after the param of a GM view, found end of line"},
		{head + "tload %m, %a[0, 1x1; 1,1]\n", "5:15: expected ';' after the view offset, found ','"},
		{head + "tload %m, %a[0; 1x1; 1;1]\n", "5:23: expected ',' between the row and col strides, found ';'"},
		{head + "tload %m, %a[0; 1x1; 1,1\n", "5:25: expected ']' closing the GM view, found end of line"},
		{head + "textract %l, %m, x, 0\n", "5:18: expected number, found 'x'"},
		{head + "textract %l, %m, 1e999, 0\n", "5:18: expected number, found 1e999, which is out of range of float64"},
		{head + "textract %l, %m, , 0\n", "5:18: expected number, found ','"},
		{head + "set_flag mte2, gpu, 0\n", "5:16: expected pipe (s, mte1, mte2, mte3, m, v, fix, all), found 'gpu'"},
		{head + "set_flag mte2 m, 0\n", "5:15: expected ',' before operand 2 of set_flag, found 'm'"},
	}
	for _, c := range cases {
		t.Run(c.want, func(t *testing.T) {
			_, err := Parse(c.src)
			require.Error(t, err)
			var pe *ParseError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, c.want, err.Error())
		})
	}
}

// FuzzParseProgram: Parse never panics, and what it accepts prints back to text that
// parses to the same program and prints the same again.
func FuzzParseProgram(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.pto")
	golden, _ := filepath.Glob("testdata/golden/t[a-c]*.pto") // a sample of the golden programs
	for _, name := range append(files, golden...) {
		data, err := os.ReadFile(name)
		require.NoError(f, err)
		f.Add(string(data))
	}
	f.Fuzz(func(t *testing.T, src string) {
		p, err := Parse(src)
		if err != nil {
			if _, ok := err.(*ParseError); !ok {
				t.Fatalf("Parse error is not a *ParseError: %#v", err)
			}
			return
		}
		text := Format(p)
		again, err := Parse(text)
		if err != nil {
			t.Fatalf("Format output does not parse: %v\n%s", err, text)
		}
		assertSameProgram(t, p, again)
		if got := Format(again); got != text {
			t.Fatalf("printing is not stable:\n%s\n---\n%s", text, got)
		}
		decoded, err := Decode(Encode(p))
		if err != nil {
			t.Fatalf("the binary form of a parsed program does not decode: %v", err)
		}
		assertSameProgram(t, p, decoded)
		_ = Verify(p, func(Location) int { return 1 << 20 }) // must not panic either
		interpretIfSmall(p)
	})
}

// interpretIfSmall runs a verified program with zeroed params on the reference
// interpreter, which must not panic: the verifier establishes everything the
// interpreter relies on. Programs with large params are skipped to bound memory.
func interpretIfSmall(p *Program) {
	if Verify(p, nil) != nil {
		return
	}
	params := make([][]byte, len(p.Params))
	for i, prm := range p.Params {
		n, ok := prm.Bytes()
		if !ok || n > 1<<20 {
			return
		}
		params[i] = make([]byte, n)
	}
	_ = InterpretCores([]Core{{Prog: p, Params: params}}, InterpOptions{MaxSteps: 100000})
}

// A program assembled the way lower/ emits one parses back reflect.DeepEqual to itself.
func TestParseFormatDeepEqual(t *testing.T) {
	p := &Program{Name: "matmul_0", Core: Cube}
	p.Params = []Param{{Name: "t0", DType: dtype.Int8, Elems: 300 * 520}, {Name: "t1", DType: dtype.Int8, Elems: 520 * 130}, {Name: "t2", DType: dtype.Int32, Elems: 300 * 130}}
	p.Tiles = []TileDecl{
		{Name: "a_l1_0", Loc: Mat, DType: dtype.Int8, Rows: 64, Cols: 64},
		{Name: "b_l1_0", Loc: Mat, DType: dtype.Int8, Rows: 64, Cols: 64},
		{Name: "a_l0_0", Loc: Left, DType: dtype.Int8, Rows: 64, Cols: 64},
		{Name: "b_l0_0", Loc: Right, DType: dtype.Int8, Rows: 64, Cols: 64},
		{Name: "acc", Loc: Acc, DType: dtype.Int32, Rows: 64, Cols: 64},
	}
	p.Body = []Instr{
		{Op: TLOAD, Args: []Operand{TileOp(0), GMOp(GMView{Param: 0, Offset: 256 * 520, Rows: 44, Cols: 64, RowStride: 520, ColStride: 1})}},
		{Op: TLOAD, Args: []Operand{TileOp(1), GMOp(GMView{Param: 1, Offset: 128, Rows: 64, Cols: 2, RowStride: 1, ColStride: 520})}},
		{Op: TMOV, Args: []Operand{TileOp(2), TileOp(0)}},
		{Op: TMOV, Args: []Operand{TileOp(3), TileOp(1)}},
		{Op: TMATMUL, Args: []Operand{TileOp(4), TileOp(2), TileOp(3)}},
		{Op: TSTORE, Args: []Operand{GMOp(GMView{Param: 2, Offset: 256*130 + 128, Rows: 44, Cols: 2, RowStride: 130, ColStride: 1}), TileOp(4)}},
	}
	require.NoError(t, Verify(p, nil))
	got, err := Parse(Format(p))
	require.NoError(t, err)
	assert.Equal(t, p, got)
}
