package device

import "pypto/isa"

// Supports reports whether the simulator implements op (the compiler refuses, with a
// clear error, graphs whose lowering would need an instruction it does not).
func Supports(op isa.Opcode) bool { return lookupOp(op) != nil }
