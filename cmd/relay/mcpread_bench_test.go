package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voicebox-go/voicebox/internal/door/mcp"
)

// BenchmarkMCPReadWorkspaceInProcess is one tools/call read_file of a 4 KiB file over /mcp, on a
// relay serving the folder with --workspace, relay and client in this process (cpu-us/op is both sides' CPU time per read): the benchmark to
// profile (-cpuprofile) for where a read's time goes. tests/ BenchmarkMCPReadWorkspace measures
// the built relay against the reference server.
func BenchmarkMCPReadWorkspaceInProcess(b *testing.B) {
	dir, content := benchWorkspace(b)
	stateDir := filepath.Join(b.TempDir(), "state")
	url, _ := startServe(b, stateDir, "--workspace", dir)
	waitMachine(b, url)
	s, _ := mcpSession(b, url, mintMCP(b, stateDir, "bench"))
	measureReads(b, s, content, "mcp-us")
}

// BenchmarkMCPBridgeReadInProcess is BenchmarkMCPReadWorkspaceInProcess through `relay mcp`'s
// bridge (mcpUntil on pipes for its stdin and stdout), all in this process: the bridge's share
// of a read, to profile.
func BenchmarkMCPBridgeReadInProcess(b *testing.B) {
	dir, content := benchWorkspace(b)
	stateDir := filepath.Join(b.TempDir(), "state")
	url, stdout := startServe(b, stateDir, "--workspace", dir)
	go io.Copy(io.Discard, stdout)
	waitMachine(b, url)
	bearerFile := filepath.Join(b.TempDir(), "bearer")
	os.WriteFile(bearerFile, []byte(mintMCP(b, stateDir, "bench")), 0o600)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr syncBuffer
	exit := make(chan int, 1)
	go func() {
		exit <- mcpUntil(context.Background(), []string{"--relay", url, "--bearer-file", bearerFile}, &mcp.LineTransport{In: inR, Out: outW}, &stderr)
		outW.Close()
	}()
	ctx := context.Background()
	s, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, &sdk.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		b.Fatalf("connect to the bridge: %v; it said %s", err, stderr.String())
	}
	b.Cleanup(func() { s.Close(); inW.Close(); <-exit })
	measureReads(b, s, content, "bridge-us")
}

// benchWorkspace is a folder holding notes.md, 4 KiB of text, and that text.
func benchWorkspace(b *testing.B) (dir, content string) {
	dir = b.TempDir()
	content = strings.Repeat("notes ", 4<<10/6)
	if err := os.WriteFile(filepath.Join(dir, "notes.md"), []byte(content), 0o644); err != nil {
		b.Fatal(err)
	}
	return dir, content
}

// measureReads reads notes.md through s once per b.Loop, checks each answer holds content, and
// reports the latencies as metric (p50/p99) and the process's CPU per read.
func measureReads(b *testing.B, s *sdk.ClientSession, content, metric string) {
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
	report(b, us, metric)
	b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(len(us)), "cpu-us/op")
}
