package lower

import (
	"pypto/device"
	"pypto/isa"
)

// Loop choice. Codegen writes a block's repeated work (a matmul's K stages) as a
// loop when the straight-line code would not fit the core's instruction cache:
// beyond it, every instruction of straight-line code is fetched once more from the
// L2 (device/sim_icache.go), while a loop body that fits is fetched once. Within it,
// straight-line code costs the same fetch for its lines and saves the loop's scalar
// instructions (LOOP, ENDLOOP, the register updates of moving GM windows). The
// backend synchronises loops with flags, at the cost of the same instructions
// unrolled (device's TestLoopedGEMMCostsWhatItsUnrolledFormCosts). On a chip without
// an instruction cache model code size is free to run but not to compile and
// simulate, so codegen loops there too.

// codeBudget is how many machine instructions a core's instruction cache holds; 0
// when the chip models none.
func codeBudget(chip *device.Chip) int {
	if chip.ICacheBytes <= 0 || chip.InstrBytes <= 0 {
		return 0
	}
	return chip.ICacheBytes / chip.InstrBytes
}

// codeLimits are the core's limits codegen writes a block's programs for: the
// instruction cache's budget (codeBudget) and the cube core's L1 bytes.
type codeLimits struct{ instrs, l1Bytes, l0cBytes, flagIDs int }

func limitsOf(chip *device.Chip) codeLimits {
	return codeLimits{instrs: codeBudget(chip), l1Bytes: chip.Capacity(isa.Mat), l0cBytes: chip.Capacity(isa.Acc), flagIDs: chip.FlagEventIDs}
}

// loopsPay reports whether code of about n machine instructions should be written
// with loops, given the instruction cache's budget.
func loopsPay(budget, n int) bool { return budget == 0 || n > budget }
