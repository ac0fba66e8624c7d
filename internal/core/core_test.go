package core_test

import (
	"bytes"
	"context"
	"encoding/json"
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
	"github.com/voicebox-go/voicebox/internal/core/hoststate"
	"github.com/voicebox-go/voicebox/internal/core/hub/hubtest"
	"github.com/voicebox-go/voicebox/internal/core/live/openai"
	"github.com/voicebox-go/voicebox/internal/core/live/vendorfixture"
	"github.com/voicebox-go/voicebox/internal/core/server"
	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
)

// patience is the hang guard of every wait here; nothing asserts how long anything takes.
const patience = 20 * time.Second

// TestTheCoreRunsWithNoDoors is the minimal relay: a core with no door serves the page, takes a
// page on /channel, and carries a /live session to the vendor (the fixture), whose tool call
// crosses /channel to the page's workspace and back. No door's route is there.
func TestTheCoreRunsWithNoDoors(t *testing.T) {
	t.Parallel()
	outputs := make(chan string, 4)
	var once sync.Once
	fx := vendorfixture.Start(t, vendorfixture.Options{Script: vendorfixture.Script{
		OnAudio: func(c *vendorfixture.Conn, _ []byte) {
			if c.AudioBytes() >= 4*640 {
				once.Do(func() {
					c.CallTools(vendorfixture.ToolCall{ID: "call_1", Name: "write_file", Args: `{"name":"core.txt","content":"written through the core"}`})
				})
			}
		},
		OnToolOutput: func(_ *vendorfixture.Conn, id string, out json.RawMessage) { outputs <- id + " " + string(out) },
	}})

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	public := t.TempDir()
	os.WriteFile(filepath.Join(public, "index.html"), []byte("<!doctype html>"), 0o644)
	state := filepath.Join(t.TempDir(), "state")
	c, err := core.New(core.Config{Listener: ln, StateDir: state, Public: public,
		VendorURLs: map[string]string{openai.Name: fx.OpenAIURL()}})
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- c.Serve(ctx) }()
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
	url := c.URL()
	token, err := os.ReadFile(filepath.Join(state, hoststate.HostTokenFile))
	if err != nil {
		t.Fatal(err)
	}

	for _, path := range []string{"/api/extensions", "/api/mcp/clients", "/mcp"} {
		if status := send(t, url, http.MethodGet, path, "", nil); status != http.StatusNotFound {
			t.Errorf("GET %s on a core with no doors: %d, want 404", path, status)
		}
	}
	if status := send(t, url, http.MethodGet, "/", "", nil); status != http.StatusOK {
		t.Fatalf("the page: %d", status)
	}
	if status := send(t, url, http.MethodPut, "/api/agent-settings", "", map[string]string{"provider": openai.Name}); status != http.StatusOK {
		t.Fatalf("choosing OpenAI: %d", status)
	}
	if status := send(t, url, http.MethodPut, "/api/keys", strings.TrimSpace(string(token)), map[string]string{"provider": openai.Name, "key": fx.Key()}); status != http.StatusOK {
		t.Fatalf("storing the vendor key: %d", status)
	}

	root := fsroot.NewMemory()
	page := hubtest.Serve(hubtest.Dial(t, url, http.Header{"Origin": {url}}, patience), executor.New(root, executor.Options{}))
	page.WS.Write(context.Background(), websocket.MessageText, []byte(`{"type":"root","kind":"opfs","name":"Browser storage"}`))

	dctx, dcancel := context.WithTimeout(context.Background(), patience)
	defer dcancel()
	live, _, err := websocket.Dial(dctx, "ws"+strings.TrimPrefix(url, "http")+"/live", &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {url}}})
	if err != nil {
		t.Fatalf("dial /live: %v", err)
	}
	defer live.CloseNow()
	for ready := false; !ready; {
		_, b, err := live.Read(dctx)
		if err != nil {
			t.Fatalf("/live ended before it was ready: %v", err)
		}
		var f map[string]any
		json.Unmarshal(b, &f)
		if f["type"] == "refused" {
			t.Fatalf("/live refused: %s", b)
		}
		ready = f["type"] == "state" && f["state"] == "ready"
	}
	tone := vendorfixture.Tone(24000, 20, 440)
	for range 6 {
		if err := live.Write(dctx, websocket.MessageBinary, tone); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case got := <-outputs:
		if !strings.HasPrefix(got, "call_1 ") || strings.Contains(got, "refused") {
			t.Fatalf("the vendor got %q; want the page's answer under call_1", got)
		}
	case <-time.After(patience):
		t.Fatal("the vendor's tool call was never answered")
	}
	b, err := root.ReadFile(context.Background(), "core.txt")
	if err != nil || string(b) != "written through the core" {
		t.Fatalf("the page's workspace holds %q (%v)", b, err)
	}
	if v := fx.Violations(); len(v) > 0 {
		t.Fatalf("the fixture refused %q", v)
	}
}

// send makes a request as the page does (its origin, a JSON body with every state change) and
// returns the status.
func send(t *testing.T, url, method, path, token string, body any) int {
	t.Helper()
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, _ := http.NewRequest(method, url+path, rd)
	req.Header.Set("Origin", url)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set(server.HostTokenHeader, token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// closeCounter is a door that counts its Close calls.
type closeCounter struct{ closed int }

func (d *closeCounter) Name() string           { return "counter" }
func (d *closeCounter) StateFiles() []string   { return nil }
func (d *closeCounter) Mount(*core.Core) error { return nil }
func (d *closeCounter) Close()                 { d.closed++ }

// TestACoreThatNeverServesClosesItsDoors: an assembly that fails after core.New (a fleet whose
// events cannot subscribe) closes the core it built; its doors are closed once.
func TestACoreThatNeverServesClosesItsDoors(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	door := &closeCounter{}
	c, err := core.New(core.Config{Listener: ln, StateDir: filepath.Join(t.TempDir(), "state"), Public: t.TempDir(), Doors: []core.Door{door}})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if door.closed != 1 {
		t.Fatalf("the door was closed %d times; want once", door.closed)
	}
}
