package lower

import (
	"errors"
	"testing"

	"pypto/core"
)

// The parsers are fuzzed for the properties the golden tests rely on: they never
// panic, fail only with ValueErrors, and what they accept verifies and prints as text
// that parses back to the same text. Seeds: testdata/fuzz/<Target>/, the golden files
// and the testdata/text cases.

func requireValueError(t *testing.T, err error) {
	t.Helper()
	var e *core.Error
	if !errors.As(err, &e) || e.Kind != core.ValueError {
		t.Fatalf("parse error is not a ValueError: %#v", err)
	}
}

func FuzzParseTileGraph(f *testing.F) {
	for _, base := range goldenInputs(f) {
		f.Add(readFile(f, goldenPath(base, LevelTile)))
	}
	for _, c := range readTextCases(f, "tile") {
		f.Add(c.input)
	}
	f.Fuzz(func(t *testing.T, src string) {
		g, err := ParseTileGraph(src)
		if err != nil {
			requireValueError(t, err)
			return
		}
		if err := g.Verify(); err != nil {
			t.Fatalf("parsed tile graph does not verify: %v\n%s", err, src)
		}
		text := g.Format()
		again, err := ParseTileGraph(text)
		if err != nil {
			t.Fatalf("Format output does not parse: %v\n%s", err, text)
		}
		if got := again.Format(); got != text {
			t.Fatalf("round trip changed the text:\n%s\n---\n%s", text, got)
		}
	})
}

// FuzzParseExecGraph covers the block graph parser too, which the exec text nests.
func FuzzParseExecGraph(f *testing.F) {
	for _, base := range goldenInputs(f) {
		f.Add(readFile(f, goldenPath(base, LevelExec)))
	}
	for _, c := range readTextCases(f, "exec") {
		f.Add(c.input)
	}
	chip := tinyChip(f)
	f.Fuzz(func(t *testing.T, src string) {
		g, err := ParseExecGraph(src)
		if err != nil {
			requireValueError(t, err)
			return
		}
		if err := g.Blocks.Verify(unlimitedCores); err != nil {
			t.Fatalf("parsed block graph does not verify: %v\n%s", err, src)
		}
		_ = g.Verify(chip) // may fail for this chip, must not panic
		text := g.Format(true)
		again, err := ParseExecGraph(text)
		if err != nil {
			t.Fatalf("Format output does not parse: %v\n%s", err, text)
		}
		if got := again.Format(true); got != text {
			t.Fatalf("round trip changed the text:\n%s\n---\n%s", text, got)
		}
	})
}
