//go:build !linux && !js

package harness

import "os/exec"

// DieWithTest does nothing here: only Linux can tie a child's life to its parent's
// (Pdeathsig). A test binary killed on another system leaves the relays it started running.
func DieWithTest(cmd *exec.Cmd) {}
