package calib

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"pypto/isa"
)

// Every measured row is read from the data file, written as a one-instruction
// program that compiles and runs on the a2 (or left out with the reason it cannot
// be run), and its cycles come from the measured instruction's trace record.
func TestInstrRowsRunAsOneInstructionPrograms(t *testing.T) {
	chip := a2(t)
	cases, err := InstrCases()
	require.NoError(t, err)
	require.Len(t, cases, 62)
	ran := 0
	for _, c := range cases {
		if c.Prog == nil {
			assert.NotEmpty(t, c.Left, c.Name())
			continue
		}
		ran++
		body := 0
		for _, in := range c.Prog.Body {
			if in.Op != isa.TASSIGN {
				body++
			}
		}
		assert.Equal(t, 1, body, "%s is one instruction", c.Name())
		cy, err := c.Cycles(chip)
		require.NoError(t, err, c.Name())
		assert.Positive(t, cy, c.Name())
	}
	assert.Equal(t, 55, ran, "rows run: all but the six int16 ones and the f16 sort")
}

// The instruction calibration's goals (docs/device.md, "Instruction costs"): the mean
// precision over the kept rows at least 0.90, the leave-one-op-out mean at least
// 0.85, well above the vendor model's on the same rows; the kept rows below 0.75 are
// the three the docs name (a test of where the model stands, so that a change that
// loses a row shows).
func TestInstrCalibrationGoals(t *testing.T) {
	if testing.Short() {
		t.Skip("refits the instruction costs once per op (a few seconds)")
	}
	f, err := CalibrateInstr(a2(t))
	require.NoError(t, err)
	assert.Equal(t, 46, f.Kept)
	assert.GreaterOrEqual(t, f.Mean, 0.90)
	assert.GreaterOrEqual(t, f.LooMean, 0.85)
	assert.Greater(t, f.Mean, f.VendorMean+0.3)
	var below []string
	for _, r := range f.Rows {
		if r.Left == "" && r.Precision < instrFloor {
			below = append(below, r.Name())
		}
	}
	assert.ElementsMatch(t, []string{"tcolmax/half_16x256", "texp/float_32x16", "tloadconv/c01_nc1hwc0_half_1_2_4_4"}, below)
}
