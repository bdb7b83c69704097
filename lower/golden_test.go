package lower

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/core"
	"pypto/device"
)

// Golden tests: every testdata/golden/NAME.graph is a Tensor Graph in core's text form.
// Compiled for the tiny preset, the text of each level must equal NAME.tile.golden,
// NAME.block.golden and NAME.exec.golden exactly. After an intended change to the
// compiler, regenerate them with
//
//	go test ./lower -run TestGolden -update
//
// and review the diff: it is the change in what the compiler does. A graph whose
// first line is "// disable: PASS ..." is compiled with those passes switched off.

var update = flag.Bool("update", false, "rewrite testdata/golden/*.golden from the compiler's output")

// goldenLevels are the levels that have golden files, in order; each file is
// NAME.LEVEL.golden.
var goldenLevels = []Level{LevelTile, LevelBlock, LevelExec}

func tinyChip(t testing.TB) *device.Chip {
	chip, err := device.Preset("tiny")
	require.NoError(t, err)
	return chip
}

// goldenInputs lists the NAME of every testdata/golden/NAME.graph.
func goldenInputs(t testing.TB) []string {
	files, err := filepath.Glob("testdata/golden/*.graph")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for i, f := range files {
		files[i] = strings.TrimSuffix(f, ".graph")
	}
	return files
}

func goldenPath(base string, l Level) string { return base + "." + string(l) + ".golden" }

func readFile(t testing.TB, path string) string {
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(data)
}

// levelTexts compiles base.graph and returns the text of each golden level and the
// execution graph it comes from.
func levelTexts(t *testing.T, base string) (map[Level]string, *ExecGraph) {
	src := readFile(t, base+".graph")
	g, err := core.Parse(src)
	require.NoError(t, err)
	disabled := map[string]bool{}
	if first, _, _ := strings.Cut(src, "\n"); strings.HasPrefix(first, "// disable:") {
		for _, p := range strings.Fields(strings.TrimPrefix(first, "// disable:")) {
			disabled[p] = true
		}
	}
	exe, err := Compile(g, Options{Chip: tinyChip(t), Verify: true, Dump: true, Disabled: disabled})
	require.NoError(t, err)
	eg := exe.Exec()
	texts := map[Level]string{
		LevelTile:  eg.Blocks.Tiles.Format(),
		LevelBlock: eg.Blocks.Format(),
		LevelExec:  eg.Format(true),
	}
	// The pass dumps print the same texts: what a user sees with Dump is what is tested.
	dumps := strings.Join(exe.PassDumps(), "\n")
	for _, l := range goldenLevels {
		require.Contains(t, dumps, texts[l], "the %s dump differs from the final %s graph", l, l)
	}
	return texts, eg
}

func TestGolden(t *testing.T) {
	for _, base := range goldenInputs(t) {
		t.Run(filepath.Base(base), func(t *testing.T) {
			texts, eg := levelTexts(t, base)
			for _, l := range goldenLevels {
				path := goldenPath(base, l)
				if *update {
					require.NoError(t, os.WriteFile(path, []byte(texts[l]), 0o644))
					continue
				}
				assert.Equal(t, readFile(t, path), texts[l], "%s is out of date (go test ./lower -run TestGolden -update)", path)
			}
			// The parsed texts rebuild the compiled structures, all but what the text
			// form leaves out (see normalize).
			parsed, err := ParseExecGraph(texts[LevelExec])
			require.NoError(t, err)
			assert.Equal(t, normalize(eg), normalize(parsed))
		})
	}
}

// TestGoldenFilesParseBack reads every golden file on its own: it parses, verifies for
// the chip it was compiled for, and prints back byte for byte.
func TestGoldenFilesParseBack(t *testing.T) {
	chip := tinyChip(t)
	for _, base := range goldenInputs(t) {
		t.Run(filepath.Base(base), func(t *testing.T) {
			tileText := readFile(t, goldenPath(base, LevelTile))
			tg, err := ParseTileGraph(tileText)
			require.NoError(t, err)
			require.NoError(t, tg.Verify())
			assert.Equal(t, tileText, tg.Format())

			blockText := readFile(t, goldenPath(base, LevelBlock))
			bg, err := ParseBlockGraph(blockText, tg)
			require.NoError(t, err)
			require.NoError(t, bg.Verify(chip.Cores))
			assert.Equal(t, blockText, bg.Format())

			execText := readFile(t, goldenPath(base, LevelExec))
			eg, err := ParseExecGraph(execText)
			require.NoError(t, err)
			require.NoError(t, eg.Verify(chip))
			assert.Equal(t, execText, eg.Format(true))
			assert.Equal(t, normalize(&ExecGraph{Blocks: bg}).Blocks, normalize(eg).Blocks,
				"the graphs nested in the exec text are the tile and block graphs")
		})
	}
}

// normalize clears what the text form does not carry (source locations, machine
// programs) and makes empty attribute maps and block lists nil, so that compiled and
// parsed graphs compare deep-equal. It changes eg in place and returns it.
func normalize(eg *ExecGraph) *ExecGraph {
	for _, op := range eg.Blocks.Tiles.Ops {
		op.Loc = core.Location{}
		if len(op.Attrs) == 0 {
			op.Attrs = nil
		}
	}
	for _, k := range eg.Blocks.Kernels {
		if len(k.Blocks) == 0 {
			k.Blocks = nil
		}
	}
	for _, task := range eg.Tasks {
		task.Machine = nil
	}
	return eg
}
