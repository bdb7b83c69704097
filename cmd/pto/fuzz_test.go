package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"pypto/internal/checked"
	"pypto/isa"
)

// fuzzMemoryLimit bounds what one fuzz input may allocate, so that sizes a real run
// would accept do not make the fuzzer allocate gigabytes: larger ones take the same
// refusal path as sizes beyond the machine's memory.
const fuzzMemoryLimit = "67108864"

// FuzzDecodeNPY: a .npy file, however malformed (huge or negative shapes, a header
// that announces more bytes than the file has), decodes or is an error; it never
// panics, and what decodes holds the elements its shape says.
func FuzzDecodeNPY(f *testing.F) {
	os.Setenv("PYPTO_HOST_MEMORY_LIMIT", fuzzMemoryLimit)
	files, _ := filepath.Glob("testdata/*.npy")
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := decodeNPY(data)
		if err != nil {
			return
		}
		if n, ok := checked.Product(a.shape); !ok || n != len(a.values) {
			t.Fatalf("shape %v decoded with %d values", a.shape, len(a.values))
		}
	})
}

// extremeProgram is a strided copy whose every size comes from the fuzzer: param
// element counts, the tile shape, the trip count and the view's offset and strides.
func extremeProgram(xElems, yElems int64, rows, cols uint16, trips, step, rowStride int64) string {
	return fmt.Sprintf(`kernel k vector
param %%x: f32[%d]
param %%y: f32[%d]
reg %%i
reg %%off
tile %%t: vec f32[%dx%d]
  loop %%i, %d
    smul %%off, %%i, %d
    tload %%t, %%x[%%off; %dx%d; %d,1]
    tadds %%t, %%t, 1.0
    tstore %%y[%%off; %dx%d; %d,1], %%t
  endloop
end
`, xElems, yElems, rows, cols, trips, step, rows, cols, rowStride, rows, cols, rowStride)
}

// FuzzRunExtremeSizes: programs whose sizes are extreme (element counts whose bytes
// overflow, views past their params, huge trip counts) are errors on the reference
// interpreter and on the simulator, never panics, hangs or huge allocations; when
// both run, they compute the same bytes.
func FuzzRunExtremeSizes(f *testing.F) {
	os.Setenv("PYPTO_HOST_MEMORY_LIMIT", fuzzMemoryLimit)
	f.Add(int64(4096), int64(4096), uint16(8), uint16(64), int64(8), int64(512), int64(64))
	f.Add(int64(4611686018427387904), int64(64), uint16(1), uint16(64), int64(1), int64(0), int64(64)) // bytes wrap to 0
	f.Add(int64(1<<40), int64(1<<40), uint16(8), uint16(64), int64(1), int64(0), int64(64))            // 4 TiB params
	f.Add(int64(4096), int64(4096), uint16(8), uint16(64), int64(1<<40), int64(0), int64(64))          // a loop that never ends
	f.Add(int64(4096), int64(4096), uint16(8), uint16(64), int64(2), int64(1<<50), int64(64))          // offsets past the params
	f.Add(int64(-1), int64(64), uint16(0), uint16(64), int64(-5), int64(-1), int64(-64))
	f.Fuzz(func(t *testing.T, xElems, yElems int64, rows, cols uint16, trips, step, rowStride int64) {
		p, err := isa.Parse(extremeProgram(xElems, yElems, rows, cols, trips, step, rowStride))
		if err != nil {
			return
		}
		var outs [2][][]byte
		var errs [2]error
		for k, target := range []string{"ref", "sim"} {
			params, err := newParams(p)
			if err != nil {
				return
			}
			for i := range params[0] {
				params[0][i] = byte(i * 7)
			}
			errs[k] = execute(p, params, target, "tiny", 1<<12, &bytes.Buffer{}) // small: an input must take well under a second
			outs[k] = params
		}
		if errs[0] == nil && errs[1] == nil && !bytes.Equal(outs[0][1], outs[1][1]) {
			t.Fatalf("the reference and the simulator disagree on %%y")
		}
	})
}

// The seeds of FuzzRunExtremeSizes do what they are meant to: the plain copy runs on
// both targets, each extreme one is the error its size calls for.
func TestExtremeSizesAreErrors(t *testing.T) {
	t.Setenv("PYPTO_HOST_MEMORY_LIMIT", fuzzMemoryLimit)
	for _, c := range []struct {
		name                 string
		xElems, yElems       int64
		trips, step, rowStep int64
		want                 string // "" runs
	}{
		{"plain", 4096, 4096, 8, 512, 64, ""},
		{"bytes wrap to 0", 1 << 62, 64, 1, 0, 64, "param %x (f32[4611686018427387904]) needs more bytes than a 64-bit size can count"},
		{"4 TiB params", 1 << 40, 1 << 40, 1, 0, 64, "param %x (f32[1099511627776]) needs 4 TiB"},
		{"a loop that never ends", 4096, 4096, 1 << 40, 0, 64, "16384"},
		{"offsets past the params", 4096, 4096, 2, 1 << 50, 64, "outside"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := isa.Parse(extremeProgram(c.xElems, c.yElems, 8, 64, c.trips, c.step, c.rowStep))
			if err == nil {
				var params [][]byte
				if params, err = newParams(p); err == nil {
					if err = execute(p, params, "ref", "tiny", 1<<14, &bytes.Buffer{}); err == nil {
						err = execute(p, params, "sim", "tiny", 1<<14, &bytes.Buffer{})
					}
				}
			}
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("failed: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

// The command line reports extreme sizes as errors (exit 1), never a panic: a param
// whose bytes wrap to 0, and .npy inputs whose header shape is huge or negative.
func TestRunReportsExtremeSizes(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "wrap.pto")
	text := "kernel k vector\nparam %x: f32[4611686018427387904]\nparam %y: f32[64]\ntile %t: vec f32[1x64]\n" +
		"  tload %t, %y[0; 1x64; 64,1]\n  tstore %x[0; 1x64; 64,1], %t\nend\n"
	if err := os.WriteFile(prog, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{"ref", "sim"} {
		code, _, stderr := pto("run", "-target", target, prog)
		if code != 1 || !strings.Contains(stderr, "more bytes than a 64-bit size can count") {
			t.Errorf("-target %s: exit %d, %q", target, code, stderr)
		}
	}
	for name, want := range map[string]string{
		"huge_shape":               "16 data bytes for 4611686018427387904 elements",
		"huge_2d_shape_that_wraps": "more elements than a 64-bit count holds",
		"negative_shape":           "has a negative size",
		"v2_header_announces_4GiB": "the .npy header announces 4294967295 bytes",
	} {
		data, err := os.ReadFile(filepath.Join("testdata/fuzz/FuzzDecodeNPY", name))
		if err != nil {
			t.Fatal(err)
		}
		npyBytes := corpusBytes(t, data)
		path := filepath.Join(dir, name+".npy")
		if err := os.WriteFile(path, npyBytes, 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := pto("run", "-i", "x="+path, "testdata/softmax.pto")
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("%s: exit %d, %q; want %q", name, code, stderr, want)
		}
	}
}

// corpusBytes reads the one []byte value of a Go fuzz corpus file.
func corpusBytes(t *testing.T, file []byte) []byte {
	_, lit, ok := strings.Cut(string(file), "\n")
	lit = strings.TrimSpace(lit)
	if !ok || !strings.HasPrefix(lit, "[]byte(") {
		t.Fatalf("not a []byte corpus entry: %q", file)
	}
	s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lit, "[]byte("), ")"))
	if err != nil {
		t.Fatal(err)
	}
	return []byte(s)
}
