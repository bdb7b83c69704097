package calib

import (
	"fmt"

	"pypto/device"
	"pypto/isa"
)

// Run simulates g on chip with A and B given as fp16 bytes (nil for zeros) and
// returns the stats and C's fp16 bytes. With opts.NoValues the run is timing-only,
// which is what makes the large sizes affordable; times do not depend on values.
func Run(chip *device.Chip, g GEMM, a, b []byte, opts device.RunOptions) (*device.TaskStats, []byte, error) {
	progs, err := g.Programs()
	if err != nil {
		return nil, nil, err
	}
	aBytes, bBytes, cBytes := g.M*g.K*2, g.K*g.N*2, g.M*g.N*2
	if (a != nil && len(a) != aBytes) || (b != nil && len(b) != bBytes) {
		return nil, nil, fmt.Errorf("calib: A and B must have %d and %d bytes, got %d and %d", aBytes, bBytes, len(a), len(b))
	}
	addrs := []int{0, align(aBytes), align(aBytes) + align(bBytes)}
	gm := make([]byte, addrs[2]+align(cBytes))
	copy(gm[addrs[0]:], a)
	copy(gm[addrs[1]:], b)
	blocks := make([]device.Block, len(progs))
	for i, p := range progs {
		m, err := device.Compile(chip, p)
		if err != nil {
			return nil, nil, fmt.Errorf("calib: core %d: %w", i, err)
		}
		blocks[i] = device.Block{Prog: m, ParamAddrs: addrs}
	}
	st, err := device.RunTask(chip, gm, isa.Cube, blocks, opts)
	if err != nil {
		return nil, nil, err
	}
	return st, gm[addrs[2] : addrs[2]+cBytes], nil
}

func align(n int) int { return (n + 511) / 512 * 512 }
