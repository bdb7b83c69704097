package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"codeberg.org/sbinet/npyio"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/device"
	"pypto/dtype"
	"pypto/isa"
)

// pto runs the command in-process and returns its exit code, stdout and stderr.
func pto(args ...string) (int, string, string) {
	var out, errs bytes.Buffer
	code := run(args, &out, &errs)
	return code, out.String(), errs.String()
}

func TestAsmDisasmRoundTrip(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "softmax.ptob")
	code, _, stderr := pto("asm", "-o", bin, "testdata/softmax.pto")
	require.Equal(t, 0, code, stderr)
	data, err := os.ReadFile(bin)
	require.NoError(t, err)
	assert.Equal(t, "PTOB", string(data[:4]))

	code, text, stderr := pto("disasm", bin)
	require.Equal(t, 0, code, stderr)
	p, err := isa.ParseFile("testdata/softmax.pto")
	require.NoError(t, err)
	assert.Equal(t, isa.Format(p), text)

	// disasm of text is the canonical form; asm to stdout is the encoding.
	code, text2, _ := pto("disasm", "testdata/softmax.pto")
	assert.Equal(t, 0, code)
	assert.Equal(t, text, text2)
	code, raw, _ := pto("asm", "testdata/softmax.pto")
	assert.Equal(t, 0, code)
	assert.Equal(t, string(data), raw)
}

func TestVerify(t *testing.T) {
	code, out, stderr := pto("verify", "-chip", "a2", "testdata/softmax.pto")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "testdata/softmax.pto: ok (vector kernel softmax, 10 instructions)\n", out)

	dir := t.TempDir()
	big := filepath.Join(dir, "big.pto")
	require.NoError(t, os.WriteFile(big, []byte("kernel big vector\ntile %t: vec f32[1024x1024]\nend\n"), 0o644))
	code, _, _ = pto("verify", big)
	assert.Equal(t, 0, code, "without a chip, capacity is not checked")
	code, _, stderr = pto("verify", "-chip", "a2", big)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "tile needs 4194304 bytes, the vec buffer holds")

	code, _, stderr = pto("verify", "-chip", "nochip", "testdata/softmax.pto")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, `unknown chip preset "nochip"`)

	bad := filepath.Join(dir, "bad.pto")
	require.NoError(t, os.WriteFile(bad, []byte("kernel k vector\n  tfoo\nend\n"), 0o644))
	code, _, stderr = pto("verify", bad)
	assert.Equal(t, 1, code)
	assert.Equal(t, "pto verify: "+bad+":2:3: expected instruction, 'param', 'tile' or 'end', found 'tfoo'\n", stderr)

	corrupt := filepath.Join(dir, "corrupt.ptob")
	require.NoError(t, os.WriteFile(corrupt, []byte("PTOB\x01\x00\x09\x00\x00\x00abc"), 0o644))
	code, _, stderr = pto("verify", corrupt)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "pto binary: at byte 13: truncated")
}

func TestUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "usage:"},
		{[]string{"frob"}, `pto: unknown command "frob"`},
		{[]string{"asm"}, "want one program file, got 0"},
		{[]string{"run", "-target", "gpu", "testdata/softmax.pto"}, `target "gpu" is neither ref nor sim`},
		{[]string{"run", "-i", "x", "testdata/softmax.pto"}, `"x" is not param=file.npy`},
		{[]string{"run", "-o", "y=o.npy:4,a", "testdata/softmax.pto"}, `shape "4,a" is not a list of sizes`},
		{[]string{"verify", "-nope", "testdata/softmax.pto"}, "flag provided but not defined: -nope"},
	} {
		code, _, stderr := pto(c.args...)
		assert.Equal(t, 2, code, "%v", c.args)
		assert.Contains(t, stderr, c.want, "%v", c.args)
		assert.Contains(t, stderr, "usage:", "%v", c.args)
	}
}

func TestRunErrors(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small.npy")
	require.NoError(t, writeNPY(small, dtype.Float32, []int{3}, []float64{1, 2, 3}))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "-i", "z=" + small, "testdata/softmax.pto"}, `kernel softmax has no param "z"`},
		{[]string{"run", "-o", "z=" + small, "testdata/softmax.pto"}, `kernel softmax has no param "z"`},
		{[]string{"run", "-i", "x=" + small, "testdata/softmax.pto"}, "has 3 elements (shape [3]), param x is f32[8192]"},
		{[]string{"run", "-i", "x=" + filepath.Join(dir, "none.npy"), "testdata/softmax.pto"}, "no such file"},
		{[]string{"run", "-o", "y=" + filepath.Join(dir, "y.npy") + ":3,3", "testdata/softmax.pto"}, "shape [3 3] holds 9 elements, the param has 8192"},
		{[]string{"run", "-target", "sim", "-chip", "nochip", "testdata/softmax.pto"}, `unknown chip preset "nochip"`},
	} {
		code, _, stderr := pto(c.args...)
		assert.Equal(t, 1, code, "%v", c.args)
		assert.Contains(t, stderr, c.want, "%v", c.args)
	}
}

// readF32 reads a float32 .npy with npyio (checking that what pto writes is what
// numpy tools read) and returns its shape and values.
func readF32(t *testing.T, path string) ([]int, []float32) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	r, err := npyio.NewReader(f)
	require.NoError(t, err)
	var v []float32
	require.NoError(t, r.Read(&v))
	return r.Header.Descr.Shape, v
}

// runSoftmax runs the softmax kernel from .npy input and compares its output with
// numpy's softmax (testdata/gen.py); it returns pto's stdout.
func runSoftmax(t *testing.T, extra ...string) string {
	out := filepath.Join(t.TempDir(), "y.npy")
	args := append([]string{"run"}, extra...)
	args = append(args, "-i", "x=testdata/softmax_x.npy", "-o", "y="+out+":64,128", "testdata/softmax.pto")
	code, stdout, stderr := pto(args...)
	require.Equal(t, 0, code, stderr)
	shape, got := readF32(t, out)
	assert.Equal(t, []int{64, 128}, shape)
	_, want := readF32(t, "testdata/softmax_want.npy")
	require.Len(t, got, len(want))
	for i := range want {
		require.InDelta(t, want[i], got[i], 1e-6+1e-5*float64(want[i]), "element %d", i)
	}
	return stdout
}

func TestRunSoftmaxReference(t *testing.T) {
	assert.Empty(t, runSoftmax(t))
	assert.Empty(t, runSoftmax(t, "-target", "ref"))
}

// The same kernel on the simulated NPU, which prints its cycles.
func TestRunSoftmaxSimulator(t *testing.T) {
	p, err := isa.ParseFile("testdata/softmax.pto")
	require.NoError(t, err)
	var missing []string
	seen := map[isa.Opcode]bool{}
	for _, in := range p.Body {
		if !seen[in.Op] && !device.Supports(in.Op) {
			missing = append(missing, in.Op.String())
		}
		seen[in.Op] = true
	}
	if len(missing) > 0 {
		t.Skipf("the device does not implement %s yet", strings.Join(missing, ", "))
	}
	stdout := runSoftmax(t, "-target", "sim", "-chip", "a2")
	assert.Regexp(t, `^softmax on a2: [1-9][0-9]* cycles \([0-9.]+ us at [0-9.]+ GHz\), [0-9]+ instructions, GM read 32768 B, written 32768 B\n$`, stdout)
}

// The dynamic softmax of isa/testdata reads its row count from a .npy.
func TestRunDynamicSoftmaxReference(t *testing.T) {
	dir := t.TempDir()
	const rows, cols = 21, 128
	x := make([]float64, 131072)
	for i := range rows * cols {
		x[i] = math.Cos(float64(i)) * 3
	}
	xp, np, yp := filepath.Join(dir, "x.npy"), filepath.Join(dir, "n.npy"), filepath.Join(dir, "y.npy")
	require.NoError(t, writeNPY(xp, dtype.Float32, []int{1024, 128}, x))
	require.NoError(t, writeNPY(np, dtype.Int32, []int{1}, []float64{rows}))
	code, _, stderr := pto("run", "-i", "x="+xp, "-i", "n="+np, "-o", "y="+yp+":1024,128", "../../isa/testdata/softmax_dyn.pto")
	require.Equal(t, 0, code, stderr)
	_, y := readF32(t, yp)
	for r := range rows {
		sum := 0.0
		for c := range cols {
			sum += float64(y[r*cols+c])
		}
		assert.InDelta(t, 1, sum, 1e-5, "row %d sums to 1", r)
	}
	assert.Zero(t, y[rows*cols], "rows past n are untouched")
}

func TestNPYRoundTrip(t *testing.T) {
	dir := t.TempDir()
	vals := []float64{0, 1, -2, 0.5, 65504, -0.25}
	for _, d := range []dtype.DType{dtype.Float32, dtype.Float16, dtype.BFloat16, dtype.Int32, dtype.Int8, dtype.Bool} {
		path := filepath.Join(dir, d.String()+".npy")
		want := dtype.Decode(d, dtype.Encode(d, vals), len(vals))
		require.NoError(t, writeNPY(path, d, []int{2, 3}, want))
		a, err := readNPY(path)
		require.NoError(t, err, d)
		assert.Equal(t, []int{2, 3}, a.shape, d)
		assert.Equal(t, want, a.values, d)
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Zero(t, (len(data)-len(want)*map[bool]int{true: 4, false: d.Size()}[d == dtype.BFloat16])%64, "the header is padded to 64 bytes")
	}
	// A complex64 file: the f32 writer's output with another descr of the same length.
	f32, err := os.ReadFile(filepath.Join(dir, "f32.npy"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "c.npy"), bytes.Replace(f32, []byte("<f4"), []byte("<c8"), 1), 0o644))
	_, err = readNPY(filepath.Join(dir, "c.npy"))
	assert.ErrorContains(t, err, "unsupported .npy dtype <c8")

	// A header whose length field lies is an error, not a panic inside npyio.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad.npy"), []byte("\x93NUMPY\x01\x00\x05\x00{'de"), 0o644))
	_, err = readNPY(filepath.Join(dir, "bad.npy"))
	assert.Error(t, err)
}
