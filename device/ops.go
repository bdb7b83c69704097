package device

import "pypto/isa"

// opImpl is everything the device knows about one opcode, so that supporting a new
// instruction is one entry in opTable: how the backend checks and routes it, which
// bytes it touches (flag insertion and the race checks depend on this), what it
// computes on a core and how long it occupies its pipe.
type opImpl struct {
	// route returns the pipe that runs a verified instruction, or a message saying
	// why the chip cannot run it. nil means the pipe of the ISA table's row (which
	// must then be fixed, not chosen by the operands).
	route func(ck *checkCtx, in isa.Instr) (isa.Pipe, string)
	// access adds the bytes it reads and writes to s. nil means the table's
	// convention: operand 0 is written, every other tile or GM operand is read.
	access func(in *Instr, s *accessSet)
	// exec computes its values on a core. nil means it has none (flags, barriers).
	exec func(c *coreSim, x *execCtx, in *Instr) error
	// work is its data-proportional pipe time in cycles; the pipe's startup latency is
	// added by the caller. nil means it takes no pipe time (flags, barriers, and the
	// scalar-pipe instructions, which cost their issue slot).
	work func(chip *Chip, in *Instr) int64
}

// opTable holds the device's implementation of every opcode it supports, indexed by
// opcode (the simulator looks an entry up per executed instruction). A test checks
// that every opcode of isa.Opcodes has an entry.
var opTable []*opImpl

// lookupOp returns the device's implementation of op, or nil if it has none.
func lookupOp(op isa.Opcode) *opImpl {
	if int(op) < 0 || int(op) >= len(opTable) {
		return nil
	}
	return opTable[op]
}

// defineOps adds entries to opTable; each file of instructions calls it from init so
// the table is assembled from one place per instruction class.
func defineOps(entries map[isa.Opcode]*opImpl) {
	for op, e := range entries {
		if lookupOp(op) != nil {
			panic("device: opcode " + op.String() + " defined twice")
		}
		if int(op) >= len(opTable) {
			opTable = append(opTable, make([]*opImpl, int(op)+1-len(opTable))...)
		}
		opTable[op] = e
	}
}

// conventionalAccess is the default access set: operand 0 is the destination and is
// written, every other tile or GM operand is read.
func conventionalAccess(in *Instr, s *accessSet) {
	for i := range in.Args {
		s.add(in.Args[i], i == 0)
	}
}

// add records the bytes of a tile or GM operand as read or written; other operand
// kinds touch no memory.
func (s *accessSet) add(o Operand, write bool) {
	var sp span
	switch o.Kind {
	case isa.KindTile:
		sp = tileSpan(o)
	case isa.KindGM:
		var ok bool
		if sp, ok = gmViewSpan(o); !ok {
			return
		}
	default:
		return
	}
	if write {
		s.writes = append(s.writes, sp)
	} else {
		s.reads = append(s.reads, sp)
	}
}
