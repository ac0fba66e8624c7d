//go:build !js

package tests

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/tests/harness"
)

var codeLine = regexp.MustCompile(`approval code for extension ([a-z0-9.-]+): (\d{8})`)

// approveInPanel asks for a code for proposal id in the panel, reads it from the relay's console
// as the host would, types it in and waits until the panel lists id as admitted.
func approveInPanel(t *testing.T, tab *harness.Tab, relay *harness.Relay, id string) {
	t.Helper()
	li := `document.querySelector('#ext-pending li[data-id="` + id + `"]')`
	harness.WaitFor[bool](tab, li+` !== null && `+li+`.querySelector('.ext-request') !== null`, readyBound)
	harness.Eval[bool](tab, `(`+li+`.querySelector('.ext-request').click(), true)`)
	var code string
	for code == "" {
		if m := codeLine.FindStringSubmatch(relay.NextLine(t, readyBound)); m != nil && m[1] == id {
			code = m[2]
		}
	}
	harness.WaitFor[bool](tab, `!`+li+`.querySelector('.ext-code').hidden`, readyBound)
	harness.Eval[bool](tab, `(() => {
		const li = `+li+`;
		li.querySelector('.ext-code').value = '`+code+`';
		li.querySelector('.ext-approve-button').click();
		return true;
	})()`)
	harness.WaitFor[bool](tab, `document.querySelector('#ext-admitted li[data-id="`+id+`"] .ext-revoke') !== null`, readyBound)
}

// TestExtensionsPanelProposalToCall drives the panel from a sideloaded proposal to an admitted
// extension whose mediated fetch to a loopback server succeeds.
func TestExtensionsPanelProposalToCall(t *testing.T) {
	t.Parallel()
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"answer":"looked up %s"}`, r.URL.Query().Get("q"))
	}))
	defer upstream.Close()
	host := strings.TrimPrefix(upstream.URL, "http://")
	relay := harness.StartRelay(t)
	desc := `{"id":"lookup","name":"Lookup","description":"Looks a word up.","capabilities":["network"],"bounds":{"hosts":["` + host + `"],"maxRequests":5},"tools":[{"name":"look_up","primitive":"http-get","url":"http://` + host + `/?q={q}","params":{"type":"object","properties":{"q":{"type":"string","minLength":1}},"required":["q"]}}]}`
	post := func(path, token, body string) map[string]any {
		t.Helper()
		return postAPI(t, relay.URL, path, token, body)
	}
	if m := post("/api/extensions/sideload", "", desc); m["ok"] != true {
		t.Fatalf("sideload: %v", m)
	}
	call := `{"extension":"lookup","tool":"look_up","args":{"q":"cats"}}`
	if m := post("/api/extensions/call", relay.HostToken(t), call); m["refused"] != "not-admitted" {
		t.Fatalf("a staged extension ran: %v", m)
	}

	tab := harness.NewTab(t)
	tab.Navigate(relay.URL)
	harness.WaitFor[bool](tab, `document.querySelector('#ext-pending li[data-id="lookup"] .ext-request') !== null &&
		document.querySelector('#ext-catalogue li[data-id="mcp-server-local"]').textContent.includes('exec-absent')`, readyBound)
	plan := harness.Eval[string](tab, `document.querySelector('#ext-pending li[data-id="lookup"] .ext-plan').textContent`)
	if !strings.Contains(plan, host) || !strings.Contains(plan, "mediated-fetch") {
		t.Fatalf("the plan in words does not name the host and its enforcement: %q", plan)
	}
	approveInPanel(t, tab, relay, "lookup")
	tab.Screenshot("extensions-admitted")

	m := post("/api/extensions/call", relay.HostToken(t), call)
	obs, _ := m["observed"].(map[string]any)
	if m["ok"] != true || obs == nil || !strings.Contains(fmt.Sprint(obs["body"]), "looked up cats") || obs["servedBy"] != upstream.URL+"/?q=cats" {
		t.Fatalf("the admitted call: %v", m)
	}

	harness.Eval[bool](tab, `(document.querySelector('#ext-admitted li[data-id="lookup"] .ext-revoke').click(), true)`)
	harness.WaitFor[bool](tab, `document.querySelector('#ext-admitted li[data-id="lookup"]') === null`, readyBound)
	if m := post("/api/extensions/call", relay.HostToken(t), call); m["refused"] != "not-admitted" {
		t.Fatalf("a revoked extension ran: %v", m)
	}

	// The catalogue's WASM text tools, proposed from the panel; a mistyped code keeps the field.
	tab.Allow(`403.*/api/extensions/approve|/api/extensions/approve.*403`)
	harness.Eval[bool](tab, `(document.querySelector('#ext-catalogue li[data-id="text-tools"] .ext-stage').click(), true)`)
	li := `document.querySelector('#ext-pending li[data-id="text-tools"]')`
	harness.WaitFor[bool](tab, li+` !== null && `+li+`.textContent.includes('wasm')`, readyBound)
	harness.Eval[bool](tab, `(`+li+`.querySelector('.ext-request').click(), true)`)
	harness.WaitFor[bool](tab, `!`+li+`.querySelector('.ext-code').hidden`, readyBound)
	var code string
	for code == "" {
		if m := codeLine.FindStringSubmatch(relay.NextLine(t, readyBound)); m != nil && m[1] == "text-tools" {
			code = m[2]
		}
	}
	wrong := "00000000"
	if code == wrong {
		wrong = "00000001"
	}
	harness.Eval[bool](tab, `(() => { const li = `+li+`; li.querySelector('.ext-code').value = '`+wrong+`'; li.querySelector('.ext-approve-button').click(); return true; })()`)
	harness.WaitFor[bool](tab, `document.querySelector('#ext-note').textContent.includes('approval-code-wrong')`, readyBound)
	harness.Eval[bool](tab, `(() => { const li = `+li+`; li.querySelector('.ext-code').value = '`+code+`'; li.querySelector('.ext-approve-button').click(); return true; })()`)
	harness.WaitFor[bool](tab, `document.querySelector('#ext-admitted li[data-id="text-tools"] .ext-revoke') !== null`, readyBound)
	m = post("/api/extensions/call", relay.HostToken(t), `{"extension":"text-tools","tool":"crc32","args":{"input":"123456789"}}`)
	if obs, _ := m["observed"].(map[string]any); m["ok"] != true || obs["text"] != "cbf43926" {
		t.Fatalf("the admitted wasm tool: %v", m)
	}
	// A person calls it from the Assistant panel too, through the same catalogue the model uses.
	if state, result := typed(t, tab, `call crc32 {"input":"123456789"}`); state != "ok" || !strings.Contains(result, "cbf43926") {
		t.Fatalf("call crc32 typed in the Assistant panel: %s %q", state, result)
	}
}

// TestAdmittedExtensionRunsOnThePagesRoot: the relay sends the admitted set to the page's worker,
// whose door verifies extension calls against it. An admitted read-file tool reads the page's
// OPFS; a call that echoes other bounds, or uses a primitive the descriptor was not admitted with,
// is refused by the page itself; after a revocation the page refuses the descriptor.
func TestAdmittedExtensionRunsOnThePagesRoot(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	openExecutor(t, relay)
	token := relay.HostToken(t)
	content := "eggs, flour, milk"
	if a := relay.Call(t, "write-file", map[string]string{"path": "notes/shopping.md", "content": content}); !a.OK {
		t.Fatalf("write-file answered %s", a.Raw)
	}
	// Straight to the page's door, past the relay's own checks: the answer is the page's verdict.
	direct := func(tool, bounds, args string) map[string]any {
		t.Helper()
		return postAPI(t, relay.URL, "/api/root/call", token, `{"tool":"`+tool+`","descriptorId":"notes-reader","boundsEcho":`+bounds+`,"args":`+args+`}`)
	}
	read := `{"path":"notes/shopping.md"}`
	if m := direct("read-file", `{}`, read); m["refused"] != "unattributed-call" {
		t.Fatalf("before admission the page answered %v", m)
	}
	if m := postAPI(t, relay.URL, "/api/extensions/stage-catalogue", "", `{"id":"notes-reader"}`); m["ok"] != true {
		t.Fatalf("stage: %v", m)
	}
	if m := postAPI(t, relay.URL, "/api/extensions/admit", token, `{"id":"notes-reader","decision":"admit","confirm":true}`); m["ok"] != true {
		t.Fatalf("admit: %v", m)
	}
	m := postAPI(t, relay.URL, "/api/extensions/call", token, `{"extension":"notes-reader","tool":"read_note","args":`+read+`}`)
	if obs, _ := m["observed"].(map[string]any); m["ok"] != true || obs["content"] != content {
		t.Fatalf("the notes reader through the relay: %v", m)
	}
	if m := direct("read-file", `{"maxBytes":1}`, read); m["refused"] != "bounds-mismatch" {
		t.Fatalf("other bounds: the page answered %v", m)
	}
	if m := direct("write-file", `{}`, `{"path":"notes/shopping.md","content":"nothing"}`); m["refused"] != "under-declared" {
		t.Fatalf("a write under a read-only descriptor: the page answered %v", m)
	}
	if m := direct("read-file", `{}`, read); m["ok"] != true {
		t.Fatalf("the page's door refused the admitted descriptor: %v", m)
	}
	if m := postAPI(t, relay.URL, "/api/extensions/revoke", "", `{"id":"notes-reader"}`); m["ok"] != true {
		t.Fatalf("revoke: %v", m)
	}
	if m := direct("read-file", `{}`, read); m["refused"] != "unattributed-call" {
		t.Fatalf("after revocation the page answered %v", m)
	}
	if a := relay.Call(t, "read-file", map[string]string{"path": "notes/shopping.md"}); !a.OK {
		t.Fatalf("the built-in tools stopped working: %s", a.Raw)
	}
}

// TestADroppedDescriptorIsAdmittedFromThePanel: a descriptor put straight into the state
// directory shows in the panel as present but not admitted, and a person admits it where it lies
// with a console code; it then runs, and the shelf's tools are listed without a Revoke.
func TestADroppedDescriptorIsAdmittedFromThePanel(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t, "VOICEBOX_WASM_SHELF_DIR="+shelfIn(t))
	desc := `{"id":"dropped-clock","name":"Dropped clock","source":"local","runsIn":"host","capabilities":[],"bounds":{},"tools":[{"name":"dropped_now","primitive":"now","params":{}}]}`
	if err := os.WriteFile(filepath.Join(relay.StateDir, "dropped-clock.json"), []byte(desc), 0o600); err != nil {
		t.Fatal(err)
	}
	tab := harness.NewTab(t)
	tab.Navigate(relay.URL)
	li := `document.querySelector('#ext-present li[data-id="dropped-clock"]')`
	harness.WaitFor[bool](tab, li+` !== null && `+li+`.textContent.includes('present-not-admitted') && `+li+`.querySelector('.ext-request') !== null`, readyBound)
	if m := postAPI(t, relay.URL, "/api/extensions/call", relay.HostToken(t), `{"extension":"dropped-clock","tool":"dropped_now","args":{}}`); m["refused"] != "not-admitted" {
		t.Fatalf("a dropped descriptor ran: %v", m)
	}
	harness.Eval[bool](tab, `(`+li+`.querySelector('.ext-request').click(), true)`)
	var code string
	for code == "" {
		if m := codeLine.FindStringSubmatch(relay.NextLine(t, readyBound)); m != nil && m[1] == "dropped-clock" {
			code = m[2]
		}
	}
	harness.WaitFor[bool](tab, `!`+li+`.querySelector('.ext-code').hidden`, readyBound)
	harness.Eval[bool](tab, `(() => {
		const li = `+li+`;
		li.querySelector('.ext-code').value = '`+code+`';
		li.querySelector('.ext-approve-button').click();
		return true;
	})()`)
	harness.WaitFor[bool](tab, `document.querySelector('#ext-admitted li[data-id="dropped-clock"] .ext-revoke') !== null &&
		document.querySelector('#ext-admitted li[data-id="wasm-shelf-hash"]') !== null &&
		document.querySelector('#ext-admitted li[data-id="wasm-shelf-hash"] .ext-revoke') === null`, readyBound)
	ledger, _ := os.ReadFile(filepath.Join(relay.StateDir, ".ledger.jsonl"))
	if !strings.Contains(string(ledger), `"action":"admit","id":"dropped-clock"`) || !strings.Contains(string(ledger), `"by":"console-code"`) {
		t.Fatalf("the ledger: %s", ledger)
	}
	if _, err := os.Stat(filepath.Join(relay.StateDir, "proposals", "dropped-clock.json")); err == nil {
		t.Fatal("the dropped descriptor was copied into the proposals")
	}
}
