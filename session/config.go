package session

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"pypto/core"
	"pypto/lower"
)

// Config is what a user may choose about how a program is compiled (Python's
// p.CompileConfig). The zero Config is the default: DefaultOptLevel, every pass of that
// level, no memory limit, the session's current device.
type Config struct {
	OptLevel        lower.OptLevel
	DisabledPasses  []string
	MemoryPoolBytes int    // 0: no limit
	Device          string // "": the session's current device
	Deterministic   bool   // lower.Options.Deterministic
	// MaxSteps bounds the instructions one block executes in a run on a chip
	// (device.RunOptions.MaxInstructions; 0: the simulator's default).
	MaxSteps int64
	// MaxCores is the most AI cores a kernel uses (lower.Options.MaxCores; 0: all).
	MaxCores int
	// PerSizePrograms compiles a symbolic executor's graph for every binding of its
	// symbols, as for exact sizes, instead of one program per bucket (buckets.go).
	PerSizePrograms bool
	// Runtime is the runtime's scheduling features the program's runs use.
	Runtime lower.Runtime
	// Visualize keeps what the visualisation shows of each compilation
	// (lower.Options.Visualize).
	Visualize bool
	// Donate lists the inputs (by position) whose device buffers the program may
	// overwrite (lower.Options.Donate): slice_updates of them are written in place.
	Donate []int
	// dynamic names the sizes a bucket's program reads when it runs
	// (lower.Options.Dynamic); the executor sets it for the programs of its buckets.
	dynamic *lower.DynamicSizes
	// weights lists the params (by position) the executor binds to the data its trace
	// captured, the same bytes every run (lower.Options.Weights).
	weights []int
}

// configJSON is Config as Python sends it, the level as a number (absent: the default).
type configJSON struct {
	OptLevel        *int     `json:"opt_level"`
	DisabledPasses  []string `json:"disable_passes"`
	MemoryPoolBytes int      `json:"memory_pool_bytes"`
	Device          string   `json:"chip"`
	Deterministic   bool     `json:"deterministic"`
	MaxSteps        int64    `json:"max_steps"`
	MaxCores        int      `json:"max_cores"`
	PerSizePrograms bool     `json:"per_size_programs"`
	// The runtime's features: absent is on (the default), false switches one off.
	ConcurrentTasks *bool `json:"concurrent_tasks"`
	OverlapLaunch   *bool `json:"overlap_launch"`
	PrefetchL2      *bool `json:"prefetch_l2"`
	BalanceBlocks   *bool `json:"balance_blocks"`
	EarlyStart      *bool `json:"early_start"`
	Visualize       bool  `json:"visualize"`
	Donate          []int `json:"donate"`
}

// ParseConfig reads a Config from its JSON form {"opt_level", "disable_passes",
// "memory_pool_bytes", "chip", "deterministic", "max_steps", and the runtime's
// "concurrent_tasks", "overlap_launch", "prefetch_l2", "balance_blocks", "early_start"
// (each on unless given as false)} (every field optional; "" or "null" is the default) and
// checks it: unknown fields, levels, pass names and negative sizes are ValueErrors that
// list the valid choices.
func ParseConfig(text string) (Config, error) {
	var cj configJSON
	if t := strings.TrimSpace(text); t != "" && t != "null" {
		if err := decodeStrict(t, &cj); err != nil {
			return Config{}, core.Errorf(core.ValueError, "compile config: %v", err).
				Suggest("the fields are opt_level, disable_passes, memory_pool_bytes, chip, deterministic, max_steps, max_cores, per_size_programs, concurrent_tasks, overlap_launch, prefetch_l2, balance_blocks, early_start, visualize and donate")
		}
	}
	if cj.MaxSteps < 0 {
		return Config{}, core.Errorf(core.ValueError, "compile config: max_steps %d is negative", cj.MaxSteps).
			Suggest("give a positive number of instructions, or none for the default")
	}
	c := Config{DisabledPasses: cj.DisabledPasses, MemoryPoolBytes: cj.MemoryPoolBytes, Device: cj.Device, Deterministic: cj.Deterministic, MaxSteps: cj.MaxSteps, MaxCores: cj.MaxCores, PerSizePrograms: cj.PerSizePrograms,
		Runtime: lower.Runtime{NoConcurrentTasks: off(cj.ConcurrentTasks), NoOverlapLaunch: off(cj.OverlapLaunch), NoPrefetchL2: off(cj.PrefetchL2), NoBalanceBlocks: off(cj.BalanceBlocks), NoEarlyStart: off(cj.EarlyStart)}, Visualize: cj.Visualize,
		Donate: cj.Donate}
	for _, k := range cj.Donate {
		if k < 0 {
			return Config{}, core.Errorf(core.ValueError, "compile config: donated input %d is negative", k).Suggest("donate inputs by their position, from 0")
		}
	}
	if cj.OptLevel != nil {
		l, err := lower.OptLevelOf(*cj.OptLevel)
		if err != nil {
			return Config{}, err
		}
		c.OptLevel = l
	}
	return c, c.Check()
}

// off reports whether a runtime feature given as on may be switched off: given and false.
func off(on *bool) bool { return on != nil && !*on }

// Check validates the choices that do not depend on a device.
func (c Config) Check() error { return lower.CheckOptions(c.options()) }

// Key is the part of a compile-cache key that the config decides: programs compiled
// with different options are different programs.
func (c Config) Key() string {
	off := slices.Clone(c.DisabledPasses)
	slices.Sort(off)
	rt := c.Runtime
	return fmt.Sprintf("opt=%s;off=%s;pool=%d;det=%t;steps=%d;cores=%d;rt=%t%t%t%t%t;viz=%t;donate=%v;dynamic=%s;weights=%v", c.OptLevel, strings.Join(slices.Compact(off), ","), c.MemoryPoolBytes, c.Deterministic, c.MaxSteps, c.MaxCores,
		rt.ConcurrentTasks(), rt.OverlapLaunch(), rt.PrefetchL2(), rt.BalanceBlocks(), rt.EarlyStart(), c.Visualize, c.Donate, c.dynamic, c.weights)
}

func decodeStrict(text string, v any) error {
	d := json.NewDecoder(strings.NewReader(text))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

// options are the lowering options the config asks for (the caller adds the chip).
func (c Config) options() lower.Options {
	o := lower.Options{OptLevel: c.OptLevel, MemoryPoolBytes: c.MemoryPoolBytes, Deterministic: c.Deterministic, Runtime: c.Runtime, Visualize: c.Visualize, Donate: c.Donate, Dynamic: c.dynamic, Weights: c.weights,
		MaxCores: c.MaxCores}
	if len(c.DisabledPasses) > 0 {
		o.Disabled = map[string]bool{}
		for _, p := range c.DisabledPasses {
			o.Disabled[p] = true
		}
	}
	return o
}

// CheckConfig checks cfg and returns it with its device, if it names one, in canonical
// form (an unknown device is a ValueError listing the presets).
func (s *Session) CheckConfig(cfg Config) (Config, error) {
	if err := cfg.Check(); err != nil {
		return Config{}, err
	}
	if cfg.Device != "" {
		canon, err := s.compiler.CheckDevice(cfg.Device)
		if err != nil {
			return Config{}, err
		}
		cfg.Device = canon
	}
	return cfg, nil
}
