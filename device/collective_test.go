package device

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"pypto/dtype"
)

// The alpha-beta-gamma formulas of HCCL's algorithm guide, written out independently
// of the step simulation: n message bytes, p ranks.
func formula(kind, algo string, p int, n, a, b, g float64) float64 {
	fp := float64(p)
	lg := math.Log2(fp)
	switch kind + "/" + algo {
	case "reduce_scatter/mesh":
		return a + n/fp*b + (fp-1)/fp*n*g
	case "reduce_scatter/ring":
		return (fp-1)*a + (fp-1)/fp*n*b + (fp-1)/fp*n*g
	case "reduce_scatter/hd":
		return lg*a + (fp-1)/fp*n*b + (fp-1)/fp*n*g
	case "all_gather/mesh":
		return a + n/fp*b
	case "all_gather/ring":
		return (fp-1)*a + (fp-1)/fp*n*b
	case "all_gather/hd":
		return lg*a + (fp-1)/fp*n*b
	case "all_reduce/mesh":
		return 2*a + 2/fp*n*b + (fp-1)/fp*n*g
	case "all_reduce/ring":
		return 2*(fp-1)*a + 2*(fp-1)/fp*n*b + (fp-1)/fp*n*g
	case "all_reduce/hd":
		if p&(p-1) != 0 {
			k := math.Floor(lg)
			q := math.Pow(2, k)
			// The fold in (a + nb + ng) and out (a + nb: it moves the result back and
			// reduces nothing), around halving-doubling on 2^k ranks.
			return (a + n*b + n*g) + (2*k*a + 2*(q-1)/q*n*b + (q-1)/q*n*g) + (a + n*b)
		}
		return 2*lg*a + 2*(fp-1)/fp*n*b + (fp-1)/fp*n*g
	case "broadcast/mesh":
		return 2*a + 2/fp*n*b
	case "broadcast/ring":
		return (fp - 1) * (a + n*b)
	case "broadcast/hd":
		return math.Ceil(lg) * (a + n*b)
	case "all_to_all/mesh":
		return a + n/fp*b
	case "all_to_all/ring": // pairwise: one peer a step
		return (fp - 1) * (a + n/fp*b)
	}
	panic(kind + "/" + algo)
}

func seq(n int) []int {
	r := make([]int, n)
	for i := range r {
		r[i] = i
	}
	return r
}

func TestCollectiveTimesFollowTheFormulas(t *testing.T) {
	m, err := MeshPreset("a2-node")
	require.NoError(t, err)
	chip, _ := Preset("a2")
	l := m.Tiers[0].Link
	a, b, g := l.LatencySeconds, l.Beta(), reduceGamma(chip)
	for _, p := range []int{2, 3, 4, 5, 8} {
		for _, kind := range []string{"all_reduce", "reduce_scatter", "all_gather", "broadcast", "all_to_all"} {
			for _, algo := range []string{"mesh", "ring", "hd"} {
				if algo == "hd" && (kind == "all_to_all" || !isPow2(p) && kind != "all_reduce" && kind != "broadcast") {
					continue
				}
				for n := 1 << 10; n <= 1<<30; n <<= 2 {
					// n is the message: all_gather's Count is one rank's share.
					elems := n / 4 / (8 * p) * (8 * p) // even chunks at every level
					count := elems
					if kind == "all_gather" {
						count = elems / p
					}
					_, tm, err := m.RunCollective(Collective{Kind: kind, Op: "sum", Algorithm: algo, DType: dtype.Float32, Count: count, Ranks: seq(p)}, nil)
					require.NoError(t, err, "%s/%s p=%d n=%d", kind, algo, p, n)
					want := formula(kind, algo, p, float64(elems*4), a, b, g)
					require.InDelta(t, 1, tm.AlgorithmSeconds/want, 1e-12, "%s/%s p=%d n=%d: %g s, formula %g s", kind, algo, p, n, tm.AlgorithmSeconds, want)
					require.Equal(t, m.LaunchSeconds+tm.AlgorithmSeconds, tm.Seconds)
				}
			}
		}
	}
}

func TestAutoPicksMeshInsideAServerAndTheFasterAcross(t *testing.T) {
	m, _ := MeshPreset("a2-nodes:4")
	_, tm, err := m.RunCollective(Collective{Kind: "all_reduce", Op: "sum", DType: dtype.Float32, Count: 1 << 20, Ranks: seq(32)}, nil)
	require.NoError(t, err)
	require.Len(t, tm.Phases, 3)
	require.Equal(t, []string{"reduce_scatter", "all_reduce", "all_gather"}, []string{tm.Phases[0].Kind, tm.Phases[1].Kind, tm.Phases[2].Kind})
	require.Equal(t, "mesh", tm.Phases[0].Algorithm)
	require.Equal(t, "roce", tm.Phases[1].Tier)
	// Across: each rank's eighth of the message, over 4 servers.
	require.Equal(t, int64(1<<20*4/8), tm.Phases[1].Bytes)
	chip, _ := Preset("a2")
	rl := m.Tiers[1].Link
	ring := formula("all_reduce", "ring", 4, float64(1<<19), rl.LatencySeconds, rl.Beta(), reduceGamma(chip))
	hd := formula("all_reduce", "hd", 4, float64(1<<19), rl.LatencySeconds, rl.Beta(), reduceGamma(chip))
	require.InDelta(t, min(ring, hd), tm.Phases[1].Seconds, 1e-15)
}

func int32Bufs(p, n int, rng *rand.Rand) ([][]byte, [][]int32) {
	bufs, vals := make([][]byte, p), make([][]int32, p)
	for r := range p {
		bufs[r], vals[r] = make([]byte, 4*n), make([]int32, n)
		for i := range n {
			vals[r][i] = int32(rng.IntN(2001) - 1000)
			binary.LittleEndian.PutUint32(bufs[r][4*i:], uint32(vals[r][i]))
		}
	}
	return bufs, vals
}

// groupIndex is rank r's place in the group's order (ascending rank).
func groupIndex(ranks []int, r int) int {
	gi := 0
	for _, o := range ranks {
		if o < r {
			gi++
		}
	}
	return gi
}

func decodeInt32(b []byte) []int32 {
	out := make([]int32, len(b)/4)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// Integer sums are exact whatever the order, so every algorithm on every mesh shape must
// give the plain sums (the float orders are checked against numpy in the Python tests).
func TestCollectiveValuesOnEveryShape(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cases := []struct {
		mesh  string
		ranks []int
		algos []string
	}{
		{"a2-node", seq(8), []string{"auto", "mesh", "ring", "hd"}},
		{"a2-node", []int{1, 6, 3}, []string{"auto", "mesh", "ring"}},
		{"a2-nodes:2", seq(16), []string{"auto", "ring"}},
		{"a2-nodes:3", []int{0, 2, 8, 10, 16, 18}, []string{"auto", "ring"}},
		{"a3-pod:2", seq(32), []string{"auto", "ring"}},
	}
	for _, tc := range cases {
		m, err := MeshPreset(tc.mesh)
		require.NoError(t, err)
		p := len(tc.ranks)
		n := p * 6
		for _, algo := range tc.algos {
			bufs, vals := int32Bufs(p, n, rng)
			sum := make([]int32, n)
			for r := range p {
				for i := range n {
					sum[i] += vals[r][i]
				}
			}
			run := func(kind string, count int, in [][]byte) [][]byte {
				out, _, err := m.RunCollective(Collective{Kind: kind, Op: "sum", Algorithm: algo, DType: dtype.Int32, Count: count, Ranks: tc.ranks}, in)
				require.NoError(t, err, "%s %s %s", tc.mesh, kind, algo)
				return out
			}
			out := run("all_reduce", n, bufs)
			for r := range p {
				require.Equal(t, sum, decodeInt32(out[r]), "%s all_reduce %s rank %d", tc.mesh, algo, r)
			}
			// Ranks listed in any order: results come back in that order, and the
			// group's order (ascending rank) decides who holds which chunk.
			out = run("reduce_scatter", n, bufs)
			for i, r := range tc.ranks {
				gi := groupIndex(tc.ranks, r)
				require.Equal(t, sum[gi*6:gi*6+6], decodeInt32(out[i]), "%s reduce_scatter %s", tc.mesh, algo)
			}
			shares := make([][]byte, p)
			for i := range shares {
				shares[i] = bufs[i][:4*6]
			}
			out = run("all_gather", 6, shares)
			for r := range p {
				got := decodeInt32(out[r])
				for i, o := range tc.ranks {
					gi := groupIndex(tc.ranks, o)
					require.Equal(t, vals[i][:6], got[gi*6:gi*6+6])
				}
			}
			if algo == "hd" { // no halving-doubling all-to-all: it says so, and runs pairwise under ring
				_, _, err := m.RunCollective(Collective{Kind: "all_to_all", Algorithm: algo, DType: dtype.Int32, Count: n, Ranks: tc.ranks}, bufs)
				require.ErrorContains(t, err, "no halving-doubling")
				out, _, err = m.RunCollective(Collective{Kind: "all_to_all", Algorithm: "ring", DType: dtype.Int32, Count: n, Ranks: tc.ranks}, bufs)
				require.NoError(t, err)
			} else {
				out = run("all_to_all", n, bufs)
			}
			for dst := range p {
				got := decodeInt32(out[dst])
				gd := groupIndex(tc.ranks, tc.ranks[dst])
				for src := range p {
					gs := groupIndex(tc.ranks, tc.ranks[src])
					require.Equal(t, vals[src][gd*6:gd*6+6], got[gs*6:gs*6+6])
				}
			}
			for root := range p {
				o, _, err := m.RunCollective(Collective{Kind: "broadcast", Algorithm: algo, Root: root, DType: dtype.Int32, Count: n, Ranks: tc.ranks}, bufs)
				require.NoError(t, err)
				src := 0 // the caller's index of the rank at group index root
				for i, r := range tc.ranks {
					if groupIndex(tc.ranks, r) == root {
						src = i
					}
				}
				for r := range p {
					require.Equal(t, vals[src], decodeInt32(o[r]), "%s broadcast %s root %d", tc.mesh, algo, root)
				}
			}
		}
	}
}

func TestCollectiveErrorsNameTheProblem(t *testing.T) {
	m, _ := MeshPreset("a2-nodes:2")
	_, _, err := m.RunCollective(Collective{Kind: "all_reduce", Op: "sum", Algorithm: "mesh", DType: dtype.Float32, Count: 64, Ranks: seq(16)}, nil)
	require.ErrorContains(t, err, "switched")
	_, _, err = m.RunCollective(Collective{Kind: "reduce_scatter", Op: "sum", DType: dtype.Float32, Count: 10, Ranks: seq(8)}, nil)
	require.ErrorContains(t, err, "do not split evenly")
	_, _, err = m.RunCollective(Collective{Kind: "all_reduce", Op: "sum", DType: dtype.Float32, Count: 8, Ranks: []int{0, 1, 8}}, nil)
	require.ErrorContains(t, err, "irregular")
	_, _, err = m.RunCollective(Collective{Kind: "all_reduce", Op: "mean", DType: dtype.Float32, Count: 8, Ranks: seq(2)}, [][]byte{make([]byte, 32), make([]byte, 32)})
	require.ErrorContains(t, err, "unknown reduction")
	_, _, err = m.RunCollective(Collective{Kind: "all_reduce", Op: "sum", DType: dtype.Float32, Count: 8, Ranks: []int{0, 99}}, nil)
	require.ErrorContains(t, err, "outside mesh")
	_, err = MeshPreset("a2-nodes")
	require.ErrorContains(t, err, "unknown mesh preset")
}

func TestSendCrossesTheSlowestTierBetween(t *testing.T) {
	m, _ := MeshPreset("a2-nodes:2")
	in := [][]byte{{1, 2, 3, 4}, nil}
	out, tm, err := m.RunCollective(Collective{Kind: "send", DType: dtype.Int8, Count: 4, Ranks: []int{3, 12}}, [][]byte{in[0], make([]byte, 4)})
	require.NoError(t, err)
	require.Equal(t, in[0], out[1])
	require.Equal(t, "roce", tm.Phases[0].Tier)
	_, tm, _ = m.RunCollective(Collective{Kind: "send", DType: dtype.Int8, Count: 4, Ranks: []int{3, 5}}, nil)
	require.Equal(t, "hccs", tm.Phases[0].Tier)
}
