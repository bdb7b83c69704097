package isa

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/dtype"
	"pypto/internal/npzvals"
)

// The golden cases of testdata/golden, written by gen.py from numpy: one program per
// case and a .npz with the inputs (keyed by param name), the expected GM of output
// params (want_<param>), expected final tile values (tile_<tile>) and the tolerance
// in units in the last place (ulp; 0 = bit exact). Every opcode with a value effect
// appears in at least one case (TestGoldenCoverEveryOpcode).
func TestGolden(t *testing.T) {
	cases := goldenCases(t)
	for _, name := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := ParseFile(filepath.Join("testdata/golden", name+".pto"))
			require.NoError(t, err)
			arrays := readNPZ(t, filepath.Join("testdata/golden", name+".npz"))
			params := make([][]byte, len(p.Params))
			for i, prm := range p.Params {
				params[i] = make([]byte, prm.Elems*prm.DType.Size())
				if in, ok := arrays[prm.Name]; ok {
					require.Len(t, in, prm.Elems, "input %s", prm.Name)
					params[i] = dtype.Encode(prm.DType, in)
				}
			}
			m, err := runForTest(p, params)
			require.NoError(t, err)
			ulp := int(arrays["ulp"][0])
			checked := 0
			for i, prm := range p.Params {
				if want, ok := arrays["want_"+prm.Name]; ok {
					assertClose(t, prm.DType, want, dtype.Decode(prm.DType, params[i], prm.Elems), ulp, "param %s", prm.Name)
					checked++
				}
			}
			for i, td := range p.Tiles {
				if want, ok := arrays["tile_"+td.Name]; ok {
					assertClose(t, td.DType, want, m.tiles[i], ulp, "tile %s", td.Name)
					checked++
				}
			}
			assert.Positive(t, checked, "the case checks nothing")
		})
	}
}

func goldenCases(t *testing.T) []string {
	data, err := os.ReadFile("testdata/golden/CASES")
	require.NoError(t, err)
	return strings.Fields(string(data))
}

// TestGoldenCoverEveryOpcode: the golden cases together use every opcode that
// computes a value; the others are covered by the hand-written tests of
// interp_test.go.
func TestGoldenCoverEveryOpcode(t *testing.T) {
	used := map[Opcode]bool{}
	for _, name := range goldenCases(t) {
		p, err := ParseFile(filepath.Join("testdata/golden", name+".pto"))
		require.NoError(t, err)
		for _, in := range p.Body {
			used[in.Op] = true
		}
	}
	handWritten := map[Opcode]bool{SET_FLAG: true, WAIT_FLAG: true, TSYNC: true, TASSIGN: true, TPRINT: true,
		TPUSH: true, TPOP: true, TFREE: true, SMOV: true, SADD: true, SSUB: true, SMUL: true, SDIV: true,
		SREM: true, SMIN: true, SMAX: true, SLD: true, LOOP: true, ENDLOOP: true}
	for op := Opcode(1); int(op) < NumOpcodes(); op++ {
		if !handWritten[op] {
			assert.True(t, used[op], "no golden case uses %s", op)
		}
	}
}

// runForTest runs one program like Interpret and returns the machine, so that tests
// can read final tile values.
func runForTest(p *Program, params [][]byte) (*machine, error) {
	if err := Verify(p, nil); err != nil {
		return nil, err
	}
	m, err := newMachine(Core{Prog: p, Params: params}, &shared{print: io.Discard, maxSteps: DefaultMaxSteps})
	if err != nil {
		return nil, err
	}
	if _, err := m.run(); err != nil {
		return nil, err
	}
	if !m.done() {
		return nil, deadlock([]*machine{m})
	}
	return m, nil
}

// readNPZ reads every array of a .npz as float64 values (gen.py stores f32, i32 and i8).
func readNPZ(t *testing.T, path string) map[string][]float64 {
	t.Helper()
	out, err := npzvals.ReadFile(path)
	require.NoError(t, err)
	return out
}

// assertClose compares values of dtype d: equal bits (NaN equal to NaN), or within ulp
// units in the last place for float dtypes.
func assertClose(t *testing.T, d dtype.DType, want, got []float64, ulp int, msgAndArgs ...any) {
	t.Helper()
	require.Equal(t, len(want), len(got), msgAndArgs...)
	bad := 0
	var first string
	for i := range want {
		w, g := want[i], got[i]
		if w == g || math.IsNaN(w) && math.IsNaN(g) {
			continue
		}
		if d.IsFloat() && ulp > 0 && ulpDistance(d, w, g) <= uint64(ulp) {
			continue
		}
		if bad == 0 {
			first = fmt.Sprintf("element %d: want %v, got %v", i, w, g)
		}
		bad++
	}
	if bad > 0 {
		assert.Fail(t, fmt.Sprintf("%d of %d elements differ; first: %s", bad, len(want), first), msgAndArgs...)
	}
}

// ulpDistance counts the representable values of d between a and b.
func ulpDistance(d dtype.DType, a, b float64) uint64 {
	ord := func(x float64) int64 {
		bits := int64(floatBits(d, x))
		sign := int64(1) << 31
		if d != dtype.Float32 {
			sign = 1 << 15
		}
		if bits&sign != 0 {
			return -(bits &^ sign)
		}
		return bits
	}
	diff := ord(a) - ord(b)
	if diff < 0 {
		diff = -diff
	}
	return uint64(diff)
}
