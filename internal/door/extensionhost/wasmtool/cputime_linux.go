//go:build linux

package wasmtool

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// The kernel's bits of a CPU clock id (include/linux/posix-timers.h).
const (
	// cpuClockPerThread marks a clock id as a thread's, not a process's.
	cpuClockPerThread = 4
	// cpuClockSched is the scheduler's count of the time a task ran, in nanoseconds.
	cpuClockSched = 2
)

// threadCPUClock is the id of thread tid's CPU clock, as the kernel's
// MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED) builds it: the complement of the tid above three low
// bits, which say "per thread" and "scheduler time". Any thread of the process may read it.
func threadCPUClock(tid int) int32 {
	return ^int32(tid)<<3 | cpuClockPerThread | cpuClockSched
}

// readClock reads clock id.
func readClock(id int32) (time.Duration, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(id, &ts); err != nil {
		return 0, err
	}
	return time.Duration(ts.Nano()), nil
}

// startClock locks the calling goroutine to its OS thread, so that only the run uses the thread
// until release, and counts that thread's CPU time. Where the kernel does not answer the thread's
// clock, the run is measured on the wall clock instead.
func startClock() runClock {
	runtime.LockOSThread()
	id := threadCPUClock(unix.Gettid())
	start, err := readClock(id)
	if err != nil {
		runtime.UnlockOSThread()
		return wallClock()
	}
	return runClock{
		cpu: true,
		used: func() time.Duration {
			now, err := readClock(id)
			if err != nil {
				return 0 // the wall-clock backstop still ends the run
			}
			return now - start
		},
		release: runtime.UnlockOSThread,
	}
}
