package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"pypto/device"
	"pypto/dtype"
	"pypto/internal/ptoas"
	"pypto/isa"
	"pypto/lower"
)

// PTO-AS: `pto export` writes a program as PTO-AS (its auto form and, compiled for a
// chip, its manual form); `pto run` takes a PTO-AS file as well as our own text.

// isPTOAS reports whether a file's text is PTO-AS (MLIR) rather than our assembly:
// its first word, past comments, starts a module, a function or a type alias.
func isPTOAS(data []byte) bool {
	for _, line := range strings.Split(string(data), "\n") {
		s := strings.TrimSpace(line)
		if s == "" || strings.HasPrefix(s, "//") || strings.HasPrefix(s, "#") && !strings.HasPrefix(s, "#pto") {
			continue
		}
		return strings.HasPrefix(s, "module") || strings.HasPrefix(s, "func.func") || strings.HasPrefix(s, "!")
	}
	return false
}

// cmdExport: pto export [-chip NAME] [-d DIR] prog
func cmdExport(args []string, stdout io.Writer) error {
	fs := newFlags("export")
	chipName := fs.String("chip", "a2", "chip preset the manual form is compiled for ("+fmt.Sprint(device.PresetNames())+")")
	dir := fs.String("d", ".", "directory to write <kernel>.pto (auto form) and <kernel>.manual.pto into")
	path, err := oneFile(fs, args)
	if err != nil {
		return err
	}
	p, err := loadProgram(path)
	if err != nil {
		return err
	}
	if err := isa.Verify(p, nil); err != nil {
		return err
	}
	chip, err := device.Preset(*chipName)
	if err != nil {
		return err
	}
	m, err := device.Compile(chip, p)
	if err != nil {
		return err
	}
	auto, err := ptoas.WriteTask(ptoas.Task{Name: p.Name, Programs: []*isa.Program{p}})
	if err != nil {
		return err
	}
	manual, err := ptoas.WriteTask(ptoas.ManualTask(p.Name, []*device.MachineProgram{m}, 0))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	base := filepath.Join(*dir, fileStem(p.Name))
	if err := os.WriteFile(base+".pto", []byte(auto.Text), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(base+".manual.pto", []byte(manual.Text), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s.pto (auto form, %d lines), %s.manual.pto (manual form for %s, %d flags)\n",
		base, strings.Count(auto.Text, "\n"), base, chip.Name, manual.Flags)
	return nil
}

func fileStem(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !(c == '_' || c == '-' || c == '.' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
			b[i] = '_'
		}
	}
	return string(b)
}

// runPTOAS runs a PTO-AS kernel: its blocks as one task on the simulator (target sim)
// or on the reference interpreter (ref), the params laid out in GM one after another.
// inputs fill the params the kernel reads, in order; named fill those named.
func runPTOAS(path string, data []byte, inputs []string, named, outs bindings, target, chipName string, blocks int, maxSteps int64, stdout io.Writer) error {
	chip, err := device.Preset(chipName)
	if err != nil {
		return err
	}
	k, err := lower.LoadPTOKernel(chip, path, string(data), blocks)
	if err != nil {
		return err
	}
	task := k.Task
	first := task.Programs[0]
	params, err := newParams(first)
	if err != nil {
		return err
	}
	access := lower.ParamAccess(task.Programs)
	var reads []int
	for i, a := range access {
		if a == "read" || a == "readwrite" {
			reads = append(reads, i)
		}
	}
	if len(inputs) > len(reads) {
		return fmt.Errorf("%d --input files for the %d params kernel %s reads", len(inputs), len(reads), task.Name)
	}
	fill := func(i int, file string) error {
		a, err := readNPY(file)
		if err != nil {
			return err
		}
		prm := first.Params[i]
		if len(a.values) != prm.Elems {
			return fmt.Errorf("%s has %d elements (shape %v), param %s is %s[%d]", file, len(a.values), a.shape, prm.Name, prm.DType, prm.Elems)
		}
		params[i] = dtype.Encode(prm.DType, a.values)
		return nil
	}
	for j, file := range inputs {
		if err := fill(reads[j], file); err != nil {
			return err
		}
	}
	index := map[string]int{}
	for i, prm := range first.Params {
		index[prm.Name] = i
	}
	for _, b := range append(append(bindings{}, named...), outs...) {
		if _, ok := index[b.param]; !ok {
			return fmt.Errorf("kernel %s has no param %q", task.Name, b.param)
		}
	}
	for _, b := range named {
		if err := fill(index[b.param], b.path); err != nil {
			return err
		}
	}
	switch target {
	case "ref":
		for g := 0; g < len(task.Programs); g += task.GroupSize() {
			var cores []isa.Core
			for _, p := range task.Programs[g : g+task.GroupSize()] {
				cores = append(cores, isa.Core{Prog: p, Params: params})
			}
			if err := isa.InterpretCores(cores, isa.InterpOptions{Print: stdout, MaxSteps: maxSteps}); err != nil {
				return err
			}
		}
	case "sim":
		if err := simulateTask(chip, k, params, maxSteps, stdout); err != nil {
			return err
		}
	default:
		return fmt.Errorf("target %q is neither ref nor sim: %w", target, errUsage)
	}
	for _, o := range outs {
		i := index[o.param]
		prm := first.Params[i]
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

// simulateTask runs a kernel's task with its params in GM and copies them back.
func simulateTask(chip *device.Chip, k *lower.PTOKernel, params [][]byte, maxSteps int64, stdout io.Writer) error {
	task := k.Task
	gm, addrs, err := layGM(chip, task.Name, params)
	if err != nil {
		return err
	}
	var st *device.TaskStats
	if task.Vectors == 0 {
		blocks := make([]device.Block, len(task.Machine))
		for i, m := range task.Machine {
			blocks[i] = device.Block{Prog: m, ParamAddrs: addrs}
		}
		st, err = device.RunTask(chip, gm, task.Core, blocks, device.RunOptions{MaxInstructions: maxSteps})
	} else {
		n := task.GroupSize()
		groups := make([]device.Group, len(task.Machine)/n)
		for i := range groups {
			groups[i].Cube = &device.Block{Prog: task.Machine[i*n], ParamAddrs: addrs}
			for _, m := range task.Machine[i*n+1 : (i+1)*n] {
				groups[i].Vector = append(groups[i].Vector, device.Block{Prog: m, ParamAddrs: addrs})
			}
		}
		st, err = device.RunGroupTask(chip, gm, groups, device.RunOptions{MaxInstructions: maxSteps})
	}
	if err != nil {
		return k.RunError(err)
	}
	readGM(gm, addrs, params)
	fmt.Fprintf(stdout, "%s on %s: %d blocks, %d cycles (%.3f us at %.2f GHz), %d instructions, GM read %d B, written %d B\n",
		task.Name, chip.Name, len(task.Programs)/task.GroupSize(), st.Cycles, chip.Seconds(st.Cycles)*1e6, chip.ClockHz/1e9, st.Instructions, st.GMBytesRead, st.GMBytesWritten)
	return nil
}
