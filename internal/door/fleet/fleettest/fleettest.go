// Package fleettest runs a NATS server with JetStream for the fleet's tests: the nats-server
// program, as its own process, in the test's temporary folder. Only tests import it, and neither
// the relay nor this module carries a NATS server: the program is built from the tests module,
// whose go.mod alone requires it (build.sh builds it into .cache/bin; a test that finds none there
// builds it once).
package fleettest

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
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

	// A node of a cluster (StartCluster): its name, its cluster port, the ports of its routes to
	// the others (their links), the port it tells the others it has (where nothing listens: the
	// nodes meet by their links alone, never by what they hear of each other), and the links
	// between it and each other node (Cut).
	name        string
	clusterPort int
	routes      []int
	advertise   int
	monitor     int // its HTTP monitoring port (MetaLeader)
	links       map[*Server][]*link
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
// stop when the test ends. Every route between two nodes passes through a link of that pair
// (a TCP relay in the test's process), so a test can cut two nodes apart (Cut) as a network
// partition would, each still running and still serving its clients.
func StartCluster(t testing.TB, n int) []*Server {
	t.Helper()
	nodes := make([]*Server, n)
	for i := range nodes {
		nodes[i] = &Server{t: t, bin: program(t), dir: t.TempDir(), port: freePort(t), name: "n" + strconv.Itoa(i), clusterPort: freePort(t),
			advertise: freePort(t), monitor: freePort(t), links: map[*Server][]*link{}}
	}
	for _, s := range nodes {
		for _, o := range nodes {
			if s != o {
				k := startLink(t, o.clusterPort) // s's route to o
				s.routes = append(s.routes, k.port)
				s.links[o], o.links[s] = append(s.links[o], k), append(o.links[s], k)
			}
		}
	}
	for _, s := range nodes {
		s.Restart()
		t.Cleanup(s.Stop)
	}
	return nodes
}

// MetaLeader is the name of the node that leads the cluster's JetStream meta group as this node
// knows it ("" while it knows none, or cannot be asked), from its monitoring endpoint (/jsz).
func (s *Server) MetaLeader() string {
	c := http.Client{Timeout: readyBound}
	resp, err := c.Get("http://127.0.0.1:" + strconv.Itoa(s.monitor) + "/jsz")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var jsz struct {
		Meta *struct {
			Leader string `json:"leader"`
		} `json:"meta_cluster"`
	}
	if json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&jsz) != nil || jsz.Meta == nil {
		return ""
	}
	return jsz.Meta.Leader
}

// Cut parts s and o for good: the links between them close with their routes, and take no
// more, so neither hears the other again, as across a network partition. Each keeps its
// clients and its routes to the other nodes.
func (s *Server) Cut(o *Server) {
	for _, k := range s.links[o] {
		k.cut()
	}
}

// link is one node's way to another's cluster port: it relays every connection made to its
// port there, until it is cut.
type link struct {
	l     net.Listener
	port  int
	mu    sync.Mutex
	conns []net.Conn // open either side, closed by cut
	done  bool
}

// startLink listens on a free loopback port and relays what it takes to the port to; it is cut
// when the test ends (after the nodes stop: cleanups run last first).
func startLink(t testing.TB, to int) *link {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	k := &link{l: l, port: l.Addr().(*net.TCPAddr).Port}
	t.Cleanup(k.cut)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go k.relay(c, to)
		}
	}()
	return k
}

// relay copies between c and a connection to the port to, both ways, until either ends.
func (k *link) relay(c net.Conn, to int) {
	d, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(to))
	if err != nil {
		c.Close()
		return
	}
	k.mu.Lock()
	if k.done {
		k.mu.Unlock()
		c.Close()
		d.Close()
		return
	}
	k.conns = append(k.conns, c, d)
	k.mu.Unlock()
	go func() { io.Copy(d, c); d.Close(); c.Close() }()
	io.Copy(c, d)
	c.Close()
	d.Close()
}

// cut closes the link's port and every connection through it.
func (k *link) cut() {
	k.l.Close()
	k.mu.Lock()
	defer k.mu.Unlock()
	k.done = true
	for _, c := range k.conns {
		c.Close()
	}
	k.conns = nil
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
			"--routes", strings.Join(routes, ","), "--cluster_advertise", "127.0.0.1:"+strconv.Itoa(s.advertise),
			"-m", strconv.Itoa(s.monitor))
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
