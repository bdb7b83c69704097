// Command pto assembles, disassembles, verifies, exports and runs PTO virtual ISA
// programs, and runs PTO-AS kernels.
//
//	pto asm [-o out.ptob] prog.pto          text -> binary
//	pto disasm [-o out.pto] prog.ptob       binary -> text
//	pto verify [-chip NAME] prog            check the ISA's rules (with a chip: buffer capacities too)
//	pto export [-chip NAME] [-d DIR] prog   PTO-AS: <kernel>.pto (auto form) and <kernel>.manual.pto
//	pto run [-target ref|sim] [-chip NAME] [-i param=in.npy]... [-o param=out.npy[:d0,d1,...]]... prog
//	pto run [-chip NAME] [-blocks N] [--input in.npy]... [-o param=out.npy]... kernel.pto   (PTO-AS)
//
// A program file may be text or binary; pto tells them apart by the binary magic.
// `run` executes the program on the reference interpreter (isa.Interpret, the
// default) or on the simulated NPU (device.Compile + device.RunTask, printing the
// cycles). Params are laid out in GM one after another; each -i fills one from a .npy
// file (any numeric dtype, converted to the param's), the others start zeroed, and
// each -o writes one after the run as a .npy of the param's dtype (bf16 as f32, which
// numpy can read), 1-D unless a shape is given.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

const usage = `usage:
  pto asm [-o out.ptob] prog.pto
  pto disasm [-o out.pto] prog.ptob
  pto verify [-chip NAME] prog
  pto export [-chip NAME] [-d DIR] prog
  pto run [-target ref|sim] [-chip NAME] [-i param=in.npy]... [-o param=out.npy[:d0,d1,...]]... prog
  pto run [-target sim|ref] [-chip NAME] [-blocks N] [--input in.npy]... [-o param=out.npy]... kernel.pto   (PTO-AS)
`

// errUsage marks a command-line mistake: the usage text follows the message.
var errUsage = errors.New("usage")

// run is the whole command, separated from main for tests; it returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	commands := map[string]func([]string, io.Writer) error{
		"asm": cmdAsm, "disasm": cmdDisasm, "verify": cmdVerify, "run": cmdRun, "export": cmdExport,
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "pto: unknown command %q\n%s", args[0], usage)
		return 2
	}
	if err := cmd(args[1:], stdout); err != nil {
		fmt.Fprintf(stderr, "pto %s: %v\n", args[0], err)
		if errors.Is(err, errUsage) {
			fmt.Fprint(stderr, usage)
			return 2
		}
		return 1
	}
	return 0
}

// newFlags makes a flag set that reports errors to the caller instead of exiting.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// oneFile parses flags and returns the single program path they leave.
func oneFile(fs *flag.FlagSet, args []string) (string, error) {
	if err := fs.Parse(args); err != nil {
		return "", fmt.Errorf("%v: %w", err, errUsage)
	}
	if fs.NArg() != 1 {
		return "", fmt.Errorf("want one program file, got %d (%s): %w", fs.NArg(), strings.Join(fs.Args(), " "), errUsage)
	}
	return fs.Arg(0), nil
}
