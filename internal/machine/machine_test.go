//go:build !js

package machine

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
)

func TestChannelURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
		ok             bool
	}{
		{"http base", "http://127.0.0.1:8787", "ws://127.0.0.1:8787/channel", true},
		{"http with a slash", "http://127.0.0.1:8787/", "ws://127.0.0.1:8787/channel", true},
		{"https", "https://relay.example", "wss://relay.example/channel", true},
		{"ws with its path", "ws://[::1]:9000/channel", "ws://[::1]:9000/channel", true},
		{"no scheme", "127.0.0.1:8787", "", false},
		{"ftp", "ftp://127.0.0.1", "", false},
		{"empty", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ChannelURL(tt.in)
			if (err == nil) != tt.ok || got != tt.want {
				t.Fatalf("ChannelURL(%q) = %q, %v", tt.in, got, err)
			}
		})
	}
}

func TestRunRefusesABadConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  Config
	}{
		{"bad relay", Config{Relay: "nowhere", Bearer: "vbx_x", Root: fsroot.NewMemory()}},
		{"bearer without prefix", Config{Relay: "http://127.0.0.1:1", Bearer: "secret", Root: fsroot.NewMemory()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := Run(context.Background(), tt.cfg); err == nil {
				t.Fatal("Run accepted it")
			}
		})
	}
}

// stallRoot is a root whose reads of "slow.txt" wait until release is closed.
type stallRoot struct {
	fsroot.Root
	release chan struct{}
}

func (r stallRoot) ReadFile(ctx context.Context, name string) ([]byte, error) {
	if name == "slow.txt" {
		select {
		case <-r.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return r.Root.ReadFile(ctx, name)
}

// relaySocket is the relay's end of one environment's /channel, served by a test server: it
// hands each connection's socket (after its hello) to conns.
func relaySocket(t testing.TB) (url string, conns <-chan *websocket.Conn) {
	t.Helper()
	ch := make(chan *websocket.Conn, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		if _, _, err := ws.Read(r.Context()); err != nil { // the hello
			return
		}
		ch <- ws
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	return srv.URL, ch
}

func readCall(path, id string) []byte {
	return []byte(`{"v":1,"callId":"` + id + `","tool":"read-file","descriptorId":"` + executor.BuiltinDescriptor + `","args":{"path":"` + path + `"},"boundsEcho":{}}`)
}

// TestASlowCallHoldsNoOther: calls are served on the goroutine that read them (no goroutine a
// frame), yet a call that does not end lets the calls behind it be read and answered: the
// reading moves to another goroutine after HandOff. Quick calls sent behind it are each answered,
// in order, and the slow one last, once its read is let go.
func TestASlowCallHoldsNoOther(t *testing.T) {
	t.Parallel()
	root := stallRoot{fsroot.NewMemory(), make(chan struct{})}
	for _, name := range []string{"slow.txt", "quick.txt"} {
		if err := root.WriteFile(context.Background(), name, []byte(name)); err != nil {
			t.Fatal(err)
		}
	}
	url, conns := relaySocket(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Run(ctx, Config{Relay: url, Bearer: "vbx_test", Root: root}) }()
	ws := <-conns
	send := func(frame []byte) {
		if err := ws.Write(ctx, websocket.MessageText, frame); err != nil {
			t.Fatal(err)
		}
	}
	answer := func() wire.Answer {
		t.Helper()
		rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
		defer rcancel()
		_, b, err := ws.Read(rctx)
		if err != nil {
			t.Fatalf("no answer: %v", err)
		}
		a, err := wire.ParseAnswer(b)
		if err != nil {
			t.Fatalf("answer %s: %v", b, err)
		}
		return a
	}
	send(readCall("slow.txt", "slow"))
	for i := range 3 {
		id := fmt.Sprintf("quick-%d", i)
		send(readCall("quick.txt", id))
		if a := answer(); a.CallID != id || a.Err() != nil {
			t.Fatalf("answer %d: %+v, want %s observed (the slow call held it)", i, a, id)
		}
	}
	close(root.release)
	if a := answer(); a.CallID != "slow" || a.Err() != nil {
		t.Fatalf("the slow call's answer: %+v", a)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// TestEveryCallIsAnsweredOnce: calls sent one after another are each answered once.
func TestEveryCallIsAnsweredOnce(t *testing.T) {
	t.Parallel()
	root := fsroot.NewMemory()
	if err := root.WriteFile(context.Background(), "quick.txt", []byte("q")); err != nil {
		t.Fatal(err)
	}
	url, conns := relaySocket(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go Run(ctx, Config{Relay: url, Bearer: "vbx_test", Root: root})
	ws := <-conns
	const n = 200
	for i := range n {
		if err := ws.Write(ctx, websocket.MessageText, readCall("quick.txt", fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	for range n {
		_, b, err := ws.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		a, err := wire.ParseAnswer(b)
		if err != nil || a.Err() != nil || seen[a.CallID] {
			t.Fatalf("answer %s: %v %v (seen %v)", b, err, a.Err(), seen[a.CallID])
		}
		seen[a.CallID] = true
	}
}

// TestARefusalNamesItsRule: the relay's refused frame, then its close 1008, end Run with
// ErrRefused naming the rule and why; a call frame between them is still served.
func TestARefusalNamesItsRule(t *testing.T) {
	t.Parallel()
	root := fsroot.NewMemory()
	if err := root.WriteFile(context.Background(), "quick.txt", []byte("q")); err != nil {
		t.Fatal(err)
	}
	url, conns := relaySocket(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Run(ctx, Config{Relay: url, Bearer: "vbx_test", Root: root}) }()
	ws := <-conns
	for _, f := range [][]byte{[]byte(`{"type":"refused","refused":"bearer-revoked","why":"revoked by its owner"}`), readCall("quick.txt", "c")} {
		if err := ws.Write(ctx, websocket.MessageText, f); err != nil {
			t.Fatal(err)
		}
	}
	if _, b, err := ws.Read(ctx); err != nil || !strings.Contains(string(b), `"callId":"c"`) {
		t.Fatalf("the call's answer: %s, %v", b, err)
	}
	ws.Close(websocket.StatusPolicyViolation, "refused")
	err := <-done
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "bearer-revoked: revoked by its owner") {
		t.Fatalf("Run = %v, want ErrRefused naming bearer-revoked", err)
	}
}
