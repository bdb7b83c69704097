package ptoas

import (
	"path/filepath"
	"testing"

	"pypto/isa"
)

// FuzzRead: the reader never panics on any text; what it reads, written again as
// PTO-AS, reads back to the same programs.
func FuzzRead(f *testing.F) {
	files, _ := filepath.Glob("../../isa/testdata/*.pto")
	for _, file := range files {
		p, err := isa.ParseFile(file)
		if err != nil {
			continue
		}
		if m, err := WriteTask(Task{Name: p.Name, Programs: []*isa.Program{p}}); err == nil {
			f.Add(m.Text)
		}
	}
	f.Add("module { func.func @k() { return } }")
	f.Add(`!t = !pto.tile_buf<loc=ub, dtype=f32, rows=8, cols=8>
func.func @k(%x: !pto.ptr<f32> {pypto.elems = 64 : i64}) attributes {pypto.blocks = 2 : i64} {
  %c0 = arith.constant 0 : index
  %b = "pto.get_block_idx"() : () -> i64
  %t = pto.alloc_tile : !t
  scf.for %i = %c0 to %c0 step %c0 { }
  return
}`)
	f.Fuzz(func(t *testing.T, src string) {
		fns, err := Read("fuzz.pto", src, 0)
		if err != nil {
			return
		}
		for _, fn := range fns {
			if len(fn.Programs) == 0 || len(fn.Programs) > 8 || fn.SubBlocks > 0 {
				continue
			}
			m, err := WriteTask(Task{Name: fn.Name, Programs: fn.Programs})
			if err != nil {
				continue
			}
			back, err := Read("again.pto", m.Text, 0)
			if err != nil {
				t.Fatalf("written text does not read back: %v\n%s", err, m.Text)
			}
			for i, p := range fn.Programs {
				if got, want := isa.Format(back[0].Programs[i]), isa.Format(canonical(p)); got != want {
					t.Fatalf("program %d changed:\n%s\nvs\n%s", i, want, got)
				}
			}
		}
	})
}
