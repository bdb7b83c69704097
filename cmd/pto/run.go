package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"pypto/device"
	"pypto/dtype"
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

// gmAlign is where each param starts in the simulator's GM: generous, so that every
// DMA sees aligned bases as a runtime allocator would give.
const gmAlign = 512

func cmdRun(args []string, stdout io.Writer) error {
	fs := newFlags("run")
	target := fs.String("target", "ref", "ref (the reference interpreter) or sim (the simulated NPU)")
	chipName := fs.String("chip", "a2", "chip preset for -target sim ("+fmt.Sprint(device.PresetNames())+")")
	maxSteps := fs.Int64("max-steps", 0, "reference: stop after this many instructions (0: no limit)")
	var ins, outs bindings
	fs.Var(&ins, "i", "param=in.npy: fill a param from a .npy file (repeatable)")
	fs.Var(&outs, "o", "param=out.npy[:d0,d1,...]: write a param after the run (repeatable)")
	path, err := oneFile(fs, args)
	if err != nil {
		return err
	}
	p, err := loadProgram(path)
	if err != nil {
		return err
	}
	params := make([][]byte, len(p.Params))
	index := map[string]int{}
	for i, prm := range p.Params {
		index[prm.Name] = i
		params[i] = make([]byte, prm.Elems*prm.DType.Size())
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
	switch *target {
	case "ref":
		err = isa.InterpretCores([]isa.Core{{Prog: p, Params: params}}, isa.InterpOptions{Print: stdout, MaxSteps: *maxSteps})
	case "sim":
		err = simulate(p, params, *chipName, stdout)
	default:
		return fmt.Errorf("target %q is neither ref nor sim: %w", *target, errUsage)
	}
	if err != nil {
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

// simulate compiles p for a chip preset, runs it as a one-block task with the params
// laid out in GM, copies them back and prints the time.
func simulate(p *isa.Program, params [][]byte, chipName string, stdout io.Writer) error {
	chip, err := device.Preset(chipName)
	if err != nil {
		return err
	}
	m, err := device.Compile(chip, p)
	if err != nil {
		return err
	}
	addrs := make([]int, len(params))
	size := 0
	for i, b := range params {
		addrs[i] = size
		size += (len(b) + gmAlign - 1) / gmAlign * gmAlign
	}
	gm := make([]byte, max(size, gmAlign))
	for i, b := range params {
		copy(gm[addrs[i]:], b)
	}
	st, err := device.RunTask(chip, gm, p.Core, []device.Block{{Prog: m, ParamAddrs: addrs}}, device.RunOptions{})
	if err != nil {
		return err
	}
	for i, b := range params {
		copy(b, gm[addrs[i]:addrs[i]+len(b)])
	}
	fmt.Fprintf(stdout, "%s on %s: %d cycles (%.3f us at %.2f GHz), %d instructions, GM read %d B, written %d B\n",
		p.Name, chip.Name, st.Cycles, chip.Seconds(st.Cycles)*1e6, chip.ClockHz/1e9, st.Instructions, st.GMBytesRead, st.GMBytesWritten)
	return nil
}
