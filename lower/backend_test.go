package lower

import (
	"reflect"
	"testing"

	"pypto/device"
)

// TestBackendReuseMatchesCompile checks that the backend pass, which compiles each
// shape of program once and runs in parallel, returns for every block exactly what
// compiling that block alone returns.
func TestBackendReuseMatchesCompile(t *testing.T) {
	chip, err := device.Preset("a2")
	if err != nil {
		t.Fatal(err)
	}
	exe, err := Compile(gptDecoderGraph(t, 1), Options{Chip: chip})
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range exe.exec.Tasks {
		for i, p := range task.Programs {
			want, err := device.Compile(chip, p)
			if err != nil {
				t.Fatal(err)
			}
			if got := task.Machine[i]; !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: the backend pass's machine program differs from device.Compile's:\n%s\nwant\n%s", p.Name, got, want)
			}
		}
	}
}
