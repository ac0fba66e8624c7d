//go:build linux

package fleettest

import (
	"os/exec"
	"syscall"
)

// dieWithTest makes the server die with the test binary that started it, however that ends (a
// -timeout, a kill): otherwise it would hold its port and folder for ever.
func dieWithTest(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
