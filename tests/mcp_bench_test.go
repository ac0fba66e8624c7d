//go:build !js

package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// BenchmarkMCPReadFileThroughThePage measures a 4 KiB read through the page's worker (OPFS) two
// ways, calls interleaved: POST /api/root/call {"tool": "read-file"} and tools/call read_file over
// /mcp with the SDK's client. The difference is what MCP adds to the same executor call.
func BenchmarkMCPReadFileThroughThePage(b *testing.B) {
	relay := harness.StartRelay(b)
	tab := harness.NewTab(b)
	tab.Quiet()
	tab.Navigate(relay.URL)
	harness.WaitFor[bool](tab, `document.querySelector('#channel').dataset.state === 'connected'`, channelBound)
	if a := relay.Call(b, "write-file", map[string]string{"path": "notes.md", "content": strings.Repeat("note ", 4<<10/5)}); !a.OK {
		b.Fatalf("write-file: %s", a.Raw)
	}
	s, _ := connectMCP(b, relay, "bench")
	body := []byte(`{"tool":"read-file","args":{"path":"notes.md"}}`)
	token := relay.HostToken(b)
	ctx := context.Background()
	const n = 300
	var rootcall, overMCP []float64
	for b.Loop() {
		for range n {
			t0 := time.Now()
			req, _ := http.NewRequest(http.MethodPost, relay.URL+"/api/root/call", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Voicebox-Host-Token", token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			rootcall = append(rootcall, float64(time.Since(t0).Microseconds()))
			var a struct{ OK bool }
			if json.Unmarshal(raw, &a) != nil || !a.OK {
				b.Fatalf("read-file answered %s", raw)
			}

			t0 = time.Now()
			res, err := s.CallTool(ctx, &sdk.CallToolParams{Name: "read_file", Arguments: map[string]string{"name": "notes.md"}})
			if err != nil || res.IsError {
				b.Fatalf("read_file: %v %v", res, err)
			}
			overMCP = append(overMCP, float64(time.Since(t0).Microseconds()))
		}
	}
	b.StopTimer()
	harness.ReportPercentiles(b, rootcall, "rootcall-us")
	harness.ReportPercentiles(b, overMCP, "mcp-us")
}
