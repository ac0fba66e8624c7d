//go:build !js

package hostile

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/voicebox-go/voicebox/internal/shared/wire"
	"github.com/voicebox-go/voicebox/tests/harness"
)

// TestOversizedCallsCostNoOtherCall is review item 5: a 1 MiB POST /api/root/call made a frame
// over the wire's bound, the paired machine dropped its socket, and every call in flight on it
// lost its answer; a call nested deeper than the wire allows was forwarded. Both are refused
// malformed-call before anything is sent, the calls around them are answered, and the machine
// keeps its one connection.
func TestOversizedCallsCostNoOtherCall(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("machine notes"), 0o644)
	machine := harness.StartMachine(t, relay, "box", dir)
	waitFor(t, "the machine to hold the root", func() bool { return rootKind(t, relay) == "machine" })

	prefix := `{"tool":"write-file","args":{"path":"big.txt","content":"`
	huge := prefix + strings.Repeat("a", 1<<20-len(prefix)-3) + `"}}` // the largest body the route reads
	deep := `{"tool":"read-file","args":{"path":"notes.txt","x":` + strings.Repeat("[", wire.MaxDepth) + strings.Repeat("]", wire.MaxDepth) + `}}`
	token := map[string]string{"X-Voicebox-Host-Token": relay.HostToken(t)}

	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for i := range 24 {
		wg.Go(func() {
			switch i % 6 {
			case 0:
				if r := send(t, nil, http.MethodPost, relay.URL+"/api/root/call", token, huge); r.m["refused"] != "malformed-call" || !strings.Contains(r.body, "MaxFrameBytes") {
					errs <- fmt.Sprintf("the 1 MiB call answered %d %.300s", r.status, r.body)
				}
			case 1:
				if r := send(t, nil, http.MethodPost, relay.URL+"/api/root/call", token, deep); r.m["refused"] != "malformed-call" || !strings.Contains(r.body, "MaxDepth") {
					errs <- fmt.Sprintf("the deep call answered %d %s", r.status, r.body)
				}
			default:
				a := relay.Call(t, "read-file", map[string]string{"path": "notes.txt"})
				var read struct{ Content string }
				if !a.OK || json.Unmarshal(a.Observed, &read) != nil || read.Content != "machine notes" {
					errs <- fmt.Sprintf("a call beside the oversized ones answered %s", a.Raw)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if _, err := os.Stat(filepath.Join(dir, "big.txt")); !os.IsNotExist(err) {
		t.Error("the oversized write reached the machine")
	}
	if n := strings.Count(machine.Stderr(), "machine: connected"); n != 1 {
		t.Errorf("the machine connected %d times; its socket was dropped:\n%s", n, machine.Stderr())
	}
	if a := relay.Call(t, "read-file", map[string]string{"path": "notes.txt"}); !a.OK {
		t.Fatalf("the next call answered %s", a.Raw)
	}
	served(t, relay)
}
