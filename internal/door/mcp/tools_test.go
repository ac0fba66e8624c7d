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

// TestTextResultEncodesAsTheSDK: a result Voicebox encodes itself (one text item, maybe isError)
// is byte for byte the SDK's encoding of it, texts of every kind of character among them; any
// other result is the SDK's own.
func TestTextResultEncodesAsTheSDK(t *testing.T) {
	t.Parallel()
	text := func(s string) []sdk.Content { return []sdk.Content{&sdk.TextContent{Text: s}} }
	for _, res := range []*sdk.CallToolResult{
		{Content: text(`{"content":"notes","path":"a.md"}`)},
		{Content: text(`{"refused":"outside-root","why":"no"}`), IsError: true},
		{Content: text("")},
		{Content: text("<a href=\"x\">&amp;</a>\u2028\u2029\x00\x1f\t\n\\ é 😀 \xff")},
		{Content: text("x"), StructuredContent: map[string]any{"a": 1}},
		{Content: []sdk.Content{&sdk.TextContent{Text: "x", Annotations: &sdk.Annotations{Priority: 1}}}},
		{Content: []sdk.Content{&sdk.ImageContent{Data: []byte("png"), MIMEType: "image/png"}, &sdk.TextContent{Text: "{}"}}},
		{Content: []sdk.Content{}},
		{Content: text("x"), Meta: sdk.Meta{"k": "v"}},
	} {
		want, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(textResult{res})
		if err != nil || string(got) != string(want) {
			t.Errorf("textResult encoded %s (%v), the SDK %s", got, err, want)
		}
	}
}
