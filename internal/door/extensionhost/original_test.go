package extensionhost

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// originalDescriptor reads a descriptor of the original Voicebox's catalogue, written in its
// format in internal/shared/extensions/testdata.
func originalDescriptor(t *testing.T, id string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "internal", "shared", "extensions", "testdata", "original", id+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// theInternet stands in for the hosts the original's catalogue names: every request the
// fetcher makes, to any host, reaches one local TLS server, which records what it was asked.
type theInternet struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []*http.Request
}

func newTheInternet(t *testing.T) *theInternet {
	n := &theInternet{}
	n.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.mu.Lock()
		n.got = append(n.got, r.Clone(context.Background()))
		n.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"host":"` + r.Host + `","path":"` + r.URL.Path + `"}`))
	}))
	t.Cleanup(n.srv.Close)
	return n
}

// client dials the stand-in whatever host a URL names. It skips certificate checks: the
// stand-in cannot hold a certificate for api.duckduckgo.com, and this client exists only here.
func (n *theInternet) client() *http.Client {
	addr := n.srv.Listener.Addr().String()
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
	}}
}

func (n *theInternet) last() *http.Request {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.got[len(n.got)-1]
}

// TestTheOriginalCatalogueBehavesAsDocumented admits the original's five catalogue descriptors
// as they are and calls their tools: the fetching tools reach only their hosts, within their
// documented request budgets, and Brave's key goes in its header; the notes reader reads
// notes.md; the local MCP server never gets in.
func TestTheOriginalCatalogueBehavesAsDocumented(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	web := newTheInternet(t)
	f.g.Fetcher = &Fetcher{Client: web.client(), Getenv: func(name string) string {
		if name == "BRAVE_API_KEY" {
			return "brave-key-1"
		}
		return ""
	}}
	root := fsroot.NewMemory()
	root.WriteFile(context.Background(), "notes.md", []byte("the notes live here"))
	root.WriteFile(context.Background(), "other.md", []byte("another file"))
	exec := executor.New(root, executor.Options{})
	f.g.Ask = func(ctx context.Context, c wire.Call) wire.Answer {
		out, err := exec.Execute(ctx, c)
		if r, ok := refusal.As(err); ok {
			return wire.Refuse(c.CallID, r)
		}
		return wire.OK(c.CallID, out)
	}
	for _, id := range []string{"web-search", "brave-search", "mcp-server-remote", "notes"} {
		f.admit(originalDescriptor(t, id))
	}

	t.Run("web search: five requests, to api.duckduckgo.com only", func(t *testing.T) {
		for i := 1; i <= 5; i++ {
			m := f.call("web-search", "web_search", `{"url":"https://api.duckduckgo.com/?format=json&q=voicebox"}`)
			if m["ok"] != true || observedField(m, "request") != fmt.Sprintf("%d/5", i) {
				t.Fatalf("request %d: %v", i, m)
			}
		}
		if got := web.last(); got.Host != "api.duckduckgo.com" || got.URL.Query().Get("q") != "voicebox" {
			t.Fatalf("the stand-in was asked %s %s", got.Host, got.URL)
		}
		if m := f.call("web-search", "web_search", `{"url":"https://api.duckduckgo.com/?q=again"}`); m["refused"] != "budget-exhausted" {
			t.Fatalf("the sixth request: %v", m)
		}
	})
	t.Run("a host outside the bounds", func(t *testing.T) {
		if m := f.call("mcp-server-remote", "mcp_remote_list_tools", `{"url":"https://evil.example/tools"}`); m["refused"] != "host-not-allowed" {
			t.Fatalf("evil.example: %v", m)
		}
	})
	t.Run("the remote MCP server at its bound url", func(t *testing.T) {
		m := f.call("mcp-server-remote", "mcp_remote_list_tools", `{}`)
		if m["ok"] != true || observedField(m, "request") != "1/20" || observedField(m, "servedBy") != "https://mcp.example.com/tools" {
			t.Fatalf("the bound url: %v", m)
		}
		if got := web.last(); got.Host != "mcp.example.com" || got.URL.Path != "/tools" {
			t.Fatalf("the stand-in was asked %s %s", got.Host, got.URL)
		}
	})
	t.Run("Brave's key in its header", func(t *testing.T) {
		m := f.call("brave-search", "brave_search", `{"url":"https://api.search.brave.com/res/v1/web/search?q=weather"}`)
		if m["ok"] != true {
			t.Fatalf("brave: %v", m)
		}
		if got := web.last(); got.Header.Get("X-Subscription-Token") != "brave-key-1" {
			t.Fatalf("the key went as %q", got.Header.Get("X-Subscription-Token"))
		}
		f.g.Fetcher.Getenv = func(string) string { return "" }
		if m := f.call("brave-search", "brave_search", `{}`); m["refused"] != "secret-unset" {
			t.Fatalf("without the key: %v", m)
		}
	})
	t.Run("the notes reader", func(t *testing.T) {
		if m := f.call("notes", "read_notes", `{}`); observedField(m, "content") != "the notes live here" {
			t.Fatalf("read_notes: %v", m)
		}
		if m := f.call("notes", "read_notes", `{"path":"other.md"}`); observedField(m, "content") != "another file" {
			t.Fatalf("read_notes of another path: %v", m)
		}
		if m := f.call("notes", "read_notes", `{"path":"../outside.md"}`); m["refused"] != "outside-root" {
			t.Fatalf("a path outside the folder: %v", m)
		}
	})
	t.Run("the local MCP server", func(t *testing.T) {
		if _, m, _ := f.do("POST", "/api/extensions/sideload", "", originalDescriptor(t, "mcp-server-local")); m["refused"] != "exec-absent" {
			t.Fatalf("the launch: %v", m)
		}
	})
	t.Run("the listing", func(t *testing.T) {
		_, m, body := f.do("GET", "/api/extensions", "", "")
		if m["ok"] != true || !strings.Contains(body, `"promptSnippet":"brave_search looks things up on the web through api.search.brave.com."`) ||
			!strings.Contains(body, `sends $BRAVE_API_KEY in X-Subscription-Token to api.search.brave.com`) {
			t.Fatalf("listing: %s", body)
		}
		var l struct {
			Extensions Listing `json:"extensions"`
		}
		json.Unmarshal([]byte(body), &l)
		for _, e := range l.Extensions.Admitted {
			if e.ID == "web-search" && (len(e.Tools) != 1 || !strings.Contains(string(e.Tools[0].Params), `"url"`)) {
				t.Fatalf("web_search's arguments for the model: %+v", e.Tools)
			}
		}
	})
}
