package extensionhost

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/voicebox-go/voicebox/catalogue"
	"github.com/voicebox-go/voicebox/internal/shared/extensions"
	"github.com/voicebox-go/voicebox/internal/shared/wasmabi/wasmabitest"
)

// BenchmarkCallExtensionWasm is one call_extension of the catalogue's crc32 tool on 1 KiB, as the
// relay runs it: argument validation, the module read from the extensions directory, its digest,
// and the wasm call.
func BenchmarkCallExtensionWasm(b *testing.B) {
	s := NewAdmissions(b.TempDir(), nil)
	raw, _ := fs.ReadFile(catalogue.Files, "text-tools.json")
	if err := s.StageCatalogue(raw, catalogue.Files); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Decide("text-tools", true, "host-token", nil); err != nil {
		b.Fatal(err)
	}
	g := &Runtime{Admissions: s, Log: slog.New(slog.DiscardHandler)}
	if err := g.Reload(); err != nil {
		b.Fatal(err)
	}
	defer g.wasm().Close(context.Background())
	text := make([]byte, 1024)
	for i := range text {
		text[i] = "voicebox "[i%9]
	}
	args, _ := json.Marshal(map[string]string{"input": string(text)})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.CallExtension(ctx, "text-tools", "crc32", args); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkShelfCall is one call of the WASM shelf's tools as the relay runs them in the relay
// (wazero): the manifest read, the arguments checked, the module read and hashed, the call, the
// observation encoded, the audit line written. hash/1KiB is sha256 of 1 KiB (buffer-abi/1),
// diff/2x64KiB a line diff of two 64 KiB texts (buffer-abi/diff). It reports each call's p50
// and p99.
func BenchmarkShelfCall(b *testing.B) {
	dir := b.TempDir()
	for _, name := range []string{"manifest.json", "hash.wasm", "diff.wasm"} {
		raw, _ := fs.ReadFile(catalogue.Files, "shelf/"+name)
		os.WriteFile(filepath.Join(dir, name), raw, 0o600)
	}
	g := &Runtime{Admissions: NewAdmissions(b.TempDir(), nil), Log: slog.New(slog.DiscardHandler), ShelfDir: dir}
	defer g.wasm().Close(context.Background())
	a, bb := wasmabitest.BigTexts()
	hashArgs, _ := json.Marshal(map[string]string{"input": string(bytes.Repeat([]byte("voicebox "), 1024/9+1)[:1024])})
	diffArgs, _ := json.Marshal(map[string]string{"a": string(a), "b": string(bb)})
	ctx := context.Background()
	for _, c := range []struct {
		name, id string
		args     []byte
	}{{"hash/1KiB", "hash", hashArgs}, {"diff/2x64KiB", "diff", diffArgs}} {
		b.Run(c.name, func(b *testing.B) {
			var samples []float64
			for b.Loop() {
				start := time.Now()
				if _, err := g.CallExtension(ctx, "wasm-shelf-"+c.id, c.id, c.args); err != nil {
					b.Fatal(err)
				}
				samples = append(samples, float64(time.Since(start).Microseconds()))
			}
			reportPercentiles(b, samples, "us")
		})
	}
}

// reportPercentiles reports the p50 and p99 of samples as metrics unit-p50 and unit-p99.
func reportPercentiles(b *testing.B, samples []float64, unit string) {
	slices.Sort(samples)
	b.ReportMetric(samples[len(samples)/2], unit+"-p50")
	b.ReportMetric(samples[min(len(samples)-1, len(samples)*99/100)], unit+"-p99")
}

// BenchmarkRemoteMCPCall is one call of a remote MCP extension's tool as the relay runs it: the
// arguments checked, tools/call over the session (go-sdk client and server on loopback, every
// request through the mediated transport), the result mapped, the audit line written. It
// reports each call's p50 and p99.
func BenchmarkRemoteMCPCall(b *testing.B) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(req.Params.Arguments)}}}, nil
		})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer ts.Close()
	host := strings.TrimPrefix(ts.URL, "http://")
	raw := fmt.Sprintf(`{"id":"bench","name":"B","capabilities":["network"],"bounds":{"hosts":[%q],"maxRequests":%d},"mcp":{"url":%q,"tools":["echo"]}}`, host, extensions.MaxRequestsLimit, ts.URL)
	// admitted is a runtime with the extension admitted afresh: a session's request budget is at
	// most MaxRequestsLimit, so the loop takes a new one (untimed) before the budget runs out.
	admitted := func() *Runtime {
		s := NewAdmissions(b.TempDir(), nil)
		g := &Runtime{Admissions: s, Fetcher: &Fetcher{}, Log: slog.New(slog.DiscardHandler)}
		if _, err := s.Stage([]byte(raw)); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Decide("bench", true, "host-token", nil); err != nil {
			b.Fatal(err)
		}
		if err := g.Reload(); err != nil {
			b.Fatal(err)
		}
		return g
	}
	// callsPerSession leaves the session's own requests (initialize, tools/list, the
	// notification stream) room in its budget.
	const callsPerSession = extensions.MaxRequestsLimit - 100
	g := admitted()
	defer func() { g.Close() }()
	args := json.RawMessage(`{"text":"voicebox"}`)
	ctx := context.Background()
	var samples []float64
	for b.Loop() {
		if len(samples) > 0 && len(samples)%callsPerSession == 0 {
			b.StopTimer()
			g.Close()
			g = admitted()
			b.StartTimer()
		}
		start := time.Now()
		if _, err := g.CallExtension(ctx, "bench", "bench__echo", args); err != nil {
			b.Fatal(err)
		}
		samples = append(samples, float64(time.Since(start).Microseconds()))
	}
	reportPercentiles(b, samples, "us")
}
