package device

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"pypto/dtype"
	"pypto/isa"
)

// gemmSpec describes a tiled C = A @ B task: one block per C tile, a K loop per block.
type gemmSpec struct {
	M, N, K    int
	TM, TN, TK int
	In, Out    dtype.DType
	PingPong   bool // alternate two sets of L1/L0 tiles between K steps
	Extract    bool // load a TM x K panel of A once and TEXTRACT each K slice
}

func ceil(a, b int) int { return (a + b - 1) / b }

func (s gemmSpec) acc() dtype.DType {
	if s.In == dtype.Int8 {
		return dtype.Int32
	}
	return dtype.Float32
}

func (s gemmSpec) grid() (int, int) { return ceil(s.M, s.TM), ceil(s.N, s.TN) }

// program builds the block that computes C tile (bi, bj).
func (s gemmSpec) program(bi, bj int) *isa.Program {
	b := newProg(fmt.Sprintf("gemm_%d_%d", bi, bj), isa.Cube)
	pa := b.param("a", s.In, s.M*s.K)
	pb := b.param("b", s.In, s.K*s.N)
	pc := b.param("c", s.Out, s.M*s.N)
	kTiles := ceil(s.K, s.TK)
	copies := 1
	if s.PingPong {
		copies = 2
	}
	var aMat, bMat, aL0, bL0 [2]int
	for c := range copies {
		if !s.Extract {
			aMat[c] = b.tile(fmt.Sprintf("a_l1_%d", c), isa.Mat, s.In, s.TM, s.TK)
		}
		bMat[c] = b.tile(fmt.Sprintf("b_l1_%d", c), isa.Mat, s.In, s.TK, s.TN)
		aL0[c] = b.tile(fmt.Sprintf("a_l0_%d", c), isa.Left, s.In, s.TM, s.TK)
		bL0[c] = b.tile(fmt.Sprintf("b_l0_%d", c), isa.Right, s.In, s.TK, s.TN)
	}
	panel := -1
	if s.Extract {
		panel = b.tile("a_panel", isa.Mat, s.In, s.TM, kTiles*s.TK)
	}
	acc := b.tile("acc", isa.Acc, s.acc(), s.TM, s.TN)
	i0, j0 := bi*s.TM, bj*s.TN
	vm, vn := min(s.TM, s.M-i0), min(s.TN, s.N-j0)
	if s.Extract {
		b.op(isa.TLOAD, tl(panel), view(pa, i0*s.K, vm, s.K, s.K))
	}
	for kt := range kTiles {
		c := kt % copies
		k0 := kt * s.TK
		vk := min(s.TK, s.K-k0)
		if s.Extract {
			b.op(isa.TEXTRACT, tl(aL0[c]), tl(panel), isa.ImmOp(0), isa.ImmOp(float64(k0)))
		} else {
			b.op(isa.TLOAD, tl(aMat[c]), view(pa, i0*s.K+k0, vm, vk, s.K))
			b.op(isa.TMOV, tl(aL0[c]), tl(aMat[c]))
		}
		b.op(isa.TLOAD, tl(bMat[c]), view(pb, k0*s.N+j0, vk, vn, s.N))
		b.op(isa.TMOV, tl(bL0[c]), tl(bMat[c]))
		mm := isa.TMATMUL
		if kt > 0 {
			mm = isa.TMATMUL_ACC
		}
		b.op(mm, tl(acc), tl(aL0[c]), tl(bL0[c]))
	}
	b.op(isa.TSTORE, view(pc, i0*s.N+j0, vm, vn, s.N), tl(acc))
	return b.p
}

// run compiles every block and runs the task on chip; it returns C's bytes.
func (s gemmSpec) run(t testing.TB, chip *Chip, a, bm []float64, opts RunOptions) ([]byte, *TaskStats) {
	t.Helper()
	gi, gj := s.grid()
	l := layout(dtype.Encode(s.In, a), dtype.Encode(s.In, bm), make([]byte, s.M*s.N*s.Out.Size()))
	var blocks []Block
	for bi := range gi {
		for bj := range gj {
			m := compile(t, chip, s.program(bi, bj))
			blocks = append(blocks, Block{Prog: m, ParamAddrs: l.addrs})
		}
	}
	st, err := RunTask(chip, l.gm, isa.Cube, blocks, opts)
	require.NoError(t, err)
	return l.bytes(2, s.M*s.N*s.Out.Size()), st
}

// refMirror computes C with exactly the simulator's documented arithmetic: products
// added one at a time in increasing k into a float32 (or int32) accumulator, then the
// fixpipe's conversion to Out.
func (s gemmSpec) refMirror(a, b []float64) []float64 {
	out := make([]float64, s.M*s.N)
	for i := range s.M {
		for j := range s.N {
			if s.In == dtype.Int8 {
				var acc int32
				for k := range s.K {
					acc += int32(a[i*s.K+k]) * int32(b[k*s.N+j])
				}
				out[i*s.N+j] = float64(acc)
				continue
			}
			var acc float32
			for k := range s.K {
				acc += float32(float32(a[i*s.K+k]) * float32(b[k*s.N+j]))
			}
			out[i*s.N+j] = dtype.Round(s.Out, float64(acc))
		}
	}
	return out
}

// ref64 computes C in float64 and rounds once to Out.
func (s gemmSpec) ref64(a, b []float64) []float64 {
	out := make([]float64, s.M*s.N)
	for i := range s.M {
		for j := range s.N {
			var acc float64
			for k := range s.K {
				acc += a[i*s.K+k] * b[k*s.N+j]
			}
			out[i*s.N+j] = dtype.Round(s.Out, acc)
		}
	}
	return out
}
