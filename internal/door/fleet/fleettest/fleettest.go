// Package fleettest runs a NATS server with JetStream for the fleet's tests: the nats-server
// program, as its own process, in the test's temporary folder. Only tests import it, and neither
// the relay nor this module carries a NATS server: the program is built from the tests module,
// whose go.mod alone requires it (build.sh builds it into .cache/bin; a test that finds none there
// builds it once).
package fleettest

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/core/server"
)

// readyBound bounds how long a server may take to accept connections, and to stop.
const readyBound = 10 * time.Second

// ServerEnv names the nats-server program to run, when it is not the checkout's
// .cache/bin/nats-server.
const ServerEnv = "VOICEBOX_NATS_SERVER"

// Server is a NATS server that can be stopped and started again on the same port with the same
// JetStream store, as a restarted NATS would be.
type Server struct {
	t    testing.TB
	bin  string
	dir  string
	port int
	cmd  *exec.Cmd
	done chan struct{}

	// A node of a cluster (StartCluster): its name, its cluster port and the others'.
	name        string
	clusterPort int
	routes      []int
}

// Start starts a server on a free loopback port with JetStream in t.TempDir(); it stops when the
// test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{t: t, bin: program(t), dir: t.TempDir(), port: freePort(t)}
	s.Restart()
	t.Cleanup(s.Stop)
	return s
}

// StartCluster starts n servers as one NATS cluster with JetStream, each on free loopback ports
// with its store in t.TempDir() (the JetStream meta group begins once a majority has met); they
// stop when the test ends.
func StartCluster(t testing.TB, n int) []*Server {
	t.Helper()
	nodes := make([]*Server, n)
	for i := range nodes {
		nodes[i] = &Server{t: t, bin: program(t), dir: t.TempDir(), port: freePort(t), name: "n" + strconv.Itoa(i), clusterPort: freePort(t)}
	}
	for i, s := range nodes {
		for j, o := range nodes {
			if i != j {
				s.routes = append(s.routes, o.clusterPort)
			}
		}
	}
	for _, s := range nodes {
		s.Restart()
		t.Cleanup(s.Stop)
	}
	return nodes
}

// freePort returns a loopback port nobody listens on now. Its listener lets go of the port as a
// relay's does (server.ReleaseOnClose), so a program this process forks meanwhile does not keep
// it listening until its exec, in the way of the server given the port.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer server.ReleaseOnClose(l).Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Name is the server's name in its cluster ("" for a server of its own).
func (s *Server) Name() string { return s.name }

// Kill ends the server with SIGKILL, as a node that crashes (a no-op when it is down): no
// leadership is handed over.
func (s *Server) Kill() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

// URL is the server's client URL.
func (s *Server) URL() string { return "nats://127.0.0.1:" + strconv.Itoa(s.port) }

// Stop shuts the server down (a no-op when it is down).
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(readyBound):
		s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd = nil
}

// RestartEmpty starts the server again on its port with an empty JetStream store, as a NATS
// that keeps nothing on disk comes back.
func (s *Server) RestartEmpty() {
	s.t.Helper()
	s.Stop()
	s.dir = s.t.TempDir()
	s.Restart()
}

// Restart starts the server again on its port, with the JetStream store it had.
func (s *Server) Restart() {
	s.t.Helper()
	args := []string{"-a", "127.0.0.1", "-p", strconv.Itoa(s.port), "-js", "-sd", s.dir}
	if s.clusterPort != 0 {
		routes := make([]string, len(s.routes))
		for i, p := range s.routes {
			routes[i] = "nats-route://127.0.0.1:" + strconv.Itoa(p)
		}
		args = append(args, "-n", s.name, "--cluster_name", "fleettest", "--cluster", "nats://127.0.0.1:"+strconv.Itoa(s.clusterPort),
			"--routes", strings.Join(routes, ","))
	}
	cmd := exec.Command(s.bin, args...)
	dieWithTest(cmd)
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("nats-server: %v", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	s.cmd, s.done = cmd, done
	deadline := time.Now().Add(readyBound)
	for {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(s.port), time.Second)
		if err == nil {
			c.Close()
			return
		}
		select {
		case <-done:
			s.t.Fatalf("nats-server exited before it took connections (port %d)", s.port)
		default:
		}
		if time.Now().After(deadline) {
			s.t.Fatal("the NATS server did not become ready")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var (
	buildOnce sync.Once
	built     string
	buildErr  error
)

// program returns the nats-server to run: $VOICEBOX_NATS_SERVER, else the checkout's
// .cache/bin/nats-server, built from the tests module when it is not there yet.
func program(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(ServerEnv); p != "" {
		return p
	}
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("fleettest: cannot find its own source file")
	}
	root := filepath.Join(filepath.Dir(file), "..", "..", "..", "..") // fleettest, fleet, door, internal
	bin := filepath.Join(root, ".cache", "bin", "nats-server")
	buildOnce.Do(func() {
		if _, err := os.Stat(bin); err == nil {
			built = bin
			return
		}
		// Built to a name of its own, then renamed: test binaries of other packages may build
		// it at the same time.
		if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
			buildErr = err
			return
		}
		tmp := bin + "." + strconv.Itoa(os.Getpid())
		out, err := exec.Command("go", "-C", filepath.Join(root, "tests"), "build", "-o", tmp, "github.com/nats-io/nats-server/v2").CombinedOutput()
		if err != nil {
			buildErr = errors.New(string(out) + err.Error())
			return
		}
		buildErr, built = os.Rename(tmp, bin), bin
	})
	if buildErr != nil {
		t.Fatalf("fleettest: no nats-server (set %s, or let the tests module build it): %v", ServerEnv, buildErr)
	}
	return built
}
