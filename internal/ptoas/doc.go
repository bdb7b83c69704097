// Package ptoas writes PTO programs as PTO-AS, the textual MLIR of the PTO
// toolchain's `pto` dialect that the assembler `ptoas` turns into C++ for the tile
// library, and reads PTO-AS back into PTO programs.
//
// A kernel is one `func.func` in a `module`. Two forms are written (docs/pto-as.md has
// the mapping construct by construct):
//
//   - auto (Auto): the PTO program as the compiler wrote it: tiles declared with
//     pto.alloc_tile and not placed, no flags; `ptoas --enable-insert-sync` places the
//     tiles and inserts the synchronisation;
//   - manual (Manual): the device backend's machine program: every set_flag, wait_flag
//     and barrier it scheduled, and each tile's buffer address.
//
// The dialect of ptoas 0.1.1 is the target: what it lacks is written with what it has
// (scalar registers as emitc variables, since its arith lowering knows only addi and
// muli; instructions the dialect has no op for as short sequences of ops it has), and
// what cannot be written fails with an *Error naming the kernel and the construct.
// Ops that stand for one of our instructions together carry the attribute
// `pypto.op`, and values the dialect cannot spell exactly carry theirs in `pypto.*`
// attributes, so that reading the text back (Read) gives the program that was
// written: the round trip is exact.
package ptoas
