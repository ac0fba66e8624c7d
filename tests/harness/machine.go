//go:build !js

package harness

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Machine is a paired machine environment (`relay env`) started by StartMachine.
type Machine struct {
	// Root is the directory it executes on.
	Root   string
	cmd    *exec.Cmd
	killed bool

	mu     sync.Mutex
	stderr bytes.Buffer
}

// Stderr returns what the environment has written to its standard error so far.
func (m *Machine) Stderr() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stderr.String()
}

type machineWriter struct{ m *Machine }

func (w machineWriter) Write(p []byte) (int, error) {
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	return w.m.stderr.Write(p)
}

// StartMachine pairs a machine environment named name with relay (`relay pair`) and runs it
// (`relay env`) on root, and stops it (SIGTERM, by its PID) when the test ends. It returns at
// once; the environment connects on its own (GET /api/root then reports kind "machine").
func StartMachine(t testing.TB, relay *Relay, name, root string) *Machine {
	t.Helper()
	bin := filepath.Join(RepoRoot(), "bin", "relay")
	bearer, err := exec.Command(bin, "pair", "--extensions-dir", relay.StateDir, name).Output()
	if err != nil {
		t.Fatalf("harness: relay pair %s: %v", name, err)
	}
	bearerFile := filepath.Join(t.TempDir(), "bearer")
	if err := os.WriteFile(bearerFile, bearer, 0o600); err != nil {
		t.Fatal(err)
	}
	m := &Machine{Root: root}
	m.cmd = exec.Command(bin, "env", "--relay", relay.URL, "--bearer-file", bearerFile, "--root", root)
	m.cmd.Stderr = machineWriter{m}
	DieWithTest(m.cmd)
	if err := m.cmd.Start(); err != nil {
		t.Fatalf("harness: relay env: %v", err)
	}
	t.Cleanup(func() {
		if m.killed {
			return
		}
		m.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { m.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			m.cmd.Process.Kill()
			<-done
			t.Errorf("harness: relay env did not stop within 10s of SIGTERM and was killed")
		}
	})
	return m
}

// Kill ends the environment at once (SIGKILL), as a crash would, and waits for it to be gone.
func (m *Machine) Kill(t testing.TB) {
	t.Helper()
	if m.killed {
		return
	}
	m.killed = true
	m.cmd.Process.Kill()
	m.cmd.Wait()
}

// PID returns the environment process's id.
func (m *Machine) PID() int { return m.cmd.Process.Pid }
