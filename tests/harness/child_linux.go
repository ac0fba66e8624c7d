//go:build linux

package harness

import (
	"os/exec"
	"syscall"
)

// DieWithTest makes cmd's process die (SIGKILL) when the test binary that starts it dies, however
// it dies: a test killed by `go test`'s -timeout, a kill -9, a panic. Without it a relay or a
// `relay env` outlives its test binary and holds its port and its folder for ever.
//
// Linux sends the signal when the thread that started the child exits, not the process. Go's
// threads live as long as the process, except one a goroutine locked (runtime.LockOSThread)
// and ended without unlocking, which the runtime ends with it; the harness starts every child
// from an ordinary goroutine that holds no lock, so a test calling it from such a goroutine is
// the one case where a child would be killed early, and no test here does.
func DieWithTest(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
