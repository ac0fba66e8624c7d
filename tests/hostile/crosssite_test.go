//go:build !js

package hostile

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/voicebox-go/voicebox/tests/harness"
)

// appFileBundles is the relay's bound of folder app bundles held at once
// (internal/core/server.MaxAppFileBundles).
const appFileBundles = 32

// fileSize is the size of a file of the relay's state directory, 0 when it is not there.
func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return info.Size()
}

// TestCrossSiteRequestsChangeNothingWithTheGateOff is issue 32 item 4: with the gate off, a
// sandboxed frame on another site (Origin: null) appended 200 ledger lines through
// /api/extensions/revoke with an empty body (read as {"id":""}), made 40 app-file bundles so an
// open folder app lost its files, and spent an admitted extension's requests with no-cors GETs
// of its view. Now every request that is not GET or HEAD passes one wall: Origin null or
// foreign is refused origin-refused, a body that is not JSON unsupported-content-type, an empty
// one body-required; a revocation of an id that names nothing is refused not-found and not
// recorded; the bundles' bound refuses the new one (app-files-full) and the open app's files
// stay; the view is read only by a POST. The page's own requests are still served.
func TestCrossSiteRequestsChangeNothingWithTheGateOff(t *testing.T) {
	t.Parallel()
	var reads atomic.Int32 // the view resource read from the extension's server
	srv := mcp.NewServer(&mcp.Implementation{Name: "viewer", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "show", Meta: mcp.Meta{"ui": map[string]any{"resourceUri": "ui://viewer/view.html"}}, InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "shown"}}}, nil
		})
	srv.AddResource(&mcp.Resource{URI: "ui://viewer/view.html", Name: "view", MIMEType: "text/html;profile=mcp-app"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			reads.Add(1)
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/html;profile=mcp-app", Text: "<!doctype html><p>view</p>"}}}, nil
		})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)

	relay := harness.StartRelay(t)
	ledger := filepath.Join(relay.StateDir, ".ledger.jsonl")
	audit := filepath.Join(relay.StateDir, ".extensions-audit.jsonl")

	// 1. The revocation that wrote the ledger, in every shape a page of another site can send.
	for _, a := range []struct {
		name   string
		header map[string]string
		body   string
		status int
		rule   string
	}{
		{"Origin null, no body", map[string]string{"Origin": "null"}, "", 403, "origin-refused"},
		{"Origin null, text/plain", map[string]string{"Origin": "null", "Content-Type": "text/plain"}, `{"id":""}`, 403, "origin-refused"},
		{"Origin null, JSON", map[string]string{"Origin": "null", "Content-Type": "application/json"}, `{"id":""}`, 403, "origin-refused"},
		{"a foreign Origin", map[string]string{"Origin": "https://elsewhere.example", "Content-Type": "application/json"}, `{"id":""}`, 403, "origin-refused"},
		{"no Origin, text/plain", map[string]string{"Content-Type": "text/plain"}, `{"id":""}`, 415, "unsupported-content-type"},
		{"no Origin, a form", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, `id=`, 415, "unsupported-content-type"},
		{"no Origin, no body", nil, "", 415, "unsupported-content-type"},
		{"no Origin, JSON type, no body", map[string]string{"Content-Type": "application/json"}, "", 400, "body-required"},
		{"a program, the empty id", map[string]string{"Content-Type": "application/json"}, `{"id":""}`, 404, "not-found"},
		{"a program, an id never admitted", map[string]string{"Content-Type": "application/json"}, `{"id":"never-admitted"}`, 404, "not-found"},
	} {
		for range 5 {
			r := sendRaw(t, http.MethodPost, relay.URL+"/api/extensions/revoke", a.header, a.body)
			if !r.refused(a.status, a.rule) {
				t.Fatalf("revoke, %s: %d %s; want %d %s", a.name, r.status, r.body, a.status, a.rule)
			}
		}
	}
	if n := fileSize(t, ledger); n != 0 {
		t.Fatalf("refused revocations wrote %d bytes to the ledger", n)
	}
	if b, _ := os.ReadFile(audit); strings.Contains(string(b), `"revoke"`) {
		t.Fatalf("refused revocations were audited: %s", b)
	}

	// 2. The bundles: the page opens a folder app; a page of another site cannot make one; a
	// local program fills the bound and is refused, and the open app's file is still served.
	made := sendRaw(t, http.MethodPost, relay.URL+"/api/app-files", map[string]string{"Origin": relay.URL, "Content-Type": "application/json"}, "{}")
	tok, _ := made.m["token"].(string)
	if made.status != 200 || tok == "" {
		t.Fatalf("the page's bundle: %d %s", made.status, made.body)
	}
	if r := sendRaw(t, http.MethodPut, relay.URL+"/api/app-files/"+tok+"/index.html", map[string]string{"Origin": relay.URL, "Content-Type": "application/octet-stream"}, "<p>mine</p>"); r.status != 200 {
		t.Fatalf("the page's file: %d %s", r.status, r.body)
	}
	for range 40 {
		if r := sendRaw(t, http.MethodPost, relay.URL+"/api/app-files", map[string]string{"Origin": "null"}, ""); !r.refused(403, "origin-refused") {
			t.Fatalf("a bundle from Origin null: %d %s", r.status, r.body)
		}
	}
	if r := sendRaw(t, http.MethodPut, relay.URL+"/api/app-files/"+tok+"/index.html", map[string]string{"Origin": "null", "Content-Type": "application/octet-stream"}, "evil"); !r.refused(403, "origin-refused") {
		t.Fatalf("a file from Origin null: %d %s", r.status, r.body)
	}
	if r := sendRaw(t, http.MethodPut, relay.URL+"/api/app-files/"+tok+"/index.html", map[string]string{"Content-Type": "text/plain"}, "evil"); !r.refused(415, "unsupported-content-type") {
		t.Fatalf("a file as text/plain: %d %s", r.status, r.body)
	}
	full := 0
	for i := range 40 {
		r := sendRaw(t, http.MethodPost, relay.URL+"/api/app-files", map[string]string{"Content-Type": "application/json"}, "{}")
		switch {
		case i < appFileBundles-1 && r.status == 200:
		case i >= appFileBundles-1 && r.refused(507, "app-files-full"):
			full++
		default:
			t.Fatalf("bundle %d of a local program: %d %s", i+1, r.status, r.body)
		}
	}
	if got := sendRaw(t, http.MethodGet, relay.URL+"/app-files/"+tok+"/index.html", nil, ""); got.status != 200 || got.body != "<p>mine</p>" {
		t.Fatalf("the open folder app's file after %d refused bundles: %d %q", full, got.status, got.body)
	}

	// 3. The view: no-cors GETs (no Origin, no body) read nothing from the extension's server.
	desc := fmt.Sprintf(`{"id":"viewer","name":"Viewer","runsIn":"remote","capabilities":["network"],"bounds":{"hosts":[%q],"maxRequests":100},"tools":[],"mcp":{"url":%q}}`, strings.TrimPrefix(ts.URL, "http://"), ts.URL)
	if r := postJSON(t, relay, "/api/extensions/sideload", json.RawMessage(desc), false); r.status != http.StatusOK {
		t.Fatalf("sideload: %d %s", r.status, r.body)
	}
	admit := map[string]any{"id": "viewer", "decision": "admit", "confirm": true}
	if r := postJSON(t, relay, "/api/extensions/admit", admit, true); r.status != http.StatusOK {
		t.Fatalf("admit: %d %s", r.status, r.body)
	}
	token := map[string]string{"X-Voicebox-Host-Token": relay.HostToken(t)}
	waitFor(t, "the server's tools staged", func() bool {
		return strings.Contains(send(t, nil, http.MethodGet, relay.URL+"/api/extensions", token, "").body, `"viewer__show"`)
	})
	if r := postJSON(t, relay, "/api/extensions/admit", admit, true); r.status != http.StatusOK {
		t.Fatalf("admit the tools: %d %s", r.status, r.body)
	}
	pageView := func() reply {
		return sendRaw(t, http.MethodPost, relay.URL+"/api/extensions/view", map[string]string{"Origin": relay.URL, "Content-Type": "application/json"}, `{"extension":"viewer","tool":"viewer__show"}`)
	}
	waitFor(t, "the page's view read", func() bool { return pageView().status == http.StatusOK })
	before := reads.Load()
	for range 20 {
		r := sendRaw(t, http.MethodGet, relay.URL+"/api/extensions/view?extension=viewer&tool=viewer__show", nil, "")
		if r.status == 200 {
			t.Fatalf("a GET read the view: %s", r.body)
		}
	}
	if n := reads.Load() - before; n != 0 {
		t.Fatalf("no-cors GETs read the view from the extension's server %d times", n)
	}
	if r := pageView(); r.status != 200 || reads.Load() != before+1 {
		t.Fatalf("the page's view: %d %s (%d reads)", r.status, r.body, reads.Load()-before)
	}

	// The page's revocation of what it admitted is still served, and recorded once.
	if r := sendRaw(t, http.MethodPost, relay.URL+"/api/extensions/revoke", map[string]string{"Origin": relay.URL, "Content-Type": "application/json"}, `{"id":"viewer"}`); r.status != 200 {
		t.Fatalf("the page's revocation: %d %s", r.status, r.body)
	}
	if b, _ := os.ReadFile(ledger); strings.Count(string(b), `"revoke"`) != 1 {
		t.Fatalf("the ledger after one revocation: %s", b)
	}
	served(t, relay)
}

// sendRaw makes one request from 127.0.0.1 with exactly the headers given (no Content-Type
// unless header names one) and body.
func sendRaw(t testing.TB, method, url string, header map[string]string, body string) reply {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body == "" {
		req.Body, req.ContentLength = http.NoBody, 0
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := plainClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	r := reply{status: resp.StatusCode, body: string(b)}
	json.Unmarshal([]byte(r.body), &r.m)
	return r
}
