package main

/*
#include <stdint.h>
*/
import "C"

import (
	"os"
	"sync"
	"syscall"

	"pypto/core"
	"pypto/internal/interrupt"
)

// Ctrl-C during a long run. A ctypes call holds Python's main thread until it
// returns, and Python runs its SIGINT handler (which raises KeyboardInterrupt) only
// after that, so the run itself must stop. Python's C-level handler writes the number
// of every signal it catches to the fd given to signal.set_wakeup_fd; the Python side
// passes the read end of that pipe here, and a goroutine turns each SIGINT byte into
// interrupt.Raise, which the run loops poll. The interrupted call returns an error of
// kind Interrupted, and Python raises KeyboardInterrupt.

var watching sync.Once

// pypto_watch_interrupts starts watching fd, the read end of Python's signal wakeup
// pipe (once per process; later calls are ignored).
//
//export pypto_watch_interrupts
func pypto_watch_interrupts(fd C.int32_t) C.uintptr_t {
	return status(func() error {
		if fd < 0 {
			return core.Errorf(core.ValueError, "invalid wakeup fd %d", int(fd))
		}
		watching.Do(func() { go watchWakeups(os.NewFile(uintptr(fd), "python signal wakeup pipe")) })
		return nil
	})
}

func watchWakeups(f *os.File) {
	buf := make([]byte, 64)
	for {
		n, err := f.Read(buf)
		for _, sig := range buf[:n] {
			if syscall.Signal(sig) == syscall.SIGINT {
				interrupt.Raise()
			}
		}
		if err != nil {
			return
		}
	}
}

// pypto_interrupt stops every run in progress, as Ctrl-C does.
//
//export pypto_interrupt
func pypto_interrupt() C.uintptr_t {
	return status(func() error {
		interrupt.Raise()
		return nil
	})
}
