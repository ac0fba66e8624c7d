//go:build !js

package tests

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"voicebox/tests/harness"
)

var codeLine = regexp.MustCompile(`approval code for extension lookup: (\d{8})`)

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
		req, _ := http.NewRequest("POST", relay.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("X-Voicebox-Host-Token", token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var m map[string]any
		json.Unmarshal(b, &m)
		return m
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
	harness.Eval[bool](tab, `(document.querySelector('#ext-pending li[data-id="lookup"] .ext-request').click(), true)`)
	var code string
	for code == "" {
		if m := codeLine.FindStringSubmatch(relay.NextLine(t, readyBound)); m != nil {
			code = m[1]
		}
	}
	harness.WaitFor[bool](tab, `!document.querySelector('#ext-pending li[data-id="lookup"] .ext-code').hidden`, readyBound)
	harness.Eval[bool](tab, `(() => {
		const li = document.querySelector('#ext-pending li[data-id="lookup"]');
		li.querySelector('.ext-code').value = '`+code+`';
		li.querySelector('.ext-approve-button').click();
		return true;
	})()`)
	harness.WaitFor[bool](tab, `document.querySelector('#ext-admitted li[data-id="lookup"] .ext-revoke') !== null`, readyBound)
	tab.Screenshot("extensions-admitted")

	m := post("/api/extensions/call", relay.HostToken(t), call)
	obs, _ := m["observed"].(map[string]any)
	if m["ok"] != true || obs == nil || !strings.Contains(fmt.Sprint(obs["body"]), "looked up cats") || obs["servedBy"] != upstream.URL {
		t.Fatalf("the admitted call: %v", m)
	}

	harness.Eval[bool](tab, `(document.querySelector('#ext-admitted li[data-id="lookup"] .ext-revoke').click(), true)`)
	harness.WaitFor[bool](tab, `document.querySelector('#ext-admitted li[data-id="lookup"]') === null`, readyBound)
	if m := post("/api/extensions/call", relay.HostToken(t), call); m["refused"] != "not-admitted" {
		t.Fatalf("a revoked extension ran: %v", m)
	}
}
