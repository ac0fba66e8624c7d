package mcp

import (
	"os"
	"runtime"
	"syscall"
)

// Polled is the open file fd (the process's stdin or stdout) as a file Go's network poller waits
// on, when it is a pipe or a socket, with restore, which puts its blocking mode back; fd's own
// file and a no-op otherwise (a terminal, a regular file).
//
// A goroutine blocked in a read or write system call keeps its P out of the scheduler's idle
// count, so the runtime's monitor thread (sysmon) never sleeps deeply: it wakes every 20 us to
// 10 ms for as long as the call blocks, and `relay mcp` waits on its client's next line most of
// its life. Waiting in the poller instead parks the goroutine, and an idle bridge costs nothing
// (BENCHMARKS.md, the bridge's CPU per read). A pipe's or a socket's end is the bridge's own open
// file description, so its non-blocking flag does not reach the client's end.
func Polled(fd uintptr, name string) (f *os.File, restore func()) {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(fd), &st); err != nil {
		return os.NewFile(fd, name), func() {}
	}
	if t := st.Mode & syscall.S_IFMT; t != syscall.S_IFIFO && t != syscall.S_IFSOCK {
		return os.NewFile(fd, name), func() {}
	}
	if err := syscall.SetNonblock(int(fd), true); err != nil {
		return os.NewFile(fd, name), func() {}
	}
	f = os.NewFile(fd, name) // non-blocking: added to the poller
	return f, func() {
		syscall.SetNonblock(int(fd), false)
		runtime.KeepAlive(f) // its finalizer would close fd
	}
}
