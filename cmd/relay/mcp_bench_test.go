package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
)

// BenchmarkMCPReadFileMachine measures a 4 KiB read_file on a machine root three ways, calls
// interleaved: the executor alone (in process, no relay), POST /api/root/call (the relay's hub,
// /channel, the environment's door and executor), and tools/call over /mcp with the SDK's client
// (the same, plus the SDK's transport, the catalogue's mapping and validation). The relay's /mcp
// overhead is mcp minus executor; the MCP layer's own is mcp minus rootcall.
func BenchmarkMCPReadFileMachine(b *testing.B) {
	url, stateDir, root := machineRelay(b)
	content := strings.Repeat("note ", 4<<10/5)
	os.WriteFile(filepath.Join(root, "notes.md"), []byte(content), 0o644)
	s, _ := mcpSession(b, url, mintMCP(b, stateDir, "bench"))
	r, err := fsroot.OpenOS(root)
	if err != nil {
		b.Fatal(err)
	}
	ex := executor.New(r, executor.Options{})
	token := hostToken(b, stateDir)
	ctx := context.Background()
	call := wire.Call{CallID: "c", Tool: string(executor.ReadFile), DescriptorID: executor.BuiltinDescriptor, Args: json.RawMessage(`{"path":"notes.md"}`), BoundsEcho: json.RawMessage(`{}`)}
	const n = 500
	var alone, rootcall, overMCP []float64
	for b.Loop() {
		for range n {
			t0 := time.Now()
			if _, err := ex.Execute(ctx, call); err != nil {
				b.Fatal(err)
			}
			alone = append(alone, float64(time.Since(t0).Microseconds()))

			t0 = time.Now()
			if got := rootCall(b, url, token, "read-file", map[string]any{"path": "notes.md"}); got["ok"] != true {
				b.Fatalf("read-file: %v", got)
			}
			rootcall = append(rootcall, float64(time.Since(t0).Microseconds()))

			t0 = time.Now()
			res, err := s.CallTool(ctx, &sdk.CallToolParams{Name: "read_file", Arguments: map[string]string{"name": "notes.md"}})
			if err != nil || res.IsError {
				b.Fatalf("read_file: %v %v", res, err)
			}
			overMCP = append(overMCP, float64(time.Since(t0).Microseconds()))
		}
	}
	b.StopTimer()
	report(b, alone, "executor-us")
	report(b, rootcall, "rootcall-us")
	report(b, overMCP, "mcp-us")
}

func report(b *testing.B, samples []float64, unit string) {
	s := slices.Clone(samples)
	slices.Sort(s)
	b.ReportMetric(s[len(s)/2], unit+"-p50")
	b.ReportMetric(s[min(len(s)-1, len(s)*99/100)], unit+"-p99")
}
