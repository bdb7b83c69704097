package device

import (
	"testing"

	"github.com/stretchr/testify/require"

	"pypto/isa"
)

// Every opcode of the ISA has a device implementation, and every instruction that
// touches memory computes something.
func TestOpTableCoversTheISA(t *testing.T) {
	for op := isa.Opcode(1); int(op) < isa.NumOpcodes(); op++ {
		impl := lookupOp(op)
		require.NotNil(t, impl, "device has no implementation of %s", op)
		if impl.access == nil {
			require.NotNil(t, impl.exec, "%s touches memory but computes nothing", op)
		}
		if op.Info().PipeClass != isa.PipeClassFixed {
			require.NotNil(t, impl.route, "%s is routed by its operands but has no route", op)
		}
	}
}
