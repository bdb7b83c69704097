package lower

import (
	"fmt"
	"sort"
	"strings"

	"pypto/core"
)

// OptLevel is an optimisation level, O0 to O3. Which optional passes run at a level is
// data: each row of the pass table names the lowest level it runs at (Pass.MinLevel).
// The zero OptLevel stands for DefaultOptLevel, so Options{} compiles as users get by
// default.
//
//	O0  the required passes only: no graph optimisations, no fusion, fixed matmul tiles
//	O1  + graph clean-ups that never change a value: constant folding, algebraic
//	      simplification, CSE, DCE (cheap, and they make dumps easier to read), and
//	      the matmul tile search
//	O2  + fusion (the default: what makes programs fast)
//	O3  + passes that spend much more compile time (none needs more than O2 today)
type OptLevel int8

const (
	O0 OptLevel = iota + 1
	O1
	O2
	O3
)

// DefaultOptLevel is the level of Options{} and of Python's p.CompileConfig(). O2 runs
// every pass that changes what the program does at run time; O3 is for passes that
// would cost much more compile time for the last few per cent.
const DefaultOptLevel = O2

// OptLevelOf converts a user's level number, 0 to 3.
func OptLevelOf(n int) (OptLevel, error) {
	if n < 0 || n > 3 {
		return 0, core.Errorf(core.ValueError, "optimisation level %d does not exist", n).
			Suggest("use 0 (no optimisation), 1 (graph clean-ups), 2 (the default: + fusion) or 3 (everything)")
	}
	return O0 + OptLevel(n), nil
}

// Number is the level as users write it, 0 to 3 (the default's number for the zero value).
func (l OptLevel) Number() int {
	if l == 0 {
		l = DefaultOptLevel
	}
	return int(l - O0)
}

func (l OptLevel) String() string { return fmt.Sprintf("O%d", l.Number()) }

// runsAt reports whether pass p runs at level l with the passes in disabled switched off.
func (p *Pass) runsAt(l OptLevel, disabled map[string]bool) bool {
	if p.Required {
		return true
	}
	if l == 0 {
		l = DefaultOptLevel
	}
	return l >= p.MinLevel && !disabled[p.Name]
}

// PassNames lists the passes in pipeline order, and the optional ones among them.
func PassNames() (all, optional []string) {
	for _, p := range passTable {
		all = append(all, p.Name)
		if !p.Required {
			optional = append(optional, p.Name)
		}
	}
	return all, optional
}

// CheckOptions rejects options that name no pass, or ask for what cannot be done, with
// the valid choices in the error. Compile checks its options with it; callers that
// compile later (a symbolic executor) check theirs up front.
func CheckOptions(o Options) error {
	if o.OptLevel < 0 || o.OptLevel > O3 {
		return core.Errorf(core.ValueError, "lower.Options: OptLevel %d is not one of O0..O3", int(o.OptLevel))
	}
	if o.MaxCores < 0 {
		return core.Errorf(core.ValueError, "max_cores=%d: a kernel uses at least one AI core", o.MaxCores).
			Suggest("give a positive number of AI cores, or none for every core of the chip")
	}
	if o.MemoryPoolBytes < 0 {
		return core.Errorf(core.ValueError, "a memory pool of %d bytes: the size must be a positive number of bytes (or none, for no limit)", o.MemoryPoolBytes)
	}
	all, optional := PassNames()
	known := map[string]bool{}
	for _, n := range all {
		known[n] = true
	}
	var names []string
	for n, off := range o.Disabled {
		if off {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		if !known[n] {
			return core.Errorf(core.ValueError, "cannot disable pass %q: there is no pass of that name", n).
				Suggest("the passes that can be disabled are: %s", strings.Join(optional, ", "))
		}
		for _, p := range passTable {
			if p.Name == n && p.Required {
				return core.Errorf(core.ValueError, "cannot disable pass %q: the compiler needs it to produce a program", n).
					Suggest("the passes that can be disabled are: %s", strings.Join(optional, ", "))
			}
		}
	}
	if o.StopAfter != "" && !known[o.StopAfter] {
		return core.Errorf(core.ValueError, "StopAfter names pass %q, which does not exist", o.StopAfter).
			Suggest("the passes are, in order: %s", strings.Join(all, ", "))
	}
	return nil
}
