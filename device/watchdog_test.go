package device

import (
	"errors"
	"strings"
	"testing"

	"pypto/isa"
)

const spinText = `kernel spin vector
param %x: f32[512]
reg %i
tile %t: vec f32[8x64]
  loop %i, 1099511627776
    tload %t, %x[0; 8x64; 64,1]
    tstore %x[0; 8x64; 64,1], %t
  endloop
end
`

func runSpin(t *testing.T, opts RunOptions) error {
	t.Helper()
	chip, err := Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	p, err := isa.Parse(spinText)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Compile(chip, p)
	if err != nil {
		t.Fatal(err)
	}
	_, err = RunTask(chip, make([]byte, 2048), isa.Vector, []Block{{Prog: m, ParamAddrs: []int{0}}}, opts)
	return err
}

// A block that exceeds its instruction budget fails with ErrBudget, naming the kernel
// and the loop it is in.
func TestBudgetNamesTheKernelAndTheLoop(t *testing.T) {
	for _, functional := range []bool{false, true} {
		err := runSpin(t, RunOptions{MaxInstructions: 1000, Functional: functional})
		if !errors.Is(err, ErrBudget) {
			t.Fatalf("functional=%v: got %v, want ErrBudget", functional, err)
		}
		for _, want := range []string{"kernel spin exceeds its budget of 1000 executed instructions", "in the loop at pc", "of 1099511627776"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%q lacks %q", err, want)
			}
		}
	}
}

// A closed Interrupt channel stops the run at the next poll.
func TestInterruptStopsARun(t *testing.T) {
	stop := make(chan struct{})
	close(stop)
	err := runSpin(t, RunOptions{Interrupt: stop})
	if err == nil || !strings.Contains(err.Error(), "kernel spin interrupted after") || errors.Is(err, ErrBudget) {
		t.Fatalf("got %v", err)
	}
}
