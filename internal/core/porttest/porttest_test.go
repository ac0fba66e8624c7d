package porttest

import (
	"net"
	"os/exec"
	"strconv"
	"sync"
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

// TestAPortIsFreeWhileThisProcessForks: the port Restartable returns can be listened on at once
// while other goroutines of the process start programs. A fork holds a copy of every descriptor
// of this process until its exec, close-on-exec or not, the check's listener among them; closed
// only here, that listener would go on listening there.
func TestAPortIsFreeWhileThisProcessForks(t *testing.T) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
					exec.Command("true").Run()
				}
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	const ports = 300
	refused := 0
	for range ports {
		port, err := Restartable()
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			refused++
			continue
		}
		ln.Close()
	}
	if refused > 0 {
		t.Errorf("%d of %d ports Restartable returned could not be listened on", refused, ports)
	}
}
