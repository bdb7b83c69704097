// Package device is the simulated NPU: chip presets (chip.go, presets.go), the backend
// that turns an auto-mode PTO program into a machine program for one chip (backend*.go:
// buffer allocation, pipe routing, flag insertion) and the simulator that runs machine
// programs on the cores of a chip (sim*.go), computing real values and predicting time.
//
// The package depends only on isa and dtype: it is a target, and knows nothing of the
// graphs that produced the programs it runs. docs/device.md describes every constant,
// the allocation and flag scheme, the functional semantics and the timing model.
//
// No exported function lets a Go panic escape: each recovers and returns an error, so a
// malformed program coming through the C ABI cannot abort the host process.
package device
