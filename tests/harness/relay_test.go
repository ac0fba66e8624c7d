//go:build !js

package harness

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestARelayNeverGetsAnEarlierRelaysPort: the tabs of a binary share a browser profile, which
// keeps an origin's storage, so a relay on a port an earlier relay of the binary listened on
// would show its page the earlier test's files. A relay handed such a port (here forced: the
// kernel hands ports out again at random) is started again on another, with a fresh state
// directory, and serves.
func TestARelayNeverGetsAnEarlierRelaysPort(t *testing.T) {
	earlier := StartRelay(t)
	taken := earlier.Port()
	earlier.stop(t)

	root := RepoRoot()
	r := newRelay(t, nil)
	var ports []string
	var dirs []string
	r.start(t, func(stateDir string) *exec.Cmd {
		port := "0"
		if len(ports) == 0 {
			port = taken // the kernel's repeat, made certain
		}
		ports = append(ports, port)
		dirs = append(dirs, stateDir)
		cmd := exec.Command(filepath.Join(root, "bin", "relay"), "serve", "--public", filepath.Join(root, "public"))
		cmd.Env = append(os.Environ(), "PORT="+port, "VOICEBOX_STATE_DIR="+stateDir)
		return cmd
	}, false)
	if len(ports) < 2 || r.Port() == taken {
		t.Fatalf("the relay listens on %s after %d starts; %s was an earlier relay's", r.Port(), len(ports), taken)
	}
	if dirs[0] == dirs[1] {
		t.Errorf("the second start kept the first's state directory %s", dirs[0])
	}
	resp, err := http.Get(r.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("the relay started again answers %s", resp.Status)
	}

	// A test that chose its port (to restart a relay on it) keeps it.
	port := r.Port()
	r.stop(t)
	if again := StartRelay(t, "PORT="+port); again.Port() != port {
		t.Errorf("a relay started with PORT=%s listens on %s", port, again.Port())
	}
}
