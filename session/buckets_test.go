package session

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/core"
)

// A padded box comes back whole when cut, and the padding is zeros.
func TestPadAndCutAreInverse(t *testing.T) {
	from := symType(t, "f32[2,3]")
	to := symType(t, "f32[4,5]")
	data := make([]byte, from.Bytes())
	for i := range data {
		data[i] = byte(i + 1)
	}
	padded := padInput(data, from, to)
	require.Len(t, padded, to.Bytes())
	assert.Equal(t, data[:12], padded[:12], "row 0")
	assert.Equal(t, make([]byte, 8), padded[12:20], "the padded columns of row 0")
	assert.Equal(t, data[12:24], padded[20:32], "row 1")
	assert.Equal(t, make([]byte, 3*5*4-12), padded[32:], "the padded rows")
	assert.Equal(t, data, cutOutput(padded, to, from))
}

func TestBucketCandidates(t *testing.T) {
	var got []int
	for c := 1; c <= 256; c = nextCandidate(c) {
		got = append(got, c)
	}
	assert.Equal(t, []int{1, 2, 4, 8, 16, 32, 64, 128, 192, 256}, got)
}

// Buckets grow while the estimate stays within the tolerance of the bucket's low end,
// at most to twice it, and do not depend on the order of the sizes asked for.
func TestBucketBoundsFollowTheEstimate(t *testing.T) {
	g := symbolicGraph(t, "f32[n,4]")
	cost := func(b core.Binding) (float64, error) { // flat to 64, then linear
		return float64(max(64, b["n"])), nil
	}
	k := newBucketing(g, nil, padded(cost))
	for _, n := range []int{300, 1, 65, 129, 64} {
		u, err := k.bucket(core.Binding{"n": n})
		require.NoError(t, err)
		assert.GreaterOrEqual(t, u["n"], n)
	}
	assert.Equal(t, []int{64, 128, 192, 256, 320}, k.info().Bounds["n"])
	k2 := newBucketing(g, nil, padded(cost))
	u, err := k2.bucket(core.Binding{"n": 257})
	require.NoError(t, err)
	assert.Equal(t, 320, u["n"])
	assert.Equal(t, []int{64, 128, 192, 256, 320}, k2.info().Bounds["n"])
}

// padded is the estimate of programs that compute their whole bound, whatever the run.
func padded(cost func(core.Binding) (float64, error)) func(bound, run core.Binding) (float64, error) {
	return func(bound, _ core.Binding) (float64, error) { return cost(bound) }
}

// Programs whose kernels follow the run's size cost what the run needs plus a little
// that grows with the bound: buckets grow to twice their low end.
func TestBucketsOfProgramsThatFollowTheRunAreWide(t *testing.T) {
	g := symbolicGraph(t, "f32[n,4]")
	cost := func(bound, run core.Binding) (float64, error) { // the run's rows, and 1% of the bound's
		return float64(max(64, run["n"])) + 0.01*float64(bound["n"]), nil
	}
	k := newBucketing(g, nil, cost)
	u, err := k.bucket(core.Binding{"n": 1000})
	require.NoError(t, err)
	assert.Equal(t, 1024, u["n"])
	assert.Equal(t, []int{128, 256, 512, 1024}, k.info().Bounds["n"])
	padded := newBucketing(g, nil, func(bound, _ core.Binding) (float64, error) { return cost(bound, bound) })
	_, err = padded.bucket(core.Binding{"n": 1000})
	require.NoError(t, err)
	assert.Greater(t, len(padded.info().Bounds["n"]), 10, "padded programs cost their bound: buckets 64 wide")
}

func symbolicGraph(t *testing.T, in string) *core.Graph {
	t.Helper()
	x := tracedInput(t, in)
	y, err := Apply("relu", []*Tensor{x}, nil, core.Location{})
	require.NoError(t, err)
	ex, err := New(Reference()).NewExecutor("f", []*Tensor{x}, []*Tensor{y})
	require.NoError(t, err)
	return ex.graph
}

// Two symbols whose cost is flat until their product is 64: bucketed apart, each would
// pad to where the other's run value keeps the product at 64, and together they would
// pad to sixteen times the rows. Bucketed in turn, every program a run gets costs what
// the run's own size costs, within the tolerance.
func TestBucketsBoundThePaddingOfAllSymbolsTogether(t *testing.T) {
	g := symbolicGraph(t, "f32[a,b]")
	cost := func(b core.Binding) (float64, error) { return float64(max(64, b["a"]*b["b"])), nil }
	k := newBucketing(g, nil, padded(cost))
	require.Equal(t, []string{"a", "b"}, k.symbols)
	for a := 1; a <= 40; a++ {
		for b := 1; b <= 40; b++ {
			run := core.Binding{"a": a, "b": b}
			u, err := k.bucket(run)
			require.NoError(t, err)
			require.GreaterOrEqual(t, u["a"], a)
			require.GreaterOrEqual(t, u["b"], b)
			// Padding to the candidates above the sizes is the least a run can pay.
			least := core.Binding{"a": 1, "b": 1}
			for s, v := range run {
				for least[s] < v {
					least[s] = nextCandidate(least[s])
				}
			}
			got, _ := cost(u)
			want, _ := cost(least)
			assert.LessOrEqual(t, got, want*(1+bucketTolerance), "a=%d b=%d: program %v", a, b, u)
		}
	}
	u, err := k.bucket(core.Binding{"a": 3, "b": 3})
	require.NoError(t, err)
	got, _ := cost(u)
	assert.LessOrEqual(t, got, 64*(1+bucketTolerance), "program %v for a=3, b=3", u)
}
