package core_test

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/core"
	"github.com/voicebox-go/voicebox/internal/core/porttest"
)

// TestAStoppedCoreLetsGoOfItsPort: once Serve returns, a relay started again binds the same
// address at once, though another descriptor of the listening socket is still open, as one is in
// a process forked from this one until that process's exec (a test binary running many relays
// beside programs it starts met "address already in use" so). The second descriptor here is a
// dup of the first, which is what a fork copies.
func TestAStoppedCoreLetsGoOfItsPort(t *testing.T) {
	t.Parallel()
	port, err := porttest.Restartable()
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	other, err := ln.(*net.TCPListener).File()
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	defer other.Close()
	public := t.TempDir()
	os.WriteFile(filepath.Join(public, "index.html"), []byte("<!doctype html>"), 0o644)
	c, err := core.New(core.Config{Listener: ln, StateDir: filepath.Join(t.TempDir(), "state"), Public: public})
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- c.Serve(ctx) }()
	resp, err := http.Get(c.URL() + "/api/ready")
	if err != nil {
		cancel()
		<-served
		t.Fatal(err)
	}
	resp.Body.Close()
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve after the shutdown: %v", err)
		}
	case <-time.After(patience):
		t.Fatal("Serve did not return after its context ended")
	}
	again, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("a relay started again on the address of one stopped: %v", err)
	}
	again.Close()
}
