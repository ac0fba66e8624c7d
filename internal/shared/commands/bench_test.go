package commands

import (
	"encoding/json"
	"testing"
)

// BenchmarkMap measures the one mapping of a model's call to an action: the name lookup and the
// arguments through the tool-schema validation, then re-encoded.
func BenchmarkMap(b *testing.B) {
	set := Builtins()
	for _, c := range []struct{ name, tool, args string }{
		{"read_file", ReadFile, `{"name":"docs/notes.md"}`},
		{"write_file-1KiB", WriteFile, `{"name":"todo.txt","content":"` + string(make([]byte, 0)) + repeat("buy milk. ", 100) + `"}`},
		{"edit_file", EditFile, `{"name":"notes.md","oldText":"milk","newText":"oat milk"}`},
		{"unknown-tool", "format_disk", `{}`},
	} {
		raw := json.RawMessage(c.args)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				set.Map(c.tool, raw)
			}
		})
	}
}

// BenchmarkResolve measures the offline resolver on a typical typed command.
func BenchmarkResolve(b *testing.B) {
	for _, in := range []string{"write todo.txt: buy milk", `in notes.md replace "milk" with "oat milk"`, "sing me a song"} {
		b.Run(in[:5], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Resolve(in)
			}
		})
	}
}

func repeat(s string, n int) string {
	out := make([]byte, 0, len(s)*n)
	for range n {
		out = append(out, s...)
	}
	return string(out)
}
