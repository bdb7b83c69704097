package core

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// goldenCase is one case of a testdata/text file. Expectations are written inside the
// input, go/types style: a "// error: MSG" line says parsing must fail with MSG; otherwise
// the input must parse, verify and print back as want.
type goldenCase struct {
	file, name string
	input      string
	wantErr    string // "" when the case must parse
	want       string // the canonical text Format must print
}

// readGolden splits every testdata/text/*.txt file into its "=== name" cases. Text
// before the first case is the file's description.
func readGolden(t testing.TB) []goldenCase {
	files, err := filepath.Glob("testdata/text/*.txt")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	var cases []goldenCase
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		parts := strings.Split(string(data), "\n=== ")
		for _, part := range parts[1:] {
			name, body, _ := strings.Cut(part, "\n")
			c := goldenCase{file: filepath.Base(f), name: name}
			input, canonical, split := strings.Cut(body, "--- canonical\n")
			c.input = input
			for _, line := range strings.Split(input, "\n") {
				if msg, ok := strings.CutPrefix(strings.TrimSpace(line), "// error: "); ok {
					c.wantErr = msg
				}
			}
			if split {
				c.want = canonical
			} else {
				c.want = stripComments(input)
			}
			c.want = strings.TrimRight(c.want, "\n") + "\n"
			cases = append(cases, c)
		}
	}
	return cases
}

// stripComments drops whole-line comments and blank lines.
func stripComments(s string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "//") {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

func TestParseGolden(t *testing.T) {
	for _, c := range readGolden(t) {
		t.Run(c.file+"/"+c.name, func(t *testing.T) {
			g, err := Parse(c.input)
			if c.wantErr != "" {
				require.Error(t, err)
				var e *Error
				require.ErrorAs(t, err, &e)
				assert.Equal(t, ValueError, e.Kind)
				assert.Equal(t, c.wantErr, e.Message)
				return
			}
			require.NoError(t, err)
			require.NoError(t, Verify(g))
			assert.Equal(t, c.want, Format(g))
			again, err := Parse(c.want)
			require.NoError(t, err)
			assert.Equal(t, c.want, Format(again), "the canonical text must be a fixed point")
		})
	}
}
