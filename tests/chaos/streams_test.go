//go:build !js

package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voicebox-go/voicebox/internal/shared/channel"
	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/tests/harness"
)

// streamsBound is the hang guard of the whole scenario and of each answer in it.
const streamsBound = 60 * time.Second

type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// openReader sends head on a connection of its own and then reads it a byte a second (slow) or
// never (stopped). Once drain is closed it reads the rest at once, and counts the connection in
// ended when the relay has closed it (EOF within streamsBound).
func openReader(t *testing.T, relay *harness.Relay, head string, slow bool, drain <-chan struct{}, ended *atomic.Int32) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(relay.URL, "http://"), streamsBound)
	if err != nil {
		t.Fatal(err)
	}
	conn.(*net.TCPConn).SetReadBuffer(4096)
	t.Cleanup(func() { conn.Close() })
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	go func() {
		b := make([]byte, 1)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-drain:
				conn.SetReadDeadline(time.Now().Add(streamsBound))
				if _, err := io.Copy(io.Discard, conn); err == nil {
					ended.Add(1)
				}
				return
			case <-tick.C:
				if slow {
					conn.Read(b)
				}
			}
		}
	}()
}

// mcpSession initializes a session with raw requests and returns its id (protocol 2025-06-18,
// so list_changed goes on its standalone stream).
func mcpSession(t *testing.T, relay *harness.Relay, token string) string {
	t.Helper()
	post := func(session, body string) string {
		req, _ := http.NewRequest(http.MethodPost, relay.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.Header.Get("Mcp-Session-Id")
	}
	id := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"chaos","version":"1"}}}`)
	if id == "" {
		t.Fatal("initialize opened no session")
	}
	post(id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return id
}

// TestStreamsSlowAndStoppedReadersEverywhere: /mcp notification streams and /api/events streams
// read a byte a second or not at all, while the page's tools change every 15 ms and
// a healthy MCP client writes and reads files through the page's executor. Every healthy call is
// answered exactly once with what it asked for, and the slow and stopped streams are closed
// slow-reader (logged; each ends).
func TestStreamsSlowAndStoppedReadersEverywhere(t *testing.T) {
	t.Parallel()
	const (
		calls   = 100 // the healthy client's writes, each read back
		readers = 2   // of each kind (slow, stopped) on each stream (/mcp, /api/events)
	)
	relay := harness.StartRelay(t)
	ctx, cancel := context.WithTimeout(context.Background(), streamsBound)
	defer cancel()

	// The page: an executor over memory, answering on its /channel socket.
	page, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(relay.URL, "http")+"/channel", &websocket.DialOptions{
		HTTPHeader: http.Header{"Origin": {relay.URL}}})
	if err != nil {
		t.Fatal(err)
	}
	defer page.CloseNow()
	page.SetReadLimit(-1)
	door := channel.NewDoor(executor.New(fsroot.NewMemory(), executor.Options{}), executor.BuiltinAdmitted(), channel.DoorOptions{})
	go func() {
		for {
			_, b, err := page.Read(context.Background())
			if err != nil {
				return
			}
			if a := door.Serve(context.Background(), b); a != nil {
				page.Write(context.Background(), websocket.MessageText, a)
			}
		}
	}()
	if err := page.Write(ctx, websocket.MessageText, []byte(`{"type":"root","kind":"opfs","name":"workspace"}`)); err != nil {
		t.Fatal(err)
	}

	// The slow and stopped readers.
	host := strings.TrimPrefix(relay.URL, "http://")
	var ended atomic.Int32
	drain := make(chan struct{})
	token := relay.MintMCPBearer(t, "readers")
	for i := range 2 * readers {
		slow := i%2 == 0
		openReader(t, relay, "GET /api/events HTTP/1.1\r\nHost: "+host+"\r\nAccept: text/event-stream\r\n\r\n", slow, drain, &ended)
		id := mcpSession(t, relay, token)
		openReader(t, relay, "GET /mcp HTTP/1.1\r\nHost: "+host+"\r\nAuthorization: Bearer "+token+
			"\r\nAccept: text/event-stream\r\nMcp-Session-Id: "+id+"\r\nMcp-Protocol-Version: 2025-06-18\r\n\r\n", slow, drain, &ended)
	}

	// The tools change all along: every stream is sent list_changed and tools events.
	changing, stop := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(changing)
		pad := strings.Repeat("x", 900)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(15 * time.Millisecond): // past the SDK's 10 ms debounce of list_changed
			}
			f := fmt.Sprintf(`{"type":"tools","tools":[{"name":"app_c%d","description":"%s","parameters":{"type":"object","properties":{}}}]}`, i, pad)
			if page.Write(ctx, websocket.MessageText, []byte(f)) != nil {
				return
			}
		}
	}()

	// The healthy client: every call answered once, with what it asked for.
	c := mcp.NewClient(&mcp.Implementation{Name: "healthy", Version: "1"}, nil)
	healthy, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: relay.URL + "/mcp",
		HTTPClient: &http.Client{Transport: bearer(relay.MintMCPBearer(t, "healthy"))}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer healthy.Close()
	for i := range calls {
		path, content := fmt.Sprintf("f%d.txt", i), fmt.Sprintf("content %d", i)
		w, err := healthy.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: map[string]string{"name": path, "content": content}})
		if err != nil || w.IsError {
			text, _ := json.Marshal(w)
			t.Fatalf("write %d: %v %s", i, err, text)
		}
		r, err := healthy.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]string{"name": path}})
		if err != nil || r.IsError || len(r.Content) != 1 {
			t.Fatalf("read %d: %v %v", i, err, r)
		}
		text, _ := json.Marshal(r.Content[0])
		if !strings.Contains(string(text), content) {
			t.Fatalf("read %d answered %s, want %q", i, text, content)
		}
	}
	// The streams that cannot keep up are closed slow-reader: the relay says so, and each
	// reader, reading the rest at once, comes to the end of its stream.
	for deadline := time.Now().Add(streamsBound); strings.Count(relay.Stderr(), "slow-reader") < 4*readers; {
		if time.Now().After(deadline) {
			t.Fatalf("after %v the log names slow-reader %d times, want %d", streamsBound, strings.Count(relay.Stderr(), "slow-reader"), 4*readers)
		}
		time.Sleep(100 * time.Millisecond)
	}
	close(drain)
	for deadline := time.Now().Add(2 * streamsBound); ended.Load() < 4*readers; {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d slow and stopped streams came to an end", ended.Load(), 4*readers)
		}
		time.Sleep(100 * time.Millisecond)
	}
	close(stop)
	<-changing
	resp, err := http.Get(relay.URL + "/api/health")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("after the readers /api/health: %v %v", err, resp)
	}
	resp.Body.Close()
}
