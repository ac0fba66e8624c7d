package relay

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voicebox-go/voicebox/internal/core"
	"github.com/voicebox-go/voicebox/internal/door/externalapps"
	"github.com/voicebox-go/voicebox/internal/shared/miniapp"
	"github.com/voicebox-go/voicebox/shared/tool"
)

// patience is the hang guard of every wait here; nothing asserts how long anything takes.
const patience = 20 * time.Second

// builtIn, as a Config's Public in startRelay, serves the page embedded in the binary; an empty
// Public there serves a stand-in page from a temporary directory.
const builtIn = "(built in)"

// startRelay builds a relay on a free loopback port and serves it until the test ends.
func startRelay(t *testing.T, cfg Config) (*Relay, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listener = ln
	if cfg.StateDir == "" {
		cfg.StateDir = filepath.Join(t.TempDir(), "state")
	}
	switch cfg.Public {
	case builtIn:
		cfg.Public = ""
	case "":
		cfg.Public = t.TempDir()
		os.WriteFile(filepath.Join(cfg.Public, "index.html"), []byte("<!doctype html>"), 0o644)
	}
	r, err := New(cfg)
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- r.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("Serve after the shutdown: %v", err)
			}
		case <-time.After(patience):
			t.Error("Serve did not return after its context ended")
		}
	})
	return r, r.URL()
}

// TestNewAssemblesThePartsInOrder: every part New promises exists, the address printed is the
// listener's, and a relay with the gate has one.
func TestNewAssemblesThePartsInOrder(t *testing.T) {
	t.Parallel()
	out := &lockedBuffer{}
	r, url := startRelay(t, Config{Config: core.Config{Console: out, Gated: true}})
	for name, part := range map[string]any{"State": r.State, "Gate": r.Gate, "Server": r.Server, "Hub": r.Hub,
		"Extensions": r.Extensions, "Tools": r.Tools, "ExternalApps": r.ExternalApps, "Live": r.Live} {
		if part == nil {
			t.Errorf("New left %s nil", name)
		}
	}
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("URL() = %q", url)
	}
	resp, err := http.Get(url + "/api/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("health answered %d", resp.StatusCode)
	}
	deadline := time.Now().Add(patience)
	for !strings.Contains(out.String(), "loopback gate on: open "+url+"/?bootstrap=") {
		if time.Now().After(deadline) {
			t.Fatalf("the console says %q", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestNewRefusesWithoutAListener: a Config without its one required part is an error, not a
// relay that cannot serve.
func TestNewRefusesWithoutAListener(t *testing.T) {
	t.Parallel()
	if _, err := New(Config{Config: core.Config{StateDir: t.TempDir(), Public: t.TempDir()}}); err == nil {
		t.Fatal("New without a listener succeeded")
	}
}

// TestThePagesOfferReachesTheModel: what the page offers over /channel (its mini-apps' tools and
// its open external apps) reaches the assistant's catalogue and the model's view through the
// hub's listener, and leaves with the page.
func TestThePagesOfferReachesTheModel(t *testing.T) {
	t.Parallel()
	apps, err := externalapps.Parse([]byte(`{"orders": {"name": "Order Book", "url": "http://127.0.0.1:5190/", "origin": "http://127.0.0.1:5190"}}`))
	if err != nil {
		t.Fatal(err)
	}
	r, url := startRelay(t, Config{Config: core.Config{Log: slog.New(slog.DiscardHandler)}, MiniApps: apps})
	ctx := context.Background()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(url, "http")+"/channel", &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {url}}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	go func() { // the relay's frames (the admitted set) are read and dropped
		for {
			if _, _, err := ws.Read(ctx); err != nil {
				return
			}
		}
	}()
	appTool := miniapp.ModelName("app_timer", "start")
	decls, _ := json.Marshal([]tool.Declaration{{Name: appTool, Description: "Start the timer", Parameters: json.RawMessage(`{"type":"object"}`)}})
	report := `{"apps":[{"id":"orders","live":true,"context":true,"tools":[{"name":"list_orders","description":"List the orders.","readOnly":true}]}]}`
	for _, frame := range []string{`{"type":"root","kind":"opfs","name":"Browser storage"}`, `{"type":"tools","tools":` + string(decls) + `,"externalApps":` + report + `}`} {
		if err := ws.Write(ctx, websocket.MessageText, []byte(frame)); err != nil {
			t.Fatal(err)
		}
	}
	offered := func() (page, external bool) {
		for _, d := range r.ExternalApps.Declarations() {
			page = page || d.Name == appTool
			external = external || strings.Contains(d.Name, "list_orders")
		}
		return page, external
	}
	waitFor(t, "the page's tools and its external app offered to the model", func() bool { p, e := offered(); return p && e })
	ws.Close(websocket.StatusNormalClosure, "")
	waitFor(t, "the offer gone with the page", func() bool { p, e := offered(); return !p && !e })
}

func waitFor(t testing.TB, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waited in vain for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// lockedBuffer is a Console the test reads while the relay writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestWithoutAPublicDirectoryThePageIsBuiltIn: a relay given no directory serves the page
// embedded in the binary, and never its Go source.
func TestWithoutAPublicDirectoryThePageIsBuiltIn(t *testing.T) {
	t.Parallel()
	_, url := startRelay(t, Config{Config: core.Config{Public: builtIn}})
	want, err := os.ReadFile(filepath.Join("..", "..", "public", "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	for path, status := range map[string]int{"/": 200, "/embed.go": 404} {
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != status || (status == 200 && string(body) != string(want)) {
			t.Errorf("GET %s: %d, %d bytes; want %d (the page's index.html)", path, resp.StatusCode, len(body), status)
		}
	}
}
