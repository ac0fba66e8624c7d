//go:build !js

package hostile

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// TestAFifoInTheWorkspaceIsRefusedByName: a FIFO planted in a machine's folder is refused
// not-a-regular-file (it was exec-threw), at once, and the next read is served.
func TestAFifoInTheWorkspaceIsRefusedByName(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("notes"), 0o644)
	harness.StartMachine(t, relay, "box", dir)
	waitFor(t, "the machine to hold the root", func() bool { return rootKind(t, relay) == "machine" })
	if a := relay.Call(t, "read-file", map[string]string{"path": "pipe"}); a.OK || a.Refused != "not-a-regular-file" {
		t.Fatalf("reading the FIFO answered %s", a.Raw)
	}
	if a := relay.Call(t, "read-file", map[string]string{"path": "notes.txt"}); !a.OK {
		t.Fatalf("the next read answered %s", a.Raw)
	}
	served(t, relay)
}

// TestTheJSONDoorRefusesOtherCharsets: a JSON body declared in another charset is refused
// unsupported-content-type before it is read.
func TestTheJSONDoorRefusesOtherCharsets(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	for _, ctype := range []string{"application/json; charset=utf-16", "application/json; charset=iso-8859-1"} {
		r := send(t, nil, http.MethodPost, relay.URL+"/api/extensions/sideload", map[string]string{"Content-Type": ctype}, `{"id":"x"}`)
		if !r.refused(http.StatusUnsupportedMediaType, "unsupported-content-type") {
			t.Errorf("%s answered %d %s", ctype, r.status, r.body)
		}
	}
	served(t, relay)
}

// TestARefusedDescriptorIsNotStaged: a descriptor the gate refuses is answered with the gate's
// rule and is not listed as pending, as if a person could still admit it.
func TestARefusedDescriptorIsNotStaged(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	for rule, d := range map[string]string{
		"exec-absent":       `{"id":"shell","name":"Shell","capabilities":["exec"],"tools":[{"name":"sh","primitive":"now"}]}`,
		"under-declared":    `{"id":"writer","name":"W","capabilities":["read"],"tools":[{"name":"w","primitive":"write-file"}]}`,
		"network-unbounded": `{"id":"net","name":"N","capabilities":["network"],"tools":[{"name":"g","primitive":"http-get","url":"http://x/"}]}`,
	} {
		if r := postJSON(t, relay, "/api/extensions/sideload", json.RawMessage(d), false); !r.refused(http.StatusBadRequest, rule) {
			t.Errorf("a descriptor refused %s answered %d %s", rule, r.status, r.body)
		}
	}
	r := send(t, nil, http.MethodGet, relay.URL+"/api/extensions", nil, "")
	for _, id := range []string{`"shell"`, `"writer"`, `"net"`} {
		if strings.Contains(r.body, id) {
			t.Errorf("the refused %s is listed: %s", id, r.body)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(relay.StateDir, "proposals")); len(entries) != 0 {
		t.Errorf("refused descriptors were staged: %v", entries)
	}
	served(t, relay)
}
