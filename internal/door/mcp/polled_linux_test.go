package mcp

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A pipe handed to Polled is waited on in the poller (only such a file takes a read deadline), and
// restore puts its blocking mode back; a regular file is left as it is.
func TestPolledWaitsOnAPipeInThePoller(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	// os.Pipe's ends are already polled: hand Polled a blocking duplicate, as stdin comes.
	fd, err := syscall.Dup(int(r.Fd())) // Fd leaves r blocking
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	f, restore := Polled(uintptr(fd), "pipe")
	defer f.Close()
	if err := f.SetReadDeadline(time.Now().Add(10 * time.Millisecond)); err != nil {
		t.Fatalf("the pipe is not in the poller: %v", err)
	}
	if _, err := f.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a read of an empty pipe past its deadline: %v", err)
	}
	if !nonBlocking(t, fd) {
		t.Fatal("the pipe is blocking while polled")
	}
	restore()
	if nonBlocking(t, fd) {
		t.Fatal("restore left the pipe non-blocking")
	}

	reg, err := os.Create(filepath.Join(t.TempDir(), "file"))
	if err != nil {
		t.Fatal(err)
	}
	regFd, _ := syscall.Dup(int(reg.Fd()))
	reg.Close()
	g, restoreReg := Polled(uintptr(regFd), "file")
	defer g.Close()
	defer restoreReg()
	if nonBlocking(t, regFd) {
		t.Fatal("a regular file was made non-blocking")
	}
}

func nonBlocking(t *testing.T, fd int) bool {
	t.Helper()
	flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFL, 0)
	if errno != 0 {
		t.Fatal(errno)
	}
	return flags&syscall.O_NONBLOCK != 0
}
