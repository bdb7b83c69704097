package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pto export writes both forms; pto run takes each with --input and computes the
// bytes the PTO text computes, in the same cycles.
func TestExportThenRunPTOAS(t *testing.T) {
	dir := t.TempDir()
	code, out, stderr := pto("export", "-chip", "a2", "-d", dir, "testdata/softmax.pto")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "softmax.pto (auto form")
	for _, f := range []string{"softmax.pto", "softmax.manual.pto"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err)
		assert.True(t, isPTOAS(data), f)
	}
	cycles := regexp.MustCompile(`(\d+) cycles`)
	want := filepath.Join(dir, "want.npy")
	code, ref, stderr := pto("run", "-target", "sim", "-chip", "a2", "-i", "x=testdata/softmax_x.npy", "-o", "y="+want, "testdata/softmax.pto")
	require.Equal(t, 0, code, stderr)
	wantBytes, err := os.ReadFile(want)
	require.NoError(t, err)
	for _, f := range []string{"softmax.pto", "softmax.manual.pto"} {
		got := filepath.Join(dir, f+".npy")
		code, sim, stderr := pto("run", "-chip", "a2", "--input", "testdata/softmax_x.npy", "-o", "y="+got, filepath.Join(dir, f))
		require.Equal(t, 0, code, stderr)
		assert.Equal(t, cycles.FindStringSubmatch(ref)[1], cycles.FindStringSubmatch(sim)[1], f)
		gotBytes, err := os.ReadFile(got)
		require.NoError(t, err)
		assert.Equal(t, wantBytes, gotBytes, f)
		// The reference interpreter runs the kernel's programs too.
		code, _, stderr = pto("run", "-target", "ref", "--input", "testdata/softmax_x.npy", "-o", "y="+got, filepath.Join(dir, f))
		require.Equal(t, 0, code, stderr)
	}
}

func TestRunPTOASErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.pto")
	require.NoError(t, os.WriteFile(bad, []byte("module {\n  func.func @k() {\n    \"pto.tnothing\"() : () -> ()\n    return\n  }\n}\n"), 0o644))
	code, _, stderr := pto("run", bad)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "bad.pto:3:5: op pto.tnothing has no PyPTO instruction")
	code, _, stderr = pto("run", "--input", "x.npy", "testdata/softmax.pto")
	assert.Equal(t, 2, code)
	assert.True(t, strings.Contains(stderr, "--input and -blocks are for PTO-AS kernels"), stderr)
}
