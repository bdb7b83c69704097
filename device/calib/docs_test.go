package calib

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/device"
)

const staleAdvice = "run go run ./cmd/pto-calibrate -update from the repository root"

// The fitted presets are the fit's result and docs/device.md's calibration table is
// what the calibration prints with them; the sensitivity table lists every assumed
// constant (its figures take minutes to recompute: go run ./cmd/pto-calibrate
// -sensitivity -update).
func TestCalibrationDocsAreCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every calibration row (about 30 s)")
	}
	chip := a2(t)
	res, f, err := Calibrate(chip)
	require.NoError(t, err)
	in, err := CalibrateInstr(chip)
	require.NoError(t, err)
	fitted, err := os.ReadFile("../presets_fitted.go")
	require.NoError(t, err)
	assert.Equal(t, FittedSource(f, Cases(chip), in), string(fitted), "device/presets_fitted.go is stale: "+staleAdvice)
	assert.Equal(t, f, FittedOf(chip), "the a2 preset does not hold the fitted constants: "+staleAdvice)
	for k, c := range in.Consts {
		assert.Equal(t, in.Values[k], c.Get(chip), "the a2 preset does not hold the fitted %s: %s", c.Name, staleAdvice)
	}
	data, err := os.ReadFile("../../docs/device.md")
	require.NoError(t, err)
	doc := string(data)
	want, err := ReplaceBetween(doc, CalibrationBegin, CalibrationEnd, Summary(res, f, Cases(chip)))
	require.NoError(t, err)
	want, err = ReplaceBetween(want, InstrBegin, InstrEnd, InstrMarkdown(in))
	require.NoError(t, err)
	assert.Equal(t, want, doc, "docs/device.md's calibration or instruction table is stale: "+staleAdvice)

	i, j := strings.Index(doc, SensitivityBegin), strings.Index(doc, SensitivityEnd)
	require.True(t, i >= 0 && j > i, "docs/device.md must hold the sensitivity table's markers")
	table := doc[i:j]
	for _, k := range device.TimingConstants() {
		if k.Source == device.Assumed && k.Get(chip) != 0 {
			assert.Contains(t, table, "| "+k.Name+" | 0.5 |", "the sensitivity table lacks %s: go run ./cmd/pto-calibrate -sensitivity -update", k.Name)
		}
	}
}
