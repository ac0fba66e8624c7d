//go:build linux

package hostile

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// stateDiskSize is the small disk the full-disk case gives the relay's state directory: room for
// its files and two catalogue extensions, filled before the attack.
const stateDiskSize = "512k"

// smallStateDisk mounts a tmpfs of stateDiskSize as a new state directory and unmounts it when
// the case ends (after the relays on it have stopped: cleanups run last first). A real full disk
// needs root to mount, as CI runs; elsewhere the case is skipped and says why.
func smallStateDisk(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+stateDiskSize+",mode=0700"); err != nil {
		t.Skipf("the full state disk is a real tmpfs, and mounting one needs root: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// fillDisk writes a file in dir until the disk refuses (ENOSPC), bounded by the disk's size, and
// returns a func that frees the space.
func fillDisk(t *testing.T, dir string) (free func()) {
	t.Helper()
	p := filepath.Join(dir, "filler")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	page := make([]byte, 4096)
	for i := 0; ; i++ {
		if i > 1<<12 { // 16 MiB: far past stateDiskSize
			t.Fatal("the state disk never filled")
		}
		if _, err := f.Write(page); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return func() { os.Remove(p) }
		}
	}
}

// padLedger appends whole, ignored lines (denials of no extension) to the ledger until it ends
// short bytes before the end of a 4 KiB page: the next line then crosses into a page a full
// disk cannot give, so its first short bytes land and the rest is refused, as in the report.
func padLedger(t *testing.T, ledger string, short int64) {
	t.Helper()
	st, err := os.Stat(ledger)
	if err != nil {
		t.Fatal(err)
	}
	need := (4096 - short - st.Size()%4096 + 4096) % 4096
	const frame = `{"action":"deny","id":"padding","by":""}` + "\n"
	if need < int64(len(frame)) {
		need += 4096
	}
	line := `{"action":"deny","id":"padding","by":"` + strings.Repeat("x", int(need)-len(frame)) + `"}` + "\n"
	f, err := os.OpenFile(ledger, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(line); err != nil {
		t.Fatal(err)
	}
}

// admittedIDs lists the ids of the extensions relay runs now (the WASM shelf's left out).
func admittedIDs(t *testing.T, relay *harness.Relay) []string {
	t.Helper()
	r := send(t, nil, http.MethodGet, relay.URL+"/api/extensions", map[string]string{"X-Voicebox-Host-Token": relay.HostToken(t)}, "")
	var l struct {
		Extensions struct {
			Admitted []struct{ ID string } `json:"admitted"`
		} `json:"extensions"`
	}
	if err := json.Unmarshal([]byte(r.body), &l); err != nil || r.status != http.StatusOK {
		t.Fatalf("GET /api/extensions answered %d %s", r.status, r.body)
	}
	var ids []string
	for _, e := range l.Extensions.Admitted {
		if !strings.HasPrefix(e.ID, "wasm-shelf") {
			ids = append(ids, e.ID)
		}
	}
	slices.Sort(ids)
	return ids
}

// wholeLedger fails the case unless every line of the ledger is whole JSON ended by a newline.
func wholeLedger(t *testing.T, ledger string) {
	t.Helper()
	b, err := os.ReadFile(ledger)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		t.Fatalf("the ledger ends with a torn line: %q", b[max(len(b)-60, 0):])
	}
	for line := range bytes.Lines(b) {
		if !json.Valid(line) {
			t.Fatalf("the ledger holds a line that does not parse: %q", line)
		}
	}
}

// TestAFullStateDiskLosesNoRevocation: on a full state disk (a real tmpfs) an admission and a
// revocation (and a pairing, an MCP client's bearer, a vendor key: the state files written whole)
// are refused 507 state-disk-full, not 500 internal-error, and change nothing: the
// ledger keeps only whole lines (the revocation's line, cut off part way by the disk, is cut
// back). Once there is space the same revocation and admission are served, and hold across a
// restart: the revoked extension is never admitted again, as it was when its line was glued
// onto the torn one and skipped on read.
func TestAFullStateDiskLosesNoRevocation(t *testing.T) {
	t.Parallel()
	dir := smallStateDisk(t)
	relay := harness.StartRelay(t, "VOICEBOX_STATE_DIR="+dir)
	for _, id := range []string{"notes-reader", "text-tools"} {
		if r := postJSON(t, relay, "/api/extensions/stage-catalogue", map[string]string{"id": id}, false); r.status != http.StatusOK {
			t.Fatalf("stage %s: %d %s", id, r.status, r.body)
		}
	}
	admit := map[string]any{"id": "notes-reader", "decision": "admit", "confirm": true}
	if r := postJSON(t, relay, "/api/extensions/admit", admit, true); r.status != http.StatusOK {
		t.Fatalf("admit: %d %s", r.status, r.body)
	}
	ledger := filepath.Join(dir, ".ledger.jsonl")
	padLedger(t, ledger, 20)
	free := fillDisk(t, dir)

	admitText := map[string]any{"id": "text-tools", "decision": "admit", "confirm": true}
	if r := postJSON(t, relay, "/api/extensions/admit", admitText, true); !r.refused(http.StatusInsufficientStorage, "state-disk-full") {
		t.Fatalf("an admission on a full state disk answered %d %s; want 507 state-disk-full", r.status, r.body)
	}
	revoke := map[string]string{"id": "notes-reader"}
	if r := postJSON(t, relay, "/api/extensions/revoke", revoke, false); !r.refused(http.StatusInsufficientStorage, "state-disk-full") {
		t.Fatalf("a revocation on a full state disk answered %d %s; want 507 state-disk-full", r.status, r.body)
	}
	wholeLedger(t, ledger)
	if ids := admittedIDs(t, relay); !slices.Equal(ids, []string{"notes-reader"}) {
		t.Fatalf("after the refusals the relay runs %v; want notes-reader alone, as before", ids)
	}
	// The state files the relay writes whole are refused the same way.
	token := map[string]string{"X-Voicebox-Host-Token": relay.HostToken(t)}
	for _, w := range []struct{ method, path, body string }{
		{http.MethodPost, "/api/pair", `{"name":"box"}`},
		{http.MethodPost, "/api/mcp/clients", `{"name":"agent"}`},
		{http.MethodPut, "/api/keys", `{"provider":"gemini","key":"not-a-real-key-0123"}`},
	} {
		if r := send(t, nil, w.method, relay.URL+w.path, token, w.body); !r.refused(http.StatusInsufficientStorage, "state-disk-full") {
			t.Fatalf("%s %s on a full state disk answered %d %s; want 507 state-disk-full", w.method, w.path, r.status, r.body)
		}
	}
	if leftovers, _ := filepath.Glob(filepath.Join(dir, ".vbx-*")); len(leftovers) != 0 {
		t.Fatalf("refused writes left temporary files: %v", leftovers)
	}

	free()
	if r := postJSON(t, relay, "/api/extensions/revoke", revoke, false); r.status != http.StatusOK || r.m["revoked"] != true {
		t.Fatalf("the revocation with space again: %d %s", r.status, r.body)
	}
	if r := postJSON(t, relay, "/api/extensions/admit", admitText, true); r.status != http.StatusOK {
		t.Fatalf("the admission with space again: %d %s", r.status, r.body)
	}
	if r := send(t, nil, http.MethodPost, relay.URL+"/api/pair", token, `{"name":"box"}`); r.status != http.StatusOK || r.m["bearer"] == nil {
		t.Fatalf("a pairing with space again: %d %s", r.status, r.body)
	}
	wholeLedger(t, ledger)
	if ids := admittedIDs(t, relay); !slices.Equal(ids, []string{"text-tools"}) {
		t.Fatalf("after the revocation the relay runs %v; want text-tools alone", ids)
	}
	relay.Stop(t)
	again := harness.StartRelay(t, "VOICEBOX_STATE_DIR="+dir)
	if ids := admittedIDs(t, again); !slices.Equal(ids, []string{"text-tools"}) {
		t.Fatalf("after a restart the relay runs %v; want text-tools alone", ids)
	}
	served(t, again)
}
