package lower

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"pypto/device"
)

// A failed task is explained by the reference only where the reference can fail the
// same way: a value error (an index out of range) is; a race or deadlock (pipes and
// flags, which program order has not) and an exhausted budget are not, and
// evaluating the reference for them would only add its run time to the report.
func TestOnlyValueFailuresAreExplainedByTheReference(t *testing.T) {
	value := &device.SimError{Core: 0, Block: 0, PC: 3, Msg: "gm window outside param"}
	race := &device.SimError{Core: 0, Block: 1, PC: 20, Msg: "race: ...", Err: device.ErrSync}
	budget := &device.SimError{Core: 0, Block: 0, PC: 9, Msg: "budget", Err: device.ErrBudget}
	assert.True(t, referenceExplains(value))
	assert.True(t, referenceExplains(fmt.Errorf("task 0: %w", value)))
	assert.False(t, referenceExplains(race))
	assert.False(t, referenceExplains(fmt.Errorf("task 0: %w", race)))
	assert.False(t, referenceExplains(budget))
}
