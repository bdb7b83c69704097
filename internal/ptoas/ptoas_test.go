package ptoas

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/device"
	"pypto/isa"
)

// Every opcode is written (directly or as a sequence of the dialect's ops) or listed
// as one the 0.1.1 dialect cannot say, with the reason; none is both.
func TestEveryOpcodeIsWrittenOrListed(t *testing.T) {
	for op := isa.Opcode(1); int(op) < isa.NumOpcodes(); op++ {
		_, written := opWriters[op]
		_, listed := missing[op]
		assert.True(t, written != listed, "%s: written %v, listed as missing %v", op, written, listed)
	}
}

// goldenPrograms are the ISA's reference cases (one program per opcode with a value
// effect, and more) and the hand-written examples.
func goldenPrograms(t *testing.T) map[string]*isa.Program {
	out := map[string]*isa.Program{}
	var files []string
	for _, pat := range []string{"../../isa/testdata/*.pto", "../../isa/testdata/golden/*.pto", "../../cmd/pto/testdata/*.pto"} {
		m, err := filepath.Glob(pat)
		require.NoError(t, err)
		files = append(files, m...)
	}
	require.NotEmpty(t, files)
	for _, f := range files {
		p, err := isa.ParseFile(f)
		require.NoError(t, err, f)
		out[f] = p
	}
	return out
}

// The auto form of every reference program reads back to the program itself, or the
// export fails naming the kernel and a construct of the missing list.
func TestAutoFormReadsBackToTheProgram(t *testing.T) {
	written, refused := 0, 0
	for f, p := range goldenPrograms(t) {
		m, err := WriteTask(Task{Name: p.Name, Programs: []*isa.Program{p}})
		if err != nil {
			var e *Error
			require.True(t, errors.As(err, &e), "%s: %v", f, err)
			assert.Equal(t, p.Name, e.Kernel)
			assert.Contains(t, err.Error(), "the dialect", f)
			refused++
			continue
		}
		fns, err := Read(f, m.Text, 0)
		require.NoError(t, err, "%s:\n%s", f, m.Text)
		require.Len(t, fns, 1, f)
		require.Len(t, fns[0].Programs, 1, f)
		assert.Equal(t, isa.Format(canonical(p)), isa.Format(fns[0].Programs[0]), f)
		written++
	}
	t.Logf("%d programs written and read back, %d refused", written, refused)
	assert.Greater(t, written, 200)
}

// canonical is p with valid sizes that name the whole dimension written as 0 (the
// same region), as the reader gives them.
func canonical(p *isa.Program) *isa.Program {
	q := *p
	q.Tiles = append([]isa.TileDecl(nil), p.Tiles...)
	for i, t := range q.Tiles {
		if t.ValidRows == t.Rows {
			q.Tiles[i].ValidRows = 0
		}
		if t.ValidCols == t.Cols {
			q.Tiles[i].ValidCols = 0
		}
	}
	return &q
}

var liveRange = regexp.MustCompile(` live=-?\d+\.\.-?\d+`)

// The manual form of a machine program reads back, through device.CompilePlaced, to
// that machine program: the same instructions on the same pipes, tiles at the same
// addresses, the same flags (live ranges aside: they count the source program's
// instructions).
func TestManualFormReadsBackToTheMachineProgram(t *testing.T) {
	chip, err := device.Preset("a2")
	require.NoError(t, err)
	checked := 0
	for f, p := range goldenPrograms(t) {
		mp, err := device.Compile(chip, p)
		if err != nil {
			continue // programs a2 cannot run (Scaling tiles, ...)
		}
		m, err := WriteTask(ManualTask(p.Name, []*device.MachineProgram{mp}, 0))
		if err != nil {
			continue
		}
		fns, err := Read(f, m.Text, 0)
		require.NoError(t, err, f)
		back, err := device.CompilePlaced(chip, fns[0].Programs[0], fns[0].Addrs[0])
		require.NoError(t, err, f)
		assert.Equal(t, liveRange.ReplaceAllString(mp.String(), ""), liveRange.ReplaceAllString(back.String(), ""), f)
		checked++
	}
	assert.Greater(t, checked, 150)
}

// A task of several blocks is one function telling the blocks apart; a mixed task's
// queues become GM buffers, and both read back to the task's programs.
func TestTasksOfSeveralBlocksAndQueuesReadBack(t *testing.T) {
	parse := func(src string) *isa.Program {
		p, err := isa.Parse(src)
		require.NoError(t, err)
		return p
	}
	cube := func(b int) *isa.Program {
		return parse(strings.ReplaceAll(`kernel k_bB_c cube
param %a: f16[2048]
param %y: f16[2048]
tile %l1: mat f16[32x32] nz
tile %l: left f16[32x32] nz
tile %r: right f16[32x32] zn
tile %acc: acc f32[32x32] nz
  tload %l1, %a[B; 32x32; 32,1]
  tmov %l, %l1
  textract %r, %l1, 0, 0
  tmatmul %acc, %l, %r
  tpush 0, %acc
end
`, "B", map[int]string{0: "0", 1: "1024"}[b]))
	}
	vec := func(b int) *isa.Program {
		return parse(strings.ReplaceAll(`kernel k_bB_v0 vector
param %a: f16[2048]
param %y: f16[2048]
tile %t: vec f16[32x32]
  tpop %t, 0
  tmuls %t, %t, 0.5
  tfree 0
  tstore %y[B; 32x32; 32,1], %t
end
`, "B", map[int]string{0: "0", 1: "1024"}[b]))
	}
	task := Task{Name: "k", Vectors: 1, Programs: []*isa.Program{cube(0), vec(0), cube(1), vec(1)}}
	m, err := WriteTask(task)
	require.NoError(t, err)
	require.Len(t, m.Functions, 2)
	require.Len(t, m.Queues, 1)
	q := m.Queues[0]
	assert.Equal(t, "f16", q.DType)
	assert.Equal(t, 2*2*32*32, q.Elems)
	assert.Equal(t, isa.Cube, q.Producer)
	assert.Contains(t, m.Text, `"pto.sync.set"`)
	assert.Contains(t, m.Text, `"pto.get_block_idx"`)
	fns, err := Read("k.pto", m.Text, 0)
	require.NoError(t, err)
	require.Len(t, fns, 2)
	assert.Equal(t, 2, fns[0].Blocks)
	assert.Equal(t, 1, fns[1].SubBlocks)
	got := []*isa.Program{fns[0].Programs[0], fns[1].Programs[0], fns[0].Programs[1], fns[1].Programs[1]}
	for i, p := range task.Programs {
		assert.Equal(t, isa.Format(p), isa.Format(got[i]))
	}
}

// Bad input is an error at the line and column of what is wrong.
func TestReadErrorsArePlaced(t *testing.T) {
	head := "!v = !pto.tile_buf<loc=ub, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, blayout=row_major, slayout=none_box, fractal=512, pad=0>\n" +
		"module {\n  func.func @k(%x: !pto.ptr<f32> {pypto.elems = 256 : i64}) attributes {pypto.core = \"vector\"} {\n" +
		"    %c0 = arith.constant 0 : index\n    %c1 = arith.constant 1 : index\n    %c16 = arith.constant 16 : index\n" +
		"    %xv = pto.make_tensor_view %x, shape = [%c16, %c16] strides = [%c16, %c1] : !pto.tensor_view<2xf32>\n" +
		"    %t = pto.alloc_tile : !v\n"
	tail := "    return\n  }\n}\n"
	load := "    %s = pto.subview %xv, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<2xf32> -> !pto.tile_view<16x16xf32>\n" +
		"    \"pto.tload\"(%s, %t) : (!pto.tile_view<16x16xf32>, !v) -> ()\n"
	cases := []struct{ name, body, want string }{
		{"malformed", "    %s = pto.subview %xv, offsets = [%c0, %c0 : \n", "k.pto:9:"},
		{"unclosed module", "", "expected"},
		{"unknown op", "    \"pto.tfrobnicate\"(%t, %t) : (!v, !v) -> ()\n", "k.pto:9:5: op pto.tfrobnicate has no PyPTO instruction"},
		{"unknown dialect", "    \"gpu.barrier\"() : () -> ()\n", "k.pto:9:5: unknown op gpu.barrier"},
		{"wrong types", "    %u = pto.alloc_tile : !pto.tile_buf<loc=ub, dtype=f16, rows=16, cols=16, v_row=16, v_col=16, blayout=row_major, slayout=none_box, fractal=512, pad=0>\n" +
			"    \"pto.tadd\"(%t, %u, %t) : (!v, !v, !v) -> ()\n", "k.pto:10:5:"},
		{"window outside its tensor", "    %s = pto.subview %xv, offsets = [%c16, %c0], sizes = [%c16, %c16] : !pto.tensor_view<2xf32> -> !pto.tile_view<16x16xf32>\n" +
			"    \"pto.tload\"(%s, %t) : (!pto.tile_view<16x16xf32>, !v) -> ()\n", "k.pto:10:5:"},
		{"wait without a set", load + "    pto.wait_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID0>]\n", "k.pto:11:5:"},
		{"set never waited", load + "    pto.set_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID0>]\n", "k.pto:"},
		{"cross-core wait", "    \"pto.sync.wait\"() <{pipe = #pto.pipe<PIPE_MTE2>, event_id = 0 : i32}> : () -> ()\n", "k.pto:9:5: pto.sync.wait outside a queue hand-off"},
		{"undefined value", "    \"pto.texp\"(%nope, %t) : (!v, !v) -> ()\n", "k.pto:9:5: use of undefined value %nope"},
		{"pointer without size", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := head + c.body + tail
			switch c.name {
			case "unclosed module":
				src = head + c.body
			case "pointer without size":
				src = strings.Replace(head, " {pypto.elems = 256 : i64}", "", 1) + tail
				c.want = "k.pto:3:16: argument %x: its element count is not given"
			}
			_, err := Read("k.pto", src, 0)
			require.Error(t, err)
			var re *ReadError
			require.True(t, errors.As(err, &re), "%v", err)
			assert.Contains(t, err.Error(), c.want)
			assert.Regexp(t, `^k\.pto:\d+:\d+: `, err.Error())
		})
	}
}

// The reader takes hand-written PTO-AS: custom op forms, arith on index values, loops
// from any bound, and the block index in address arithmetic.
func TestReadsHandWrittenPTOAS(t *testing.T) {
	src := `
!v = !pto.tile_buf<loc=ub, dtype=f32, rows=8, cols=32, v_row=8, v_col=32, blayout=row_major, slayout=none_box, fractal=512, pad=0>
module {
  func.func @double(%x: !pto.ptr<f32> {pypto.elems = 1024 : i64}, %y: !pto.ptr<f32> {pypto.elems = 1024 : i64}) attributes {pypto.blocks = 2 : i64} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c8 = arith.constant 8 : index
    %c32 = arith.constant 32 : index
    %c256 = arith.constant 256 : index
    %s = arith.constant 2.0 : f32
    %b = "pto.get_block_idx"() : () -> i64
    %bi = emitc.cast %b : i64 to index
    %base = arith.muli %bi, %c256 : index
    %xv = pto.make_tensor_view %x, shape = [%c32, %c32] strides = [%c32, %c1] : !pto.tensor_view<2xf32>
    %yv = pto.make_tensor_view %y, shape = [%c32, %c32] strides = [%c32, %c1] : !pto.tensor_view<2xf32>
    %t = pto.alloc_tile : !v
    scf.for %i = %c1 to %c2 step %c1 {
      %off = arith.muli %i, %c8 : index
      %row = arith.addi %off, %c0 : index
      %sx = pto.subview %xv, offsets = [%row, %base], sizes = [%c8, %c32] : !pto.tensor_view<2xf32> -> !pto.tile_view<8x32xf32>
      pto.tload ins(%sx : !pto.tile_view<8x32xf32>) outs(%t : !v)
      pto.tmuls ins(%t, %s : !v, f32) outs(%t : !v)
      %sy = pto.subview %yv, offsets = [%row, %base], sizes = [%c8, %c32] : !pto.tensor_view<2xf32> -> !pto.tile_view<8x32xf32>
      pto.tstore ins(%t : !v) outs(%sy : !pto.tile_view<8x32xf32>)
    }
    return
  }
}
`
	fns, err := Read("double.pto", src, 0)
	require.NoError(t, err)
	require.Len(t, fns[0].Programs, 2)
	text := isa.Format(fns[0].Programs[1])
	// Block 1's base column is 256: its windows start there, and the loop from 1 runs
	// once with the induction variable computed from the counter.
	assert.Contains(t, text, "tmuls %t, %t, 2")
	assert.Regexp(t, `tload %t, %x\[%\w+\+256; 8x32; 32,1\]`, text)
	assert.Contains(t, text, "loop %")
}

func sortedNames(m map[string]*isa.Program) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

var _ = os.ReadFile
