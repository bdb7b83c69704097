package session

import (
	"strings"

	"pypto/core"
	"pypto/device"
)

// ReferenceDevice is the device name that runs graphs in the Go reference interpreter
// (core.Interpret) instead of compiling them for a chip: exact results and no timing.
// It lets users and tests compute ops that have no device lowering yet, and check the
// simulated NPU against the oracle from Python.
const ReferenceDevice = "reference"

// Devices is the compiler of the default session: the chip presets through the
// lowering pipeline, and ReferenceDevice through the interpreter.
func Devices() Compiler { return deviceCompiler{chips: Lowering(), reference: Reference()} }

type deviceCompiler struct{ chips, reference Compiler }

func isReference(name string) bool {
	return strings.EqualFold(strings.TrimSpace(name), ReferenceDevice)
}

func (c deviceCompiler) CheckDevice(name string) (string, error) {
	if isReference(name) {
		return ReferenceDevice, nil
	}
	canon, err := c.chips.CheckDevice(name)
	if err != nil {
		return "", core.Errorf(core.ValueError, "unknown device %q", name).
			Suggest("choose one of the chip presets (%s) or %q, the reference interpreter", strings.Join(device.PresetNames(), ", "), ReferenceDevice)
	}
	return canon, nil
}

// Estimate is the chip's estimate of g's program in ms; the reference device has none.
func (c deviceCompiler) Estimate(g *core.Graph, name string, cfg Config, run []int) (float64, bool, error) {
	if isReference(name) {
		return 0, false, nil
	}
	return estimateWith(c.chips, g, name, cfg, run)
}

func (c deviceCompiler) Compile(g *core.Graph, name string, cfg Config) (Program, error) {
	if isReference(name) {
		return c.reference.Compile(g, name, cfg)
	}
	return c.chips.Compile(g, name, cfg)
}
