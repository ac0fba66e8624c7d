package extensionhost

import (
	"context"
	"encoding/json"
	"io/fs"
	"log/slog"
	"testing"

	"github.com/voicebox-go/voicebox/catalogue"
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
