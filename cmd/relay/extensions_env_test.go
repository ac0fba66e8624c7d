package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// postJSON posts body to url+path (with the host token when token is not "") and decodes the
// answer, whatever its status.
func postJSON(t *testing.T, url, path, token, body string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+path, bytes.NewReader([]byte(body)))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("X-Voicebox-Host-Token", token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("POST %s answered %d %q", path, resp.StatusCode, raw)
	}
	return m
}

// admitCatalogue stages a catalogue entry and admits it with the host token.
func admitCatalogue(t *testing.T, url, token, id string) {
	t.Helper()
	if m := postJSON(t, url, "/api/extensions/stage-catalogue", "", `{"id":"`+id+`"}`); m["ok"] != true {
		t.Fatalf("stage %s: %v", id, m)
	}
	if m := postJSON(t, url, "/api/extensions/admit", token, `{"id":"`+id+`","decision":"admit","confirm":true}`); m["ok"] != true {
		t.Fatalf("admit %s: %v", id, m)
	}
}

// attributed sends a call with the given attribution straight to the root's executor, past the
// relay's own checks, so that the answer is the executor's verdict.
func attributed(t *testing.T, url, token, tool, descriptor, bounds, args string) map[string]any {
	t.Helper()
	return postJSON(t, url, "/api/root/call", token, fmt.Sprintf(`{"tool":%q,"descriptorId":%q,"boundsEcho":%s,"args":%s}`, tool, descriptor, bounds, args))
}

func extensionCall(t *testing.T, url, token, ext, tool, args string) map[string]any {
	t.Helper()
	return postJSON(t, url, "/api/extensions/call", token, fmt.Sprintf(`{"extension":%q,"tool":%q,"args":%s}`, ext, tool, args))
}

// TestExtensionCallsOnAMachineEnvironment: a paired machine gets the admitted set from the relay,
// runs an admitted extension's file tool on its directory, refuses changed bounds and other
// primitives itself, and refuses the descriptor once it is revoked; after the relay restarts on
// its address, the machine gets the set again from the ledger.
func TestExtensionCallsOnAMachineEnvironment(t *testing.T) {
	t.Parallel()
	stateDir := filepath.Join(t.TempDir(), "state")
	public := t.TempDir()
	bearerFile := pairBearerFile(t, stateDir, "box")
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "notes"), 0o755)
	os.WriteFile(filepath.Join(root, "notes", "todo.md"), []byte("water the plants"), 0o644)

	url, stopFirst := startServeStoppable(t, stateDir, public, restartableAddr(t))
	token := hostToken(t, stateDir)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go envUntil(ctx, []string{"--relay", url, "--bearer-file", bearerFile, "--root", root}, io.Discard, io.Discard, nil)
	waitMachine(t, url)

	read := `{"path":"notes/todo.md"}`
	if m := attributed(t, url, token, "read-file", "notes-reader", `{}`, read); m["refused"] != "unattributed-call" {
		t.Fatalf("before admission the machine answered %v", m)
	}
	admitCatalogue(t, url, token, "notes-reader")
	if m := extensionCall(t, url, token, "notes-reader", "read_note", read); m["ok"] != true || !strings.Contains(fmt.Sprint(m["observed"]), "water the plants") {
		t.Fatalf("the admitted tool: %v", m)
	}
	if m := attributed(t, url, token, "read-file", "notes-reader", `{"maxBytes":1}`, read); m["refused"] != "bounds-mismatch" {
		t.Fatalf("changed bounds: %v", m)
	}
	if m := attributed(t, url, token, "write-file", "notes-reader", `{}`, `{"path":"notes/todo.md","content":"gone"}`); m["refused"] != "under-declared" {
		t.Fatalf("a write under a read-only descriptor: %v", m)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "notes", "todo.md")); string(b) != "water the plants" {
		t.Fatalf("the file now holds %q", b)
	}

	addr := strings.TrimPrefix(url, "http://")
	stopFirst()
	url2, _ := startServeStoppable(t, stateDir, public, addr)
	waitMachine(t, url2)
	if m := extensionCall(t, url2, token, "notes-reader", "read_note", read); m["ok"] != true {
		t.Fatalf("after the relay restarted: %v", m)
	}
	if m := postJSON(t, url2, "/api/extensions/revoke", "", `{"id":"notes-reader"}`); m["ok"] != true {
		t.Fatalf("revoke: %v", m)
	}
	if m := attributed(t, url2, token, "read-file", "notes-reader", `{}`, read); m["refused"] != "unattributed-call" {
		t.Fatalf("after revocation the machine answered %v", m)
	}
	if m := extensionCall(t, url2, token, "notes-reader", "read_note", read); m["refused"] != "not-admitted" {
		t.Fatalf("after revocation the relay answered %v", m)
	}
}

// TestRestartLoadsOnlyLedgerBackedDescriptors: a relay started again on the same state directory
// runs what the ledger admitted (a wasm tool included), and reports, never runs, a file dropped in
// by hand, a corrupt file and an admitted file edited since.
func TestRestartLoadsOnlyLedgerBackedDescriptors(t *testing.T) {
	t.Parallel()
	stateDir := filepath.Join(t.TempDir(), "state")
	public := t.TempDir()
	url, stop := startServeStoppable(t, stateDir, public, restartableAddr(t))
	token := hostToken(t, stateDir)
	admitCatalogue(t, url, token, "text-tools")
	admitCatalogue(t, url, token, "web-search")
	stop()

	os.WriteFile(filepath.Join(stateDir, "sneaky.json"), []byte(`{"id":"sneaky","name":"S","capabilities":["clock"],"tools":[{"name":"t","primitive":"now"}]}`), 0o600)
	os.WriteFile(filepath.Join(stateDir, "broken.json"), []byte(`{"id":`), 0o600)
	web, _ := os.ReadFile(filepath.Join(stateDir, "web-search.json"))
	os.WriteFile(filepath.Join(stateDir, "web-search.json"), bytes.Replace(web, []byte(`"maxRequests":20`), []byte(`"maxRequests":999`), 1), 0o600)

	url2, _ := startServeStoppable(t, stateDir, public, restartableAddr(t))
	resp, err := http.Get(url2 + "/api/extensions")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var listing struct {
		Extensions struct {
			Admitted []struct {
				ID string `json:"id"`
			} `json:"admitted"`
			PresentNotAdmitted []struct {
				ID      string `json:"id"`
				Refused string `json:"refused"`
			} `json:"presentNotAdmitted"`
		} `json:"extensions"`
	}
	json.NewDecoder(resp.Body).Decode(&listing)
	if a := listing.Extensions.Admitted; len(a) != 1 || a[0].ID != "text-tools" {
		t.Fatalf("admitted after the restart: %+v", a)
	}
	problems := map[string]string{}
	for _, p := range listing.Extensions.PresentNotAdmitted {
		problems[p.ID] = p.Refused
	}
	if problems["sneaky"] != "present-not-admitted" || problems["broken"] != "bad-descriptor" || problems["web-search"] != "present-not-admitted" {
		t.Fatalf("reported: %v", problems)
	}
	if m := extensionCall(t, url2, token, "text-tools", "crc32", `{"input":"123456789"}`); fmt.Sprint(m["observed"].(map[string]any)["text"]) != "cbf43926" {
		t.Fatalf("the wasm tool after the restart: %v", m)
	}
	for _, id := range []string{"sneaky", "web-search"} {
		if m := extensionCall(t, url2, token, id, "t", `{}`); m["refused"] != "not-admitted" {
			t.Fatalf("%s ran: %v", id, m)
		}
	}
}

// TestApprovalCodeCommand: `relay approval-code` shows the code the console printed, and
// nothing once it is used.
func TestApprovalCodeCommand(t *testing.T) {
	t.Parallel()
	stateDir := filepath.Join(t.TempDir(), "state")
	url, stdout := startServe(t, stateDir)
	found := make(chan string, 1)
	go func() { // the console is a pipe: it must be read while the relay writes to it
		for {
			line, err := stdout.ReadString('\n')
			if err != nil {
				return
			}
			if m := regexp.MustCompile(`approval code for extension notes-reader: (\d{8})`).FindStringSubmatch(line); m != nil {
				found <- m[1]
			}
		}
	}()
	postJSON(t, url, "/api/extensions/stage-catalogue", "", `{"id":"notes-reader"}`)
	if m := postJSON(t, url, "/api/extensions/approval-request", "", `{"id":"notes-reader"}`); m["ok"] != true {
		t.Fatalf("approval-request: %v", m)
	}
	var code string
	select {
	case code = <-found:
	case <-time.After(20 * time.Second):
		t.Fatal("no code on the console")
	}
	var out, errOut bytes.Buffer
	if rc := run([]string{"approval-code", "--state-dir", stateDir}, &out, &errOut); rc != 0 || !strings.HasPrefix(out.String(), code+"  (extension notes-reader") {
		t.Fatalf("approval-code: exit %d, %q %q", rc, out.String(), errOut.String())
	}
	if m := postJSON(t, url, "/api/extensions/approve", "", `{"id":"notes-reader","code":"`+code+`"}`); m["ok"] != true {
		t.Fatalf("approve: %v", m)
	}
	out.Reset()
	if rc := run([]string{"approval-code", "--state-dir", stateDir}, &out, io.Discard); rc != 1 || out.Len() != 0 {
		t.Fatalf("after use: exit %d, %q", rc, out.String())
	}
}
