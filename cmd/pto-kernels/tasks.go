package main

import (
	"fmt"
	"sort"

	"pypto/core"
	"pypto/device"
	"pypto/isa"
	"pypto/lower"
)

// printTasks compiles case c and prints, with the runtime's features (the default)
// and with the plain runtime, each kind of kernel's share of the run (tasks, summed cycles, summed
// kernel cycles) and the first perTaskRows tasks one by one: their op, tile, blocks,
// cycles, kernel cycles, cube busy and where the dispatcher placed them (-tasks).
func printTasks(chip *device.Chip, c benchCase, perTaskRows int) error {
	b := &graphBuilder{Builder: core.NewBuilder(c.name)}
	c.build(b)
	g := b.Graph()
	exe, err := lower.Compile(g, lower.Options{Chip: chip, Disabled: disabled})
	if err != nil {
		return err
	}
	inputs := make([][]byte, len(g.Params))
	for i, p := range g.Params {
		inputs[i] = make([]byte, g.Type(p).Bytes())
	}
	ops := exe.Exec().Blocks.Tiles.Ops
	for _, nr := range []namedRuntime{{"on", lower.Runtime{}}, {"off", lower.PlainRuntime()}} {
		_, st, err := exe.RunRuntime(inputs, device.RunOptions{NoValues: true}, nr.rt)
		if err != nil {
			return err
		}
		fmt.Printf("%s, runtime %s: %d tasks, %d cycles (%.4f ms)\n", c.name, nr.name, len(st.Tasks), st.Cycles, st.Seconds*1e3)
		fmt.Printf("%4s %-22s %-16s %-20s %6s %9s %9s %6s %9s %9s\n", "task", "name", "op", "tile", "blocks", "cycles", "kernel", "cube", "core at", "end")
		type share struct{ n, cycles, kernel int64 }
		kinds := map[string]*share{}
		for i, t := range exe.Exec().Tasks {
			ts := st.Tasks[i].Stats
			op := ops[t.Kernel].Op
			if kinds[op] == nil {
				kinds[op] = &share{}
			}
			k := kinds[op]
			k.n, k.cycles, k.kernel = k.n+1, k.cycles+ts.Cycles, k.kernel+ts.KernelCycles
			if i < perTaskRows {
				cube := float64(ts.PipeBusy[isa.PipeM]) / float64(ts.Cycles*int64(chip.CubeCores))
				fmt.Printf("%4d %-22s %-16s %-20s %6d %9d %9d %6.3f %9d %9d\n", i, t.Name, op, fmt.Sprint(ops[t.Kernel].Tile), ts.Blocks,
					ts.Cycles, ts.KernelCycles, cube, st.Tasks[i].Slot.CoreStart, st.Tasks[i].Slot.End)
			}
		}
		names := make([]string, 0, len(kinds))
		for n := range kinds {
			names = append(names, n)
		}
		sort.Slice(names, func(a, b int) bool { return kinds[names[a]].cycles > kinds[names[b]].cycles })
		for _, n := range names {
			k := kinds[n]
			fmt.Printf("     %-16s %4d tasks %10d cycles (%4.1f%% of the tasks' sum) %10d in kernels\n", n, k.n, k.cycles, 100*float64(k.cycles)/float64(st.SequentialCycles), k.kernel)
		}
		fmt.Println()
	}
	return nil
}
