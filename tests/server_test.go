//go:build !js

package tests

import (
	"io"
	"net"
	"net/http"
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

// TestARemoteOriginSignsInAndAThirdIsRefused: the relay refuses to listen on 0.0.0.0 without the
// gate; with it, it listens there behind a second local origin (a reverse proxy on another port,
// configured as the public origin with VOICEBOX_ORIGIN). The page opened there signs in with the
// printed ticket and becomes the executor; a third origin is refused on the page, on /channel
// and on /live. (Traffic goes to 127.0.0.1 only.)
func TestARemoteOriginSignsInAndAThirdIsRefused(t *testing.T) {
	t.Parallel()
	open := exec.Command(filepath.Join(harness.RepoRoot(), "bin", "relay"), "serve", "--addr", "0.0.0.0:0", "--public", filepath.Join(harness.RepoRoot(), "public"))
	open.Env = append(os.Environ(), "VOICEBOX_LOOPBACK_AUTH=0", "VOICEBOX_STATE_DIR="+filepath.Join(t.TempDir(), "state"))
	out, err := open.CombinedOutput()
	if code := open.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(out), "VOICEBOX_LOOPBACK_AUTH=1") {
		t.Fatalf("serve on 0.0.0.0 without the gate: exit %d (%v), %s", code, err, out)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	public := "http://" + ln.Addr().String()
	relay := harness.StartRelayWith(t, []string{"--addr", "0.0.0.0:0"}, "VOICEBOX_LOOPBACK_AUTH=1", "VOICEBOX_ORIGIN="+public, "VOICEBOX_HELLO_BOUND_MS=500")
	target, _ := url.Parse(relay.URL)
	proxy := &http.Server{Handler: httputil.NewSingleHostReverseProxy(target)}
	go proxy.Serve(ln)
	t.Cleanup(func() { proxy.Close() })

	line := relay.NextLine(t, 5*time.Second)
	i := strings.Index(line, public+"/?bootstrap=")
	if i < 0 {
		t.Fatalf("the relay printed %q, want a one-time URL on %s", line, public)
	}
	ticket := strings.Fields(line[i:])[0]
	tab := harness.NewTab(t)
	openWorkspace(t, tab, ticket)
	if got := harness.Eval[string](tab, `location.href`); got != public+"/" {
		t.Fatalf("after the ticket the page is at %s, want %s/", got, public)
	}
	harness.WaitFor[bool](tab, `document.querySelector('#channel').dataset.state === 'connected'`, channelBound)
	if a := relay.Call(t, "write-file", map[string]string{"path": "remote.txt", "content": "from the public origin"}); !a.OK {
		t.Fatalf("through the remote-origin page a call answered %s", a.Raw)
	}
	if a := relay.Call(t, "read-file", map[string]string{"path": "remote.txt"}); !a.OK || !strings.Contains(string(a.Observed), "from the public origin") {
		t.Fatalf("reading back answered %s", a.Raw)
	}

	// A third origin: its page's sockets to /channel and /live, and its requests for the page.
	evil := hijacker(t, public)
	third := harness.NewTab(t)
	third.Allow(`WebSocket connection to .*/live' failed`)
	third.Navigate(evil.URL)
	silent := harness.Eval[hijackResult](third, `probe(null)`)
	wantRefusedWithNoCall(t, "a third origin on /channel", silent, "executor-unauthenticated")
	live := harness.Eval[hijackResult](third, `new Promise((resolve) => {
		const got = {frames: [], code: 0};
		const ws = new WebSocket(`+"`"+strings.Replace(public, "http", "ws", 1)+"/live`"+`);
		ws.onmessage = (e) => got.frames.push(e.data);
		ws.onclose = (e) => { got.code = e.code; resolve(got); };
	})`)
	if live.Code != 1006 || len(live.Frames) != 0 {
		t.Errorf("a third origin on /live: closed %d with frames %q, want the upgrade refused (1006, none)", live.Code, live.Frames)
	}
	for _, probe := range []struct {
		path    string
		upgrade bool
	}{{"/", false}, {"/api/root", false}, {"/live", true}} {
		req, _ := http.NewRequest("GET", public+probe.path, nil)
		req.Header.Set("Origin", evil.URL)
		if probe.upgrade {
			req.Header.Set("Connection", "Upgrade")
			req.Header.Set("Upgrade", "websocket")
			req.Header.Set("Sec-WebSocket-Version", "13")
			req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), `"refused":"origin-refused"`) {
			t.Errorf("a third origin on %s: %d %s, want 403 origin-refused", probe.path, resp.StatusCode, b)
		}
	}
	// The page of the public origin still holds the root.
	if a := relay.Call(t, "now", map[string]string{}); !a.OK {
		t.Fatalf("after the third origin's attempts a call answered %s", a.Raw)
	}
}
