package mcp

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/voicebox-go/voicebox/shared/refusal"
	"github.com/voicebox-go/voicebox/shared/tool"
)

// toolSync keeps the SDK server's tools equal to the catalogue's declarations. The SDK sends
// notifications/tools/list_changed (debounced) after each change it makes.
type toolSync struct {
	server  *sdk.Server
	handler sdk.ToolHandler

	mu   sync.Mutex
	have map[string]string // name -> the declaration as added, JSON
}

// sync makes the catalogue's declarations the server's tools.
func (s *toolSync) sync(decls []tool.Declaration) {
	tools := make([]*sdk.Tool, 0, len(decls))
	for _, d := range decls {
		params := d.Parameters
		if len(params) == 0 {
			params = json.RawMessage(`{"type":"object"}`)
		}
		tools = append(tools, &sdk.Tool{Name: d.Name, Description: d.Description, InputSchema: params})
	}
	s.syncTools(tools)
}

// syncTools adds what is new or changed in tools and removes what is gone.
func (s *toolSync) syncTools(tools []*sdk.Tool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	want := make(map[string]bool, len(tools))
	for _, t := range tools {
		want[t.Name] = true
	}
	var gone []string
	for name := range s.have {
		if !want[name] {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		slices.Sort(gone)
		s.server.RemoveTools(gone...)
		for _, name := range gone {
			delete(s.have, name)
		}
	}
	for _, t := range tools {
		key, err := json.Marshal(t)
		if err != nil || s.have[t.Name] == string(key) || !objectSchema(t.InputSchema) {
			continue // AddTool panics on a schema that is not an object's; the catalogue checked it
		}
		s.server.AddTool(t, s.handler)
		s.have[t.Name] = string(key)
	}
}

// callTool runs one tools/call through the catalogue, as the client that made it.
func (h *Handler) callTool(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	client := ""
	if req.Extra != nil && req.Extra.TokenInfo != nil {
		client = req.Extra.TokenInfo.UserID
	}
	name := req.Params.Name
	if !h.startCall(client) {
		return h.result(client, name, refusalJSON(refusal.New(refusal.TooManyCalls,
			"this client has %d tool calls running, its bound; wait for one to answer", MaxCallsPerClient))), nil
	}
	defer h.endCall(client)
	if h.opts.Attribute != nil {
		ctx = h.opts.Attribute(ctx, client)
	}
	args := req.Params.Arguments
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	return h.result(client, name, h.opts.Catalogue.Call(ctx, name, args)), nil
}

func (h *Handler) startCall(client string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.calls[client] >= MaxCallsPerClient {
		return false
	}
	h.calls[client]++
	return true
}

func (h *Handler) endCall(client string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.calls[client]--; h.calls[client] <= 0 {
		delete(h.calls, client)
	}
}

// answer is the part of an observation the result is shaped by: a refusal, or media
// (read_media_file's observation: kind image or audio, its type, its bytes in base64).
type answer struct {
	Refused  refusal.Rule `json:"refused"`
	Why      string       `json:"why"`
	Kind     string       `json:"kind"`
	MIMEType string       `json:"mimeType"`
	Data     []byte       `json:"data"`
	Path     string       `json:"path"`
	Size     int64        `json:"size"`
}

// readAnswer decodes an observation's answer from its top-level members, matching their names
// as encoding/json matches a struct's fields (exactly, else without regard to case).
func readAnswer(members map[string]json.RawMessage) answer {
	var a answer
	fields := map[string]any{"refused": &a.Refused, "why": &a.Why, "kind": &a.Kind, "mimetype": &a.MIMEType, "data": &a.Data, "path": &a.Path, "size": &a.Size}
	for k, v := range members {
		if f, ok := fields[strings.ToLower(k)]; ok {
			json.Unmarshal(v, f)
		}
	}
	return a
}

// result turns the catalogue's answer into a tool result, and logs one line in the relay's log
// (the protocol's own logging is deprecated, SEP-2577: a client reads the result, the host the
// relay's log).
//
// The observation is split once into its top-level members (topMembers): a 4 KiB read_file's
// content is scanned for its closing quote and never decoded, and only the small members the
// result depends on are.
func (h *Handler) result(client, name string, obs json.RawMessage) *sdk.CallToolResult {
	members, _ := topMembers(obs)
	a := readAnswer(members)
	res := &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(obs)}}}
	level := slog.LevelInfo
	// No structuredContent: it would carry the observation a second time (a 4 KiB read_file costs
	// about 100 us more), and the text is that JSON already.
	made, isMade := madeResult(obs, members)
	switch {
	case isMade:
		// A tool (a WebMCP tool of a mini-app) that answered an MCP tool result: it goes to the
		// client as it was made, content, structuredContent and isError.
		res = made
		if made.IsError {
			level = slog.LevelWarn
		}
	case a.Refused != "":
		res.IsError = true
		level = slog.LevelWarn
	case len(a.Data) > 0 && a.MIMEType != "" && (a.Kind == "image" || a.Kind == "audio"):
		// Media goes as the protocol's image or audio content, and the text says what it is
		// without the bytes a second time.
		meta, _ := json.Marshal(map[string]any{"path": a.Path, "mimeType": a.MIMEType, "kind": a.Kind, "size": a.Size})
		media := sdk.Content(&sdk.ImageContent{Data: a.Data, MIMEType: a.MIMEType})
		if a.Kind == "audio" {
			media = &sdk.AudioContent{Data: a.Data, MIMEType: a.MIMEType}
		}
		res.Content = []sdk.Content{media, &sdk.TextContent{Text: string(meta)}}
	}
	h.log.Log(context.Background(), level, "mcp: tool call", "client", client, "tool", name, "refused", a.Refused, "why", a.Why)
	return res
}

// resultKeys are the members of an MCP tool result an observation may have to be passed as one.
var resultKeys = map[string]bool{"content": true, "structuredContent": true, "isError": true, "_meta": true}

// contentTypes are the content types of the protocol's tool results.
var contentTypes = map[string]bool{"text": true, "image": true, "audio": true, "resource_link": true, "resource": true}

// madeResult reads obs, whose top-level members are members, as an MCP tool result when it is
// one: an object with a content array of the protocol's content items and no members but a
// result's. Any other observation (every built-in tool's, a refusal) is not.
func madeResult(obs json.RawMessage, members map[string]json.RawMessage) (*sdk.CallToolResult, bool) {
	if members["content"] == nil {
		return nil, false
	}
	for k := range members {
		if !resultKeys[k] {
			return nil, false
		}
	}
	var items []struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(members["content"], &items) != nil {
		return nil, false
	}
	for _, it := range items {
		if !contentTypes[it.Type] {
			return nil, false
		}
	}
	var res sdk.CallToolResult
	if json.Unmarshal(obs, &res) != nil {
		return nil, false
	}
	if res.Content == nil {
		res.Content = []sdk.Content{}
	}
	return &res, true
}

func refusalJSON(r *refusal.Refusal) json.RawMessage {
	b, _ := json.Marshal(r)
	return b
}

// objectSchema reports whether schema is a JSON object whose type is "object".
func objectSchema(schema any) bool {
	b, err := json.Marshal(schema)
	if err != nil {
		return false
	}
	var m struct {
		Type any `json:"type"`
	}
	return json.Unmarshal(b, &m) == nil && m.Type == "object"
}

// textResult is a tool result encoded by Voicebox when it is what every built-in tool answers
// (one text item, maybe isError, nothing else), and by the SDK otherwise. The SDK encodes a
// result through its content types, each level's JSON checked and compacted again by the level
// above it (the 4 KiB text of a read three times, with the answer's own encoding); this writes
// it once, byte for byte as the SDK would (TestTextResultEncodesAsTheSDK).
type textResult struct {
	*sdk.CallToolResult
}

// MarshalJSON implements json.Marshaler.
func (r textResult) MarshalJSON() ([]byte, error) {
	res := r.CallToolResult
	text, ok := onlyText(res)
	if !ok {
		return res.MarshalJSON()
	}
	s, err := json.Marshal(text) // escaped as the SDK's TextContent escapes it
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(s)+64)
	b = append(b, `{"content":[{"type":"text","text":`...)
	b = append(b, s...)
	b = append(b, "}]"...)
	if res.IsError {
		b = append(b, `,"isError":true`...)
	}
	return append(b, '}'), nil
}

// onlyText is res's text when res is one text item with no annotations or metadata, an
// optional isError and nothing else.
func onlyText(res *sdk.CallToolResult) (string, bool) {
	if res == nil || len(res.Content) != 1 || res.Meta != nil || res.StructuredContent != nil ||
		res.InputRequests != nil || res.RequestState != "" || res.NeedsInput() {
		return "", false
	}
	t, ok := res.Content[0].(*sdk.TextContent)
	if !ok || t.Meta != nil || t.Annotations != nil {
		return "", false
	}
	return t.Text, true
}
