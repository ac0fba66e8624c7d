package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkMCPReadWorkspaceInProcess is one tools/call read_file of a 4 KiB file over /mcp, on a
// relay serving the folder with --workspace, relay and client in this process (cpu-us/op is both sides' CPU time per read): the benchmark to
// profile (-cpuprofile) for where a read's time goes. tests/ BenchmarkMCPReadWorkspace measures
// the built relay against the reference server.
func BenchmarkMCPReadWorkspaceInProcess(b *testing.B) {
	dir := b.TempDir()
	content := strings.Repeat("notes ", 4<<10/6)
	os.WriteFile(filepath.Join(dir, "notes.md"), []byte(content), 0o644)
	stateDir := filepath.Join(b.TempDir(), "state")
	url, _ := startServe(b, stateDir, "--workspace", dir)
	waitMachine(b, url)
	s, _ := mcpSession(b, url, mintMCP(b, stateDir, "bench"))
	ctx := context.Background()
	params := &sdk.CallToolParams{Name: "read_file", Arguments: map[string]string{"name": "notes.md"}}
	var us []float64
	cpu0 := processCPU()
	for b.Loop() {
		t0 := time.Now()
		res, err := s.CallTool(ctx, params)
		us = append(us, float64(time.Since(t0).Nanoseconds())/1e3)
		if err != nil || res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, content[:64]) {
			b.Fatalf("read_file: %+v, %v", res, err)
		}
	}
	b.StopTimer()
	report(b, us, "mcp-us")
	b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(len(us)), "cpu-us/op")
}
