package lower

import (
	"strings"
	"testing"

	"pypto/core"
	"pypto/device"
)

// A value larger than the chip's HBM is refused by the first pass, before tiling
// makes work for it, as a MemoryError naming the value, its size and the chip.
func TestValueLargerThanHBMIsRefusedBeforeTiling(t *testing.T) {
	chip, err := device.Preset("a2")
	if err != nil {
		t.Fatal(err)
	}
	if chip.HBMBytes != 64<<30 {
		t.Fatalf("a2 HBM is %d bytes, want 64 GiB", chip.HBMBytes)
	}
	chip.HBMBytes = 1 << 20 // a chip of 1 MiB, so the test needs no large buffers
	g, err := core.Parse("graph g(%x: f32[512,1024]) {\n  %1 = neg(%x) : f32[512,1024]\n  return %1\n}\n")
	if err != nil {
		t.Fatal(err)
	}
	_, cerr := Compile(g, Options{Chip: chip})
	ce, ok := cerr.(*core.Error)
	if !ok || ce.Kind != core.MemoryError {
		t.Fatalf("Compile = %v, want a MemoryError", cerr)
	}
	for _, want := range []string{"f32[512,1024]", "needs 2 MiB", "the device memory (HBM) of chip a2, 1 MiB"} {
		if !strings.Contains(ce.Message, want) {
			t.Errorf("message %q lacks %q", ce.Message, want)
		}
	}
	chip.HBMBytes = 4 << 20
	if _, err := Compile(g, Options{Chip: chip}); err != nil {
		t.Fatalf("a graph that fits: %v", err)
	}
}
