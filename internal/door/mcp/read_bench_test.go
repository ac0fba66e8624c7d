package mcp

import (
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
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
