package device

import (
	"fmt"
	"math"

	"pypto/isa"
)

// Synchronisation: SET_FLAG / WAIT_FLAG between two pipes and TSYNC barriers. They
// touch no memory and compute nothing; the simulator's scheduler gives them their
// meaning (sim_core.go).

func init() {
	defineOps(map[isa.Opcode]*opImpl{
		isa.SET_FLAG:  {route: routeFlag, access: noAccess},
		isa.WAIT_FLAG: {route: routeFlag, access: noAccess},
		isa.TSYNC:     {route: routeBarrier, access: noAccess},
	})
}

func noAccess(*Instr, *accessSet) {}

func routeFlag(ck *checkCtx, in isa.Instr) (isa.Pipe, string) {
	src, dst, id := in.Args[0].Pipe, in.Args[1].Pipe, in.Args[2].Imm
	for _, q := range [2]isa.Pipe{src, dst} {
		if q != isa.PipeS && !HasPipe(ck.p.Core, q) {
			return 0, fmt.Sprintf("%s between %s and %s: a %s core has no pipe %s", in.Op, src, dst, ck.p.Core, q)
		}
	}
	if src == dst {
		return 0, fmt.Sprintf("%s from pipe %s to itself; a pipe is in order (use tsync)", in.Op, src)
	}
	if id != math.Trunc(id) || id < 0 || int(id) >= ck.chip.FlagEventIDs {
		return 0, fmt.Sprintf("event id %g is not one of the chip's %d ids", id, ck.chip.FlagEventIDs)
	}
	if in.Op == isa.SET_FLAG {
		return src, ""
	}
	return dst, ""
}

func routeBarrier(ck *checkCtx, in isa.Instr) (isa.Pipe, string) {
	q := in.Args[0].Pipe
	if q == isa.PipeAll {
		return isa.PipeS, "" // a full barrier stops issue on the scalar pipe
	}
	if q == isa.PipeS || !HasPipe(ck.p.Core, q) {
		return 0, fmt.Sprintf("tsync on pipe %s, which a %s core does not have", q, ck.p.Core)
	}
	return q, ""
}
