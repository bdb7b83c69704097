package checked

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestMulAdd(t *testing.T) {
	for _, c := range []struct {
		a, b, mul, add int
		mulOK, addOK   bool
	}{
		{3, 4, 12, 7, true, true},
		{0, math.MaxInt, 0, math.MaxInt, true, true},
		{1 << 62, 2, 0, 1<<62 + 2, false, true},
		{1 << 62, 1 << 62, 0, 0, false, false},
		{math.MaxInt, 1, math.MaxInt, 0, true, false},
		{-1, 5, 0, 0, false, false},
		{5, -1, 0, 0, false, false},
	} {
		if got, ok := Mul(c.a, c.b); ok != c.mulOK || (ok && got != c.mul) {
			t.Errorf("Mul(%d, %d) = %d, %v; want %d, %v", c.a, c.b, got, ok, c.mul, c.mulOK)
		}
		if got, ok := Add(c.a, c.b); ok != c.addOK || (ok && got != c.add) {
			t.Errorf("Add(%d, %d) = %d, %v; want %d, %v", c.a, c.b, got, ok, c.add, c.addOK)
		}
	}
}

func TestProductBytes(t *testing.T) {
	for _, c := range []struct {
		dims  []int
		elem  int
		bytes int
		ok    bool
	}{
		{nil, 4, 4, true},
		{[]int{2, 3}, 4, 24, true},
		{[]int{1 << 62}, 4, 0, false}, // the case that wrapped to 0
		{[]int{1 << 40, 0, 1 << 40}, 4, 0, true},
		{[]int{1 << 40, -1}, 4, 0, false},
		{[]int{0, -1}, 4, 0, false},
		{[]int{1 << 32, 1 << 32}, 1, 0, false},
		{[]int{1 << 31, 1 << 31}, 1, 1 << 62, true},
	} {
		got, ok := Bytes(c.dims, c.elem)
		if ok != c.ok || got != c.bytes {
			t.Errorf("Bytes(%v, %d) = %d, %v; want %d, %v", c.dims, c.elem, got, ok, c.bytes, c.ok)
		}
	}
}

func TestHostRefusesWhatTheMachineCannotHold(t *testing.T) {
	if err := Host(1<<20, func() string { return "a small buffer" }); err != nil {
		t.Fatalf("1 MiB refused: %v", err)
	}
	for _, n := range []int{1 << 60, -1} {
		err := Host(n, func() string { return "a tensor of shape [1099511627776] float32" })
		var le *LimitError
		if !errors.As(err, &le) {
			t.Fatalf("Host(%d) = %v, want a *LimitError", n, err)
		}
		msg := err.Error()
		if !strings.Contains(msg, "a tensor of shape [1099511627776] float32 needs") || !strings.Contains(msg, "more than") {
			t.Errorf("message %q does not name the allocation and the limit", msg)
		}
	}
	if HostTotal() < 1<<20 {
		t.Errorf("HostTotal() = %d", HostTotal())
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int]string{
		12:      "12 bytes",
		1 << 40: "1 TiB (1099511627776 bytes)",
		3 << 29: "1.5 GiB (1610612736 bytes)",
	} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestEnvironmentLowersTheLimit(t *testing.T) {
	t.Setenv(envName, "100000000") // 100 MB
	if err := Host(200<<20, func() string { return "a buffer" }); err == nil || !strings.Contains(err.Error(), "the limit PYPTO_HOST_MEMORY_LIMIT sets") {
		t.Fatalf("Host(200 MiB) under a 100 MB limit = %v", err)
	}
	if err := Host(80<<20, func() string { return "a buffer" }); err != nil {
		t.Fatalf("Host(80 MiB) under a 100 MB limit = %v", err)
	}
}
