//go:build linux

package harness

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// wrapperBound bounds one headless Chromium started through the wrapper to print a page.
const wrapperBound = 60 * time.Second

// TestChromiumWrapperResolvesAppHosts: the wrapper the browser-side go test starts Chromium
// through (tools/bin/chromium) loads a page from a per-app host, <app>.localhost, as the
// harness's own browser does: both resolve names by HostResolverRules, so a mini-app's host that
// works in one works in the other.
func TestChromiumWrapperResolvesAppHosts(t *testing.T) {
	wrapper := filepath.Join(RepoRoot(), "tools", "bin", "chromium")
	script, err := os.ReadFile(wrapper)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(script), "--host-resolver-rules="+HostResolverRules) {
		t.Errorf("the wrapper's resolver rules are not the harness's %q", HostResolverRules)
	}
	if !strings.Contains(string(script), " --"+SiteIsolation+" ") {
		t.Errorf("the wrapper does not give every site a process of its own (--%s)", SiteIsolation)
	}
	if !strings.HasSuffix(strings.TrimSpace(string(script)), `"$@" \
  --disable-features=`+DisabledFeatures) {
		t.Errorf("the wrapper does not end with the harness's features turned off, after the runner's own list: %q", DisabledFeatures)
	}
	if _, err := os.Stat(ChromiumPath()); err != nil {
		t.Fatalf("no Chromium at %s: ./build.sh setup installs it (every browser test of this module needs it)", ChromiumPath())
	}

	const marker = "per-app host served"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<!doctype html><p>" + marker + " to " + r.Host + "</p>"))
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	port := ln.Addr().(*net.TCPAddr).Port

	profile := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), wrapperBound)
	defer cancel()
	url := "http://probe-app.localhost:" + strconv.Itoa(port) + "/"
	cmd := exec.CommandContext(ctx, wrapper, "--user-data-dir="+profile, "--dump-dom", url)
	cmd.Env = append(os.Environ(), "TMPDIR="+profile)
	out, err := cmd.Output()
	if ctx.Err() != nil {
		t.Fatalf("Chromium through the wrapper did not print %s within %s", url, wrapperBound)
	}
	if err != nil {
		t.Fatalf("Chromium through the wrapper: %v", err)
	}
	if !strings.Contains(string(out), marker+" to probe-app.localhost:") {
		t.Fatalf("Chromium through the wrapper did not load %s; it printed %q", url, clip(string(out), 400))
	}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
