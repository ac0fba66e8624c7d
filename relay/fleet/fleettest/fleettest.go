// Package fleettest starts an embedded NATS server with JetStream for the fleet's tests, in the
// test's own process and temporary folder. Only tests import it: the relay's binary never
// carries a NATS server.
package fleettest

import (
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// readyBound bounds how long a server may take to accept connections.
const readyBound = 10 * time.Second

// Server is an embedded NATS server that can be stopped and started again on the same port with
// the same JetStream store, as a restarted NATS would be.
type Server struct {
	t    testing.TB
	dir  string
	port int
	srv  *server.Server
}

// Start starts a server on a free loopback port with JetStream in t.TempDir(); it stops when the
// test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	s := &Server{t: t, dir: t.TempDir(), port: port}
	s.Restart()
	t.Cleanup(s.Stop)
	return s
}

// URL is the server's client URL.
func (s *Server) URL() string { return "nats://127.0.0.1:" + strconv.Itoa(s.port) }

// Stop shuts the server down (a no-op when it is down).
func (s *Server) Stop() {
	if s.srv != nil {
		s.srv.Shutdown()
		s.srv.WaitForShutdown()
		s.srv = nil
	}
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
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: s.port, JetStream: true, StoreDir: s.dir, NoLog: true, NoSigs: true})
	if err != nil {
		s.t.Fatal(err)
	}
	srv.Start()
	if !srv.ReadyForConnections(readyBound) {
		s.t.Fatal("the embedded NATS server did not become ready")
	}
	s.srv = srv
}
