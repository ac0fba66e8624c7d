//go:build !linux

package mcp

import "os"

// Polled is the open file fd as it is: on systems other than Linux the bridge's stdio stays
// blocking (kqueue does not report a pipe's closing to its reader on macOS, Go issue 24164).
func Polled(fd uintptr, name string) (f *os.File, restore func()) {
	return os.NewFile(fd, name), func() {}
}
