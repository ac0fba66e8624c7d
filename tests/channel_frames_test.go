//go:build !js

package tests

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"testing"

	"github.com/voicebox-go/voicebox/internal/core/hub"
	"github.com/voicebox-go/voicebox/internal/core/server"
	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
	"github.com/voicebox-go/voicebox/tests/harness"
)

// TestThePageTakesCallsAsBinaryFramesAndAsText: the page's worker asks the relay for its calls as
// binary WebSocket messages (/channel?frames=binary) and answers them; and a relay that does not
// know that query (an older one: here the query is taken off before the hub sees it) sends text,
// which the page answers too. A write and a read with text beyond ASCII cross each way.
func TestThePageTakesCallsAsBinaryFramesAndAsText(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		older bool // the relay ignores the query: calls come as text
	}{
		{"binary", false},
		{"text from an older relay", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h, url, asked := framesRelay(t, c.older)
			tab := harness.NewTab(t)
			tab.Allow(`404`) // a relay of /channel alone: the page's other requests find nothing
			tab.Navigate(url)
			harness.WaitFor[bool](tab, `document.querySelector('#channel').dataset.state === 'connected'`, channelBound)
			if got := asked(); got != hub.FramesQuery+"="+hub.FramesBinary {
				t.Fatalf("the page's /channel upgrade asked %q, want %s=%s", got, hub.FramesQuery, hub.FramesBinary)
			}
			const content = "frames: “binary” and text, ü ✓\n"
			ask := func(tool string, args map[string]string) wire.Answer {
				raw, _ := json.Marshal(args)
				a := h.Ask(context.Background(), wire.Call{CallID: h.NewCallID(), Tool: tool, DescriptorID: executor.BuiltinDescriptor, Args: raw, BoundsEcho: json.RawMessage(`{}`)})
				if !a.OK {
					t.Fatalf("%s answered %s: %s", tool, a.Refused, a.Why)
				}
				return a
			}
			ask("write-file", map[string]string{"path": "frames.txt", "content": content})
			var read struct {
				Content string `json:"content"`
			}
			if err := json.Unmarshal(ask("read-file", map[string]string{"path": "frames.txt"}).Observed, &read); err != nil || read.Content != content {
				t.Fatalf("read-file observed %q (%v), want %q", read.Content, err, content)
			}
		})
	}
}

// framesRelay serves the checkout's public/ (built) with a hub on /channel, in this process, and
// returns it, its URL and the query of the page's last /channel upgrade. With older, the query is
// taken off before the hub sees it, as a relay that knows none would ignore it.
func framesRelay(t *testing.T, older bool) (h *hub.Hub, url string, asked func() string) {
	t.Helper()
	srv, err := server.New(server.Config{Public: filepath.Join(harness.RepoRoot(), "public"), Build: "test", Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	h = hub.New(hub.Options{})
	hub.Register(srv, h, nil)
	var mu sync.Mutex
	query := ""
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/channel" {
			mu.Lock()
			query = r.URL.RawQuery
			mu.Unlock()
			if older {
				r.URL.RawQuery = ""
			}
		}
		srv.ServeHTTP(w, r)
	})}
	go hs.Serve(ln)
	t.Cleanup(func() { h.Close(); hs.Close() })
	return h, "http://" + ln.Addr().String(), func() string {
		mu.Lock()
		defer mu.Unlock()
		return query
	}
}
