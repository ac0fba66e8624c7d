//go:build !js

package harness

import (
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestAFleetStopsWhatItStarted: a fleet of two relays on a port each held for the test, the page
// in Go on B. Relay A restarted comes back on its port with its state directory as a new process,
// and routes to the page on B again; B is then paused (SIGSTOP) and left so. When the test ends,
// every relay process the fleet started is gone (the paused one let run first, or its SIGTERM
// would wait for ever and the harness say so) and its NATS server takes no more connections.
func TestAFleetStopsWhatItStarted(t *testing.T) {
	var pids []int
	var natsAddr string
	t.Run("fleet", func(t *testing.T) {
		f := StartFleet(t, FleetOptions{Prefix: "harness", Named: true, Restartable: true})
		a, b := f.Relays[0], f.Relays[1]
		natsAddr = strings.TrimPrefix(f.NATS.URL(), "nats://")
		f.GoPage(b)
		pids = append(pids, a.PID(), b.PID())

		again := f.Restart(0)
		if again == a || again != f.Relays[0] || again.PID() == a.PID() {
			t.Fatalf("the restarted relay is process %d, in Relays as %d; it was %d", again.PID(), f.Relays[0].PID(), a.PID())
		}
		if again.Port() != a.Port() || again.StateDir != a.StateDir {
			t.Fatalf("relay A came back on %s with %s; it was on %s with %s", again.Port(), again.StateDir, a.Port(), a.StateDir)
		}
		pids = append(pids, again.PID())
		f.WaitRouted(b)
		b.Pause(t)
	})
	if t.Failed() {
		return
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("relay process %d outlived its test (signal 0: %v)", pid, err)
		}
	}
	if c, err := net.DialTimeout("tcp", natsAddr, time.Second); err == nil {
		c.Close()
		t.Errorf("the fleet's NATS at %s still takes connections after its test", natsAddr)
	}
}
