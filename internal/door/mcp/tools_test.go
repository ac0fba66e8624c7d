package mcp

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestResultShapes: each kind of observation becomes its tool result from one parse of its
// members: a read's text as it was, a refusal (its members' names in any case, as a struct
// decode would match them) as an error, media as the protocol's image or audio, and something
// that is not an object as text.
func TestResultShapes(t *testing.T) {
	t.Parallel()
	h := &Handler{log: slog.New(slog.DiscardHandler)}
	for _, tt := range []struct {
		name, obs string
		isError   bool
		kind      string // the first content item's type
	}{
		{"a read", `{"path":"a.md","content":"` + "notes notes" + `","size":11}`, false, "text"},
		{"a refusal", `{"refused":"outside-root","why":"no"}`, true, "text"},
		{"a refusal spelled in capitals", `{"Refused":"outside-root","Why":"no"}`, true, "text"},
		{"an image", `{"kind":"image","mimeType":"image/png","data":"iVBORw==","path":"p.png","size":4}`, false, "image"},
		{"audio", `{"kind":"audio","mimeType":"audio/wav","data":"UklGRg==","path":"a.wav","size":4}`, false, "audio"},
		{"media without its type", `{"kind":"image","data":"iVBORw=="}`, false, "text"},
		{"not an object", `[1,2]`, false, "text"},
	} {
		res := h.result("c", "t", json.RawMessage(tt.obs))
		if res.IsError != tt.isError || len(res.Content) == 0 {
			t.Errorf("%s: %+v", tt.name, res)
			continue
		}
		kind := map[string]string{"*mcp.TextContent": "text", "*mcp.ImageContent": "image", "*mcp.AudioContent": "audio"}[fmt.Sprintf("%T", res.Content[0])]
		if kind != tt.kind {
			t.Errorf("%s: content %T, want %s", tt.name, res.Content[0], tt.kind)
		}
		if text, ok := res.Content[0].(*sdk.TextContent); ok && text.Text != tt.obs {
			t.Errorf("%s: the text is %s", tt.name, text.Text)
		}
	}
}
