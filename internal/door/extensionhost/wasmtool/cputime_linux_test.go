//go:build linux

package wasmtool

import (
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU reads the calling thread's CPU clock the way the C library names it.
func threadCPU(t testing.TB) time.Duration {
	t.Helper()
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ts.Nano())
}

// TestThreadCPUClockIsTheKernels: the clock id threadCPUClock builds for this thread reads between
// two readings of the thread's own CPU clock (CLOCK_THREAD_CPUTIME_ID) while other goroutines spin
// (a process's clock would run ahead of both); another thread of the process reads the same clock;
// a thread of another process is refused.
func TestThreadCPUClockIsTheKernels(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer spin(2 * runtime.GOMAXPROCS(0))()
	id := threadCPUClock(unix.Gettid())
	var after time.Duration
	for i := range 200 {
		burn(10_000)
		before := threadCPU(t)
		got, err := readClock(id)
		after = threadCPU(t)
		if err != nil || got < before || got > after {
			t.Fatalf("reading %d: the built clock read %v (%v), not within this thread's %v..%v", i, got, err, before, after)
		}
	}
	read := make(chan time.Duration)
	go func() { // on another thread: this one is locked and waits on the channel
		v, _ := readClock(id)
		read <- v
	}()
	if got, now := <-read, threadCPU(t); got < after || got > now {
		t.Fatalf("read from another thread: %v, not within %v..%v", got, after, now)
	}
	if _, err := readClock(threadCPUClock(os.Getppid())); err == nil {
		t.Fatal("the clock of a thread of another process (the parent) was read")
	}
}

// spin starts n goroutines that keep the CPU busy until the returned func is called.
func spin(n int) (stop func()) {
	done := make(chan struct{})
	for range n {
		go func() {
			for {
				select {
				case <-done:
					return
				default:
					burn(1000)
				}
			}
		}()
	}
	return func() { close(done) }
}

// sink keeps what burn computes, so the compiler cannot drop the work.
var sink atomic.Uint64

// burn does n rounds of arithmetic.
func burn(n int) {
	x := uint64(n)
	for i := range n {
		x = x*6364136223846793005 + uint64(i)
	}
	sink.Add(x)
}
