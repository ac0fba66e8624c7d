// Package porttest hands tests ports a relay can stop on and start again on: below the kernel's
// ephemeral range (so no outgoing connection is given one), and held across every test process
// of the project's at once (so no other test binary gives a freed one to its own relay).
package porttest

import (
	"fmt"
	mathrand "math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"

	"github.com/voicebox-go/voicebox/internal/core/server"
)

// Restartable returns a free port of 20000-31999 that this process holds until it exits: an
// exclusive lock on a file named for it in the system's temporary folder, which every caller
// takes first. A port its relay freed to start again on is then never handed out meanwhile.
func Restartable() (int, error) {
	for range 200 {
		port := 20000 + mathrand.IntN(12000)
		if !hold(port) {
			continue
		}
		// The check's listener lets go of the port as a relay's does (server.ReleaseOnClose): a
		// plain Close would leave it listening in any child this process forks meanwhile, until
		// that child's exec, and the caller's relay could not bind the port.
		if ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
			server.ReleaseOnClose(ln).Close()
			return port, nil
		}
	}
	return 0, fmt.Errorf("porttest: no free port below the ephemeral range")
}

// hold takes port for this process, or reports that another holds it.
func hold(port int) bool {
	name := lockFile(port)
	if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
		return false
	}
	f, err := os.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return false
	}
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		f.Close()
		return false
	}
	held.Lock()
	held.files = append(held.files, f) // open, so locked, until the process exits
	held.Unlock()
	return true
}

// lockFile is the file whose lock holds port.
func lockFile(port int) string {
	return filepath.Join(os.TempDir(), "voicebox-restartable-ports", strconv.Itoa(port))
}

// held are the lock files of the ports this process took.
var held struct {
	sync.Mutex
	files []*os.File
}
