//go:build !linux

package fleettest

import "os/exec"

// dieWithTest does nothing where the kernel cannot tie a child to its parent: the server is
// stopped by the test's cleanup.
func dieWithTest(*exec.Cmd) {}
