package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"pypto/device"
	"pypto/dtype"
	"pypto/internal/checked"
	"pypto/isa"
)

// binding is one -i or -o flag: a param name, a .npy path and, for outputs, an
// optional shape.
type binding struct {
	param, path string
	shape       []int
}

type bindings []binding

func (b *bindings) String() string { return fmt.Sprint(*b) }

// Set parses param=path[:d0,d1,...].
func (b *bindings) Set(s string) error {
	name, path, ok := strings.Cut(s, "=")
	if !ok || name == "" || path == "" {
		return fmt.Errorf("%q is not param=file.npy", s)
	}
	bd := binding{param: name, path: path}
	if i := strings.LastIndexByte(path, ':'); i >= 0 {
		for _, d := range strings.Split(path[i+1:], ",") {
			n, err := strconv.Atoi(strings.TrimSpace(d))
			if err != nil || n < 0 {
				return fmt.Errorf("%q: shape %q is not a list of sizes", s, path[i+1:])
			}
			bd.shape = append(bd.shape, n)
		}
		bd.path = path[:i]
	}
	*b = append(*b, bd)
	return nil
}

// files is a repeatable flag of file paths.
type files []string

func (f *files) String() string { return fmt.Sprint(*f) }
func (f *files) Set(s string) error {
	*f = append(*f, s)
	return nil
}

// targetSet reports whether -target was given.
func targetSet(fs *flag.FlagSet) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == "target" })
	return set
}

// gmAlign is where each param starts in the simulator's GM: generous, so that every
// DMA sees aligned bases as a runtime allocator would give.
const gmAlign = 512

func cmdRun(args []string, stdout io.Writer) error {
	fs := newFlags("run")
	target := fs.String("target", "ref", "ref (the reference interpreter) or sim (the simulated NPU)")
	chipName := fs.String("chip", "a2", "chip preset for -target sim ("+fmt.Sprint(device.PresetNames())+")")
	maxSteps := fs.Int64("max-steps", 0, "stop after this many executed instructions (ref: of the program, sim: of the block; 0: the default budget)")
	var ins, outs bindings
	var inputs files
	fs.Var(&ins, "i", "param=in.npy: fill a param from a .npy file (repeatable)")
	fs.Var(&outs, "o", "param=out.npy[:d0,d1,...]: write a param after the run (repeatable)")
	fs.Var(&inputs, "input", "in.npy: fill the next param the kernel reads (repeatable; PTO-AS kernels)")
	blocks := fs.Int("blocks", 0, "blocks a PTO-AS kernel runs (0: its pypto.blocks, else 1)")
	path, err := oneFile(fs, args)
	if err != nil {
		return err
	}
	if data, err := os.ReadFile(path); err == nil && isPTOAS(data) {
		if *target == "ref" && !targetSet(fs) {
			*target = "sim" // a PTO-AS kernel runs on the chip unless ref is asked for
		}
		return runPTOAS(path, data, inputs, ins, outs, *target, *chipName, *blocks, *maxSteps, stdout)
	}
	if len(inputs) > 0 || *blocks != 0 {
		return fmt.Errorf("--input and -blocks are for PTO-AS kernels; %s is PTO text (use -i param=file.npy): %w", path, errUsage)
	}
	p, err := loadProgram(path)
	if err != nil {
		return err
	}
	params, err := newParams(p)
	if err != nil {
		return err
	}
	index := map[string]int{}
	for i, prm := range p.Params {
		index[prm.Name] = i
	}
	lookup := func(b binding) (int, error) {
		i, ok := index[b.param]
		if !ok {
			return 0, fmt.Errorf("kernel %s has no param %q", p.Name, b.param)
		}
		return i, nil
	}
	for _, in := range ins {
		i, err := lookup(in)
		if err != nil {
			return err
		}
		a, err := readNPY(in.path)
		if err != nil {
			return err
		}
		prm := p.Params[i]
		if len(a.values) != prm.Elems {
			return fmt.Errorf("%s has %d elements (shape %v), param %s is %s[%d]", in.path, len(a.values), a.shape, prm.Name, prm.DType, prm.Elems)
		}
		params[i] = dtype.Encode(prm.DType, a.values)
	}
	for _, o := range outs {
		if _, err := lookup(o); err != nil {
			return err
		}
	}
	if err := execute(p, params, *target, *chipName, *maxSteps, stdout); err != nil {
		return err
	}
	for _, o := range outs {
		i, _ := lookup(o)
		prm := p.Params[i]
		shape := o.shape
		if shape == nil {
			shape = []int{prm.Elems}
		}
		if err := writeNPY(o.path, prm.DType, shape, dtype.Decode(prm.DType, params[i], prm.Elems)); err != nil {
			return err
		}
	}
	return nil
}

// newParams allocates p's params, zeroed, once their sizes are known to fit in memory.
func newParams(p *isa.Program) ([][]byte, error) {
	params := make([][]byte, len(p.Params))
	for i, prm := range p.Params {
		n, ok := prm.Bytes()
		if !ok {
			n = -1
		}
		if err := checked.Host(n, func() string { return fmt.Sprintf("param %%%s (%s[%d])", prm.Name, prm.DType, prm.Elems) }); err != nil {
			return nil, fmt.Errorf("kernel %s: %v", p.Name, err)
		}
		params[i] = make([]byte, n)
	}
	return params, nil
}

// execute runs p on target ("ref" or "sim") with its params in place.
func execute(p *isa.Program, params [][]byte, target, chipName string, maxSteps int64, stdout io.Writer) error {
	switch target {
	case "ref":
		return isa.InterpretCores([]isa.Core{{Prog: p, Params: params}}, isa.InterpOptions{Print: stdout, MaxSteps: maxSteps})
	case "sim":
		return simulate(p, params, chipName, maxSteps, stdout)
	}
	return fmt.Errorf("target %q is neither ref nor sim: %w", target, errUsage)
}

// simulate compiles p for a chip preset, runs it as a one-block task with the params
// laid out in GM, copies them back and prints the time.
func simulate(p *isa.Program, params [][]byte, chipName string, maxSteps int64, stdout io.Writer) error {
	chip, err := device.Preset(chipName)
	if err != nil {
		return err
	}
	m, err := device.Compile(chip, p)
	if err != nil {
		return err
	}
	gm, addrs, err := layGM(chip, p.Name, params)
	if err != nil {
		return err
	}
	st, err := device.RunTask(chip, gm, p.Core, []device.Block{{Prog: m, ParamAddrs: addrs}}, device.RunOptions{MaxInstructions: maxSteps})
	if err != nil {
		return err
	}
	readGM(gm, addrs, params)
	fmt.Fprintf(stdout, "%s on %s: %d cycles (%.3f us at %.2f GHz), %d instructions, GM read %d B, written %d B\n",
		p.Name, chip.Name, st.Cycles, chip.Seconds(st.Cycles)*1e6, chip.ClockHz/1e9, st.Instructions, st.GMBytesRead, st.GMBytesWritten)
	return nil
}

// layGM lays kernel name's params out in a GM of their own, each at a gmAlign boundary,
// checked against the chip's GM and the host's memory; it returns the GM and each
// param's address.
func layGM(chip *device.Chip, name string, params [][]byte) ([]byte, []int, error) {
	addrs := make([]int, len(params))
	size := 0
	for i, b := range params {
		addrs[i] = size
		var ok bool
		if size, ok = checked.Add(size, (len(b)+gmAlign-1)/gmAlign*gmAlign); !ok {
			size = -1
			break
		}
	}
	gmWhat := func() string { return fmt.Sprintf("the GM of kernel %s's %d params", name, len(params)) }
	if err := chip.CheckGM(size, gmWhat); err != nil {
		return nil, nil, err
	}
	if err := checked.Host(size, gmWhat); err != nil {
		return nil, nil, err
	}
	gm := make([]byte, max(size, gmAlign))
	for i, b := range params {
		copy(gm[addrs[i]:], b)
	}
	return gm, addrs, nil
}

// readGM copies each param back out of a GM laid out by layGM.
func readGM(gm []byte, addrs []int, params [][]byte) {
	for i, b := range params {
		copy(b, gm[addrs[i]:addrs[i]+len(b)])
	}
}
