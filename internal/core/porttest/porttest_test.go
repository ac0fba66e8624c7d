package porttest

import (
	"os/exec"
	"testing"
)

// TestAHeldPortIsNotGivenAgain: a port Restartable returned is held: neither this process nor
// another (flock, a child process here) can take it again while this one runs.
func TestAHeldPortIsNotGivenAgain(t *testing.T) {
	port, err := Restartable()
	if err != nil {
		t.Fatal(err)
	}
	if port < 20000 || port >= 32000 {
		t.Fatalf("port %d is not below the ephemeral range", port)
	}
	if hold(port) {
		t.Fatalf("port %d was taken again by the process holding it", port)
	}
	// flock(1) in another process: the lock is on the same file, held by this one.
	out, err := exec.Command("flock", "--nonblock", "--exclusive", lockFile(port), "true").CombinedOutput()
	if err == nil {
		t.Fatalf("another process took port %d's lock while this one held it (%s)", port, out)
	}
	second, err := Restartable()
	if err != nil || second == port {
		t.Fatalf("a second port: %d, %v (the first %d)", second, err, port)
	}
}
