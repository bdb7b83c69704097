package checked

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// LimitError is an allocation refused before it was made: what it was for, how many
// bytes it needs (-1 when the size overflows an int) and the limit it exceeds.
type LimitError struct {
	What  string // "a tensor of shape [1099511627776] float32", ...
	Bytes int    // -1: more than an int can count
	Limit int
	Of    string // what the limit is: "the memory available on this machine", ...
}

func (e *LimitError) Error() string {
	need := "more bytes than a 64-bit size can count"
	if e.Bytes >= 0 {
		need = Size(e.Bytes)
	}
	return fmt.Sprintf("%s needs %s, more than %s, %s", e.What, need, e.Of, Size(e.Limit))
}

// Size prints a byte count for people: "4 TiB (4398046511104 bytes)".
func Size(n int) string {
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	if n < 1024 {
		return fmt.Sprintf("%d bytes", n)
	}
	v, u := float64(n)/1024, 0
	for v >= 1024 && u < len(units)-1 {
		v, u = v/1024, u+1
	}
	return fmt.Sprintf("%s %s (%d bytes)", strconv.FormatFloat(v, 'g', 4, 64), units[u], n)
}

// Within checks bytes (-1 for an overflowed size) against limit; what (called only on
// failure) and of name the allocation and the limit in the error.
func Within(bytes, limit int, what func() string, of string) error {
	if bytes >= 0 && bytes <= limit {
		return nil
	}
	return &LimitError{What: what(), Bytes: bytes, Limit: limit, Of: of}
}

// Host checks that an allocation of bytes (-1 for an overflowed size) fits in this
// machine's memory: its physical memory (or the memory limit of the cgroup it runs
// in), the limit PYPTO_HOST_MEMORY_LIMIT sets (bytes), and for large allocations the
// memory available now, so that the allocation is refused with an error rather than
// attempted. Small allocations cost one comparison; what is called only to build the
// error.
func Host(bytes int, what func() string) error {
	if bytes >= 0 && bytes < freshCheckBytes {
		return nil
	}
	if limit, ok := envLimit(); ok {
		if err := Within(bytes, limit, what, "the limit "+envName+" sets"); err != nil {
			return err
		}
	}
	total, avail := hostMemory()
	if total <= 0 { // the system does not say: only an overflowed size is refused
		return Within(bytes, maxInt, what, "the largest size an int can count")
	}
	if err := Within(bytes, total, what, "the physical memory of this machine"); err != nil {
		return err
	}
	if avail = availableNow(avail); avail > 0 {
		return Within(bytes, avail, what, "the memory available on this machine now")
	}
	return nil
}

// envName is the variable that lowers the limit, for a process that must share the
// machine (tests, fuzzing, a service).
const envName = "PYPTO_HOST_MEMORY_LIMIT"

func envLimit() (int, bool) {
	v := os.Getenv(envName)
	if v == "" {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	return n, err == nil && n >= 0
}

// freshCheckBytes is the size from which Host reads the memory available at the time
// of the call (a read of /proc/meminfo, tens of microseconds): below it the cost
// would show on small eager ops, above it it is nothing beside the allocation.
const freshCheckBytes = 64 << 20

// hostMemory is the machine's physical memory and the memory available when it was
// first asked, in bytes (0 where the system does not say), each capped by the memory
// limit of the cgroup the process runs in.
var hostMemory = sync.OnceValues(func() (int, int) { return readMemory() })

// availableNow reads the available memory again; fallback is used where it cannot be read.
func availableNow(fallback int) int {
	if _, avail := readMemory(); avail > 0 {
		return avail
	}
	return fallback
}

func readMemory() (total, avail int) {
	total, avail = readMeminfo()
	if limit, used, ok := readCgroup(); ok {
		if total <= 0 || limit < total {
			total = limit
		}
		if free := max(limit-used, 1); avail <= 0 || free < avail {
			avail = free
		}
	}
	return total, avail
}

// readCgroup returns the cgroup v2 memory limit and current use, where a limit is set.
func readCgroup() (limit, used int, ok bool) {
	read := func(name string) (int, bool) {
		b, err := os.ReadFile("/sys/fs/cgroup/" + name)
		if err != nil {
			return 0, false
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(b)))
		return n, err == nil && n > 0
	}
	if limit, ok = read("memory.max"); !ok { // "max" means none
		return 0, 0, false
	}
	used, _ = read("memory.current")
	return limit, used, true
}

// HostTotal is this machine's physical memory in bytes, or 0 where the system does not
// say (then only overflow is checked).
func HostTotal() int {
	total, _ := hostMemory()
	if total <= 0 {
		return maxInt
	}
	return total
}

// readMeminfo returns MemTotal and MemAvailable from /proc/meminfo in bytes (0 for
// what it cannot read).
func readMeminfo() (total, avail int) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || (name != "MemTotal" && name != "MemAvailable") {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		kb, err := strconv.Atoi(fields[0])
		if err != nil {
			continue
		}
		if v, ok := Mul(kb, 1024); ok {
			if name == "MemTotal" {
				total = v
			} else {
				avail = v
			}
		}
	}
	return total, avail
}
