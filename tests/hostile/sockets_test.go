//go:build !js

package hostile

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/voicebox-go/voicebox/internal/shared/channel"
	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
	"github.com/voicebox-go/voicebox/tests/harness"
)

// dialChannel opens the relay's /channel from the loopback address from, with origin ("" sends
// none) and the bearer in its Authorization header (none for ""), and closes it when the case
// ends.
func dialChannel(t testing.TB, relay *harness.Relay, from, origin string, bearer ...string) *websocket.Conn {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	header := http.Header{}
	if len(bearer) > 0 {
		header.Set("Authorization", "Bearer "+bearer[0])
	}
	if origin != "" {
		header.Set("Origin", origin)
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(relay.URL, "http")+"/channel", &websocket.DialOptions{
		HTTPHeader: header, HTTPClient: &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}})
	if err != nil {
		t.Fatalf("dial /channel from %s: %v", from, err)
	}
	ws.SetReadLimit(wire.MaxFrameBytes)
	t.Cleanup(func() { ws.CloseNow() })
	return ws
}

// control reads ws until a control frame of one of types arrives, and returns it; ok is false
// when the socket ended first (with its close status in the frame's "status").
func control(t testing.TB, ws *websocket.Conn, types ...string) (frame map[string]any, ok bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	for {
		_, b, err := ws.Read(ctx)
		if err != nil {
			return map[string]any{"status": int(websocket.CloseStatus(err))}, false
		}
		var m map[string]any
		if json.Unmarshal(b, &m) == nil {
			for _, typ := range types {
				if m["type"] == typ {
					return m, true
				}
			}
		}
	}
}

// wantRefused reads ws's refused frame and its close: rule, then 1008.
func wantRefused(t testing.TB, ws *websocket.Conn, rule string) map[string]any {
	t.Helper()
	m, ok := control(t, ws, "refused")
	if !ok || m["refused"] != rule {
		t.Fatalf("the socket was told %v, want refused %s", m, rule)
	}
	if end, _ := control(t, ws); end["status"] != int(websocket.StatusPolicyViolation) {
		t.Fatalf("the refused socket closed with %v, want 1008", end["status"])
	}
	return m
}

// pairBearer pairs a machine named name with relay and returns its bearer.
func pairBearer(t testing.TB, relay *harness.Relay, name string) string {
	t.Helper()
	out, err := exec.Command(filepath.Join(harness.RepoRoot(), "bin", "relay"), "pair", "--extensions-dir", relay.StateDir, name).Output()
	if err != nil {
		t.Fatalf("relay pair: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// serveMachine says hello on ws with bearer and answers the relay's calls from a memory root.
func serveMachine(t testing.TB, ws *websocket.Conn, bearer string) {
	t.Helper()
	hello, _ := json.Marshal(map[string]string{"type": "hello", "role": "environment", "bearer": bearer})
	if err := ws.Write(context.Background(), websocket.MessageText, hello); err != nil {
		t.Fatal(err)
	}
	door := channel.NewDoor(executor.New(fsroot.NewMemory(), executor.Options{}), executor.BuiltinAdmitted(), channel.DoorOptions{})
	go func() {
		for {
			_, b, err := ws.Read(context.Background())
			if err != nil {
				return
			}
			if a := door.Serve(context.Background(), b); a != nil {
				ws.Write(context.Background(), websocket.MessageText, a)
			}
		}
	}()
}

// TestSilentSocketsCannotLockOutTheExecutor is review item 6: sockets that never say hello,
// opened from one address, from many, and from a foreign page, no longer fill the relay: they
// wait in a bounded pool of their own, each beyond it is refused too-many-sockets, and the page
// and a machine that shows its bearer in the upgrade (as relay env does) are admitted while they
// wait.
func TestSilentSocketsCannotLockOutTheExecutor(t *testing.T) {
	t.Parallel()
	for _, gated := range []bool{false, true} {
		t.Run(fmt.Sprintf("gate %v", gated), func(t *testing.T) {
			t.Parallel()
			var env []string
			if gated {
				env = append(env, "VOICEBOX_LOOPBACK_AUTH=1")
			}
			relay := harness.StartRelay(t, env...)
			bearer := pairBearer(t, relay, "box")
			// 256 from one address (the review's attack): 16 wait, the rest are refused.
			var silent []*websocket.Conn
			for range 256 {
				silent = append(silent, dialChannel(t, relay, "127.0.0.1", ""))
			}
			for _, ws := range silent[16:] {
				wantRefused(t, ws, "too-many-sockets")
			}
			// More from three other addresses fill the pool; the next is refused.
			for _, ip := range []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"} {
				for range 16 {
					dialChannel(t, relay, ip, "")
				}
			}
			wantRefused(t, dialChannel(t, relay, "127.0.0.5", ""), "too-many-sockets")
			wantRefused(t, dialChannel(t, relay, "127.0.0.6", "http://evil.example"), "too-many-sockets")

			// With the pool full, the page (its own Origin) is admitted: it gets the admitted set.
			if !gated {
				page := dialChannel(t, relay, "127.0.0.1", relay.URL)
				if _, ok := control(t, page, "admitted"); !ok {
					t.Fatal("the page was not admitted while silent sockets filled their pool")
				}
			}
			// A machine without its bearer in the upgrade waits in the full pool like anyone: it
			// is refused. With it, even from the address whose share is full, it is admitted.
			wantRefused(t, dialChannel(t, relay, "127.0.0.9", ""), "too-many-sockets")
			machine := dialChannel(t, relay, "127.0.0.1", "", bearer)
			serveMachine(t, machine, bearer)
			waitFor(t, "the machine to hold the root", func() bool { return rootKind(t, relay) == "machine" })
			if a := relay.Call(t, "now", nil); !a.OK {
				t.Fatalf("the machine admitted past the silent sockets answered %s", a.Raw)
			}
			served(t, relay)
		})
	}
}

// TestAForeignPageIsRefusedAtItsShorterBound: a page of another site that opens /channel and
// says nothing is refused after ForeignHelloBound, and told so.
func TestAForeignPageIsRefusedAtItsShorterBound(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	m := wantRefused(t, dialChannel(t, relay, "127.0.0.1", "http://evil.example"), "executor-unauthenticated")
	if why, _ := m["why"].(string); !strings.Contains(why, "within 1s") {
		t.Fatalf("the foreign page was told %q", why)
	}
	served(t, relay)
}

// TestAnOversizedFirstFrameIsARefusedHello is review item 9: a first /channel frame over the
// size limit closed with 1009 and no named refusal; it is answered like any refused hello.
func TestAnOversizedFirstFrameIsARefusedHello(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	for _, size := range []int{8 << 10, wire.MaxFrameBytes + 1} {
		ws := dialChannel(t, relay, "127.0.0.1", "")
		go ws.Write(context.Background(), websocket.MessageText, []byte(strings.Repeat("x", size)))
		m := wantRefused(t, ws, "executor-unauthenticated")
		if why, _ := m["why"].(string); !strings.Contains(why, "over the hello's bound") {
			t.Fatalf("a %d-byte first frame was told %q", size, why)
		}
	}
	machine := dialChannel(t, relay, "127.0.0.1", "")
	serveMachine(t, machine, pairBearer(t, relay, "box"))
	waitFor(t, "the machine to hold the root", func() bool { return rootKind(t, relay) == "machine" })
	served(t, relay)
}
