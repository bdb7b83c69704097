package lower

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/core"
)

// textCase is one case of a testdata/text file. Expectations are written inside the
// input, go/types style: a "// error: MSG" line says parsing must fail with MSG;
// otherwise the input must parse and print back as want.
type textCase struct {
	file, name string
	input      string
	wantErr    string // "" when the case must parse
	want       string // the canonical text Format must print
}

// readTextCases splits testdata/text/LEVEL.txt into its "=== name" cases. Text before
// the first case describes the file.
func readTextCases(t testing.TB, level string) []textCase {
	path := filepath.Join("testdata", "text", level+".txt")
	parts := strings.Split(readFile(t, path), "\n=== ")
	require.Greater(t, len(parts), 1, "%s has no cases", path)
	var cases []textCase
	for _, part := range parts[1:] {
		name, body, _ := strings.Cut(part, "\n")
		c := textCase{file: filepath.Base(path), name: name}
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
			c.want = dropCommentLines(input)
		}
		c.want = strings.TrimRight(c.want, "\n") + "\n"
		cases = append(cases, c)
	}
	return cases
}

// dropCommentLines drops whole-line comments and blank lines.
func dropCommentLines(s string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "//") && !strings.HasPrefix(t, "#") {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// runTextCases checks every case of one level with parse, which returns the parsed
// graph's Format text.
func runTextCases(t *testing.T, level string, parse func(src string) (string, error)) {
	for _, c := range readTextCases(t, level) {
		t.Run(c.name, func(t *testing.T) {
			text, err := parse(c.input)
			if c.wantErr != "" {
				require.Error(t, err, "want error %q", c.wantErr)
				var e *core.Error
				require.ErrorAs(t, err, &e)
				assert.Equal(t, core.ValueError, e.Kind)
				assert.Equal(t, c.wantErr, e.Message)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, text)
			again, err := parse(c.want)
			require.NoError(t, err)
			assert.Equal(t, c.want, again, "the canonical text must be a fixed point")
		})
	}
}

func TestParseTileGraphCases(t *testing.T) {
	runTextCases(t, "tile", func(src string) (string, error) {
		g, err := ParseTileGraph(src)
		if err != nil {
			return "", err
		}
		require.NoError(t, g.Verify())
		return g.Format(), nil
	})
}

// The block cases are read against the tile graph of one golden file, named in
// testdata/text/block.txt.
func TestParseBlockGraphCases(t *testing.T) {
	tg, err := ParseTileGraph(readFile(t, "testdata/golden/matmul_multicore.tile.golden"))
	require.NoError(t, err)
	chip := tinyChip(t)
	runTextCases(t, "block", func(src string) (string, error) {
		g, err := ParseBlockGraph(src, tg)
		if err != nil {
			return "", err
		}
		require.NoError(t, g.Verify(chip.Cores))
		return g.Format(), nil
	})
}

func TestParseExecGraphCases(t *testing.T) {
	chip := tinyChip(t)
	runTextCases(t, "exec", func(src string) (string, error) {
		g, err := ParseExecGraph(src)
		if err != nil {
			return "", err
		}
		require.NoError(t, g.Verify(chip))
		return g.Format(true), nil
	})
}
