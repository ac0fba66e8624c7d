package mcp

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkResultOfARead shapes the tool result of a 4 KiB read_file's observation, as every
// tools/call of a read does.
func BenchmarkResultOfARead(b *testing.B) {
	content, _ := json.Marshal(strings.Repeat("notes \"quoted\"\n", 4<<10/15))
	obs := json.RawMessage(`{"path":"notes.md","content":` + string(content) + `,"size":4096,"truncated":false}`)
	h := &Handler{log: slog.New(slog.DiscardHandler)}
	for b.Loop() {
		if res := h.result("c", "read_file", obs); res.IsError {
			b.Fatal("a read came back as an error")
		}
	}
}

// BenchmarkAnswerOfARead encodes the answer to a 4 KiB read_file's call as the SDK's jsonrpc2
// does (the result marshalled, then the message with it): sdk with the result as the SDK's
// type, voicebox as textResult.
func BenchmarkAnswerOfARead(b *testing.B) {
	content, _ := json.Marshal(strings.Repeat("notes \"quoted\"\n", 4<<10/15))
	obs := `{"path":"notes.md","content":` + string(content) + `,"size":4096,"truncated":false}`
	res := &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: obs}}}
	id, _ := jsonrpc.MakeID(float64(7))
	for _, tc := range []struct {
		name   string
		result any
	}{{"sdk", res}, {"voicebox", textResult{res}}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var raw bytes.Buffer
				enc := json.NewEncoder(&raw)
				enc.SetEscapeHTML(false) // as the SDK's jsonrpc2 marshals a result
				if err := enc.Encode(tc.result); err != nil {
					b.Fatal(err)
				}
				if _, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Result: raw.Bytes()}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkBearerLookup checks a bearer against a clients file of 8 clients, as every request to
// /mcp does.
func BenchmarkBearerLookup(b *testing.B) {
	d := NewFileClients(filepath.Join(b.TempDir(), ClientsFile))
	var bearer string
	for i := range 8 {
		bearer, _ = d.Mint("client" + string(rune('a'+i)))
	}
	for b.Loop() {
		if _, ok, err := d.Lookup(bearer); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}
