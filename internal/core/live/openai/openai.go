// Package openai is the live provider for OpenAI's Realtime API in its GA shape.
//
// It dials the realtime endpoint with the key in the Authorization header (never the beta
// header), sends one session.update with the GA session (type "realtime", audio formats and voice
// nested under audio, function tools), and reports ready only on session.updated. It reads both
// the GA event names and the older ones still seen (response.audio.delta and friends), and
// ignores frames it cannot parse.
//
// The tool loop keeps OpenAI's ordering: every function_call_output is sent, then exactly one
// response.create, and only once both the response that asked has ended (response.done) and every
// call it made has its output, whichever comes last. Arguments that are not a JSON object are
// answered with a correlated refusal (invalid-tool-arguments) by the host, never executed.
// Interrupt cancels the active response and truncates the reply to what was heard.
package openai

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"sync"

	"github.com/voicebox-go/voicebox/internal/core/live"
	"github.com/voicebox-go/voicebox/shared/refusal"
	"github.com/voicebox-go/voicebox/shared/tool"
)

// Name is the provider's registry name.
const Name = "openai"

// DefaultURL is OpenAI's realtime endpoint.
const DefaultURL = "wss://api.openai.com/v1/realtime"

// Rate is the PCM16 rate of both directions: the GA API takes and gives 24 kHz only.
const Rate = 24000

// KeyEnv is the environment variable the key comes from.
const KeyEnv = "OPENAI_API_KEY"

// Models are the offered models, the default first. All of them take the GA session shape.
var Models = []string{"gpt-realtime", "gpt-4o-realtime-preview", "gpt-4o-mini-realtime-preview"}

// Voices are the offered voices, the default first.
var Voices = []string{"alloy", "verse", "shimmer", "ash", "ballad", "coral", "echo", "sage"}

// TranscriptionModel transcribes the person's audio for the captions.
const TranscriptionModel = "gpt-4o-mini-transcribe"

// Offer is what the provider registers with.
func Offer() live.Offer {
	return live.Offer{Label: "OpenAI Realtime", InputRate: Rate, OutputRate: Rate, Models: Models, Voices: Voices, KeyEnv: KeyEnv}
}

// Register registers the provider in r.
func Register(r *live.Providers) error { return r.Register(Name, New, Offer()) }

// New is the provider's live.Factory.
func New(env live.Env) (live.Provider, error) {
	if env.Key == "" {
		return nil, refusal.New(refusal.LiveKeyMissing, "no OpenAI key is configured: set %s or store one with PUT /api/keys", KeyEnv)
	}
	return &provider{env: env, pending: map[string]bool{}, seen: map[string]bool{}}, nil
}

type provider struct {
	env live.Env

	mu             sync.Mutex
	closed         bool
	ready          bool
	responseActive bool            // between response.created and response.done
	createPending  bool            // response.create sent, response.created not yet seen
	wantCreate     bool            // a response must follow (tool outputs, typed text)
	pending        map[string]bool // call ids still waiting for their output
	seen           map[string]bool // call ids already reported
	audioItem      string          // the item whose audio is playing, for truncation
}

func (p *provider) Start() error {
	base := p.env.BaseURL
	if base == "" {
		base = DefaultURL
	}
	u, err := url.Parse(base)
	if err != nil {
		return refusal.New(refusal.LiveUpstreamFailed, "the OpenAI base URL does not parse")
	}
	q := u.Query()
	q.Set("model", p.env.Model)
	u.RawQuery = q.Encode()
	h := http.Header{}
	h.Set("Authorization", "Bearer "+p.env.Key)
	return p.env.Transport.Connect(context.Background(), u.String(), live.ConnectOptions{Headers: h, OnEvent: p.onEvent})
}

// functionTool is a function tool in the GA session.
type functionTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

func tools(decls []tool.Declaration) []functionTool {
	out := make([]functionTool, 0, len(decls))
	for _, d := range decls {
		params := d.Parameters
		if len(params) == 0 {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		out = append(out, functionTool{Type: "function", Name: d.Name, Description: d.Description, Parameters: params})
	}
	return out
}

type audioFormat struct {
	Type string `json:"type"`
	Rate int    `json:"rate"`
}

// SessionUpdate is the GA session.update the provider sends first, exported for tests that check
// the exact frame.
func SessionUpdate(model, voice, instruction string, decls []tool.Declaration) []byte {
	type input struct {
		Format        audioFormat       `json:"format"`
		Transcription map[string]string `json:"transcription"`
		TurnDetection map[string]string `json:"turn_detection"`
	}
	type output struct {
		Format audioFormat `json:"format"`
		Voice  string      `json:"voice"`
	}
	type session struct {
		Type             string   `json:"type"`
		Model            string   `json:"model"`
		Instructions     string   `json:"instructions"`
		OutputModalities []string `json:"output_modalities"`
		Audio            struct {
			Input  input  `json:"input"`
			Output output `json:"output"`
		} `json:"audio"`
		Tools      []functionTool `json:"tools,omitempty"`
		ToolChoice string         `json:"tool_choice,omitempty"`
	}
	s := session{Type: "realtime", Model: model, Instructions: instruction, OutputModalities: []string{"audio"}}
	s.Audio.Input = input{Format: audioFormat{"audio/pcm", Rate}, Transcription: map[string]string{"model": TranscriptionModel}, TurnDetection: map[string]string{"type": "server_vad"}}
	s.Audio.Output = output{Format: audioFormat{"audio/pcm", Rate}, Voice: voice}
	if len(decls) > 0 {
		s.Tools, s.ToolChoice = tools(decls), "auto"
	}
	b, _ := json.Marshal(map[string]any{"type": "session.update", "session": s})
	return b
}

// event is every server event field the provider reads.
type event struct {
	Type       string `json:"type"`
	Delta      string `json:"delta"`
	Transcript string `json:"transcript"`
	ItemID     string `json:"item_id"`
	CallID     string `json:"call_id"`
	Name       string `json:"name"`
	Arguments  string `json:"arguments"`
	Item       *item  `json:"item"`
	Response   *struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Output []item `json:"output"`
	} `json:"response"`
	Error *struct {
		Type    string `json:"type"`
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

type item struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

func (p *provider) onEvent(te live.TransportEvent) {
	switch te.Kind {
	case live.TransportOpened:
		if err := p.env.Transport.Send(live.SendHandshake, SessionUpdate(p.env.Model, p.env.Voice, p.env.Instruction, p.env.Tools)); err != nil {
			p.env.Emit(live.Event{Kind: live.EventError, Detail: "the session setup could not be sent"})
		}
		p.env.Emit(live.Event{Kind: live.EventTransportOpen})
	case live.TransportClosed:
		p.env.Emit(live.Event{Kind: live.EventClosed, Code: te.Code, Detail: te.Reason})
	case live.TransportError:
		p.env.Emit(live.Event{Kind: live.EventError, Detail: te.Reason})
	case live.TransportMessage:
		var ev event
		if json.Unmarshal(te.Data, &ev) != nil {
			p.env.Log.Info("openai: unparseable frame ignored", "bytes", len(te.Data))
			return
		}
		p.onMessage(&ev)
	}
}

func (p *provider) onMessage(ev *event) {
	switch ev.Type {
	case "session.updated":
		p.mu.Lock()
		first := !p.ready
		p.ready = true
		p.mu.Unlock()
		if first {
			p.env.Emit(live.Event{Kind: live.EventReady})
		}
	case "input_audio_buffer.speech_started":
		p.env.Emit(live.Event{Kind: live.EventInterrupted})
	case "response.created":
		p.mu.Lock()
		p.responseActive, p.createPending = true, false
		p.mu.Unlock()
	case "response.output_audio.delta", "response.audio.delta":
		pcm, err := base64.StdEncoding.DecodeString(ev.Delta)
		if err != nil || len(pcm)%2 != 0 {
			p.env.Log.Info("openai: audio delta ignored: not base64 PCM16")
			return
		}
		p.mu.Lock()
		p.audioItem = ev.ItemID
		p.mu.Unlock()
		p.env.Emit(live.Event{Kind: live.EventAudio, PCM: pcm, Rate: Rate})
	case "response.output_audio_transcript.delta", "response.audio_transcript.delta":
		if ev.Delta != "" {
			p.env.Emit(live.Event{Kind: live.EventText, Text: ev.Delta, TextKind: live.ModelText})
		}
	case "response.output_text.delta", "response.text.delta":
		if ev.Delta != "" {
			p.env.Emit(live.Event{Kind: live.EventText, Text: ev.Delta, TextKind: live.PlainText})
		}
	case "conversation.item.input_audio_transcription.completed":
		if ev.Transcript != "" {
			p.env.Emit(live.Event{Kind: live.EventText, Text: ev.Transcript, TextKind: live.UserText})
		}
	case "response.function_call_arguments.done":
		p.calls([]item{{Type: "function_call", CallID: ev.CallID, Name: ev.Name, Arguments: ev.Arguments}})
	case "response.output_item.done":
		if ev.Item != nil && ev.Item.Type == "function_call" {
			p.calls([]item{*ev.Item})
		}
	case "response.done":
		if ev.Response != nil {
			p.calls(ev.Response.Output)
		}
		p.mu.Lock()
		p.responseActive = false
		p.maybeCreate()
		p.mu.Unlock()
		p.env.Emit(live.Event{Kind: live.EventTurnComplete})
	case "error":
		p.mu.Lock()
		p.createPending = false
		p.mu.Unlock()
		if ev.Error == nil {
			return
		}
		if ev.Error.Code == "response_cancel_not_active" {
			return // a cancel that crossed the response's own end
		}
		p.env.Emit(live.Event{Kind: live.EventError, Detail: "OpenAI: " + ev.Error.Message})
	}
}

// calls reports the function calls among items that were not reported yet.
func (p *provider) calls(items []item) {
	var out []live.Call
	p.mu.Lock()
	for _, it := range items {
		if it.Type != "function_call" || it.CallID == "" || p.seen[it.CallID] {
			continue
		}
		p.seen[it.CallID] = true
		p.pending[it.CallID] = true
		p.wantCreate = true
		out = append(out, live.NewCall(it.CallID, it.Name, []byte(it.Arguments)))
	}
	p.mu.Unlock()
	if len(out) > 0 {
		p.env.Emit(live.Event{Kind: live.EventToolCall, Calls: out})
	}
}

// maybeCreate sends the one response.create a turn needs, when nothing is in the way: no
// response active or asked for, and every call answered. p.mu is held.
func (p *provider) maybeCreate() {
	if !p.wantCreate || p.responseActive || p.createPending || len(p.pending) > 0 || p.closed {
		return
	}
	if p.env.Transport.Send(live.SendControl, []byte(`{"type":"response.create"}`)) == nil {
		p.wantCreate, p.createPending = false, true
	}
}

func (p *provider) SendAudio(pcm []byte) error {
	return live.AudioFrame(`{"type":"input_audio_buffer.append","audio":"`, `"}`, pcm, p.sendAudio)
}

func (p *provider) sendAudio(frame []byte) error { return p.env.Transport.Send(live.SendAudio, frame) }

func (p *provider) SendText(text string) error {
	msg := map[string]any{"type": "conversation.item.create", "item": map[string]any{
		"type": "message", "role": "user", "content": []map[string]string{{"type": "input_text", "text": text}}}}
	b, _ := json.Marshal(msg)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.env.Transport.Send(live.SendText, b); err != nil {
		return err
	}
	p.wantCreate = true
	p.maybeCreate()
	return nil
}

func (p *provider) SendToolResponses(results []live.ToolResult) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	sent := false
	for _, r := range results {
		if !p.pending[r.ID] {
			p.env.Log.Info("openai: tool output for a call not pending dropped", "call", r.ID)
			continue
		}
		b, _ := json.Marshal(map[string]any{"type": "conversation.item.create", "item": map[string]string{
			"type": "function_call_output", "call_id": r.ID, "output": string(r.Result)}})
		if p.env.Transport.Send(live.SendControl, b) != nil {
			continue
		}
		delete(p.pending, r.ID)
		sent = true
	}
	p.maybeCreate()
	return sent
}

func (p *provider) Interrupt(playedMs int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.responseActive {
		if err := p.env.Transport.Send(live.SendControl, []byte(`{"type":"response.cancel"}`)); err != nil {
			return err
		}
	}
	if p.audioItem != "" && playedMs >= 0 {
		b, _ := json.Marshal(map[string]any{"type": "conversation.item.truncate", "item_id": p.audioItem, "content_index": 0, "audio_end_ms": playedMs})
		p.audioItem = ""
		return p.env.Transport.Send(live.SendControl, b)
	}
	return nil
}

func (p *provider) UpdateTools(decls []tool.Declaration, instruction string) error {
	b, _ := json.Marshal(map[string]any{"type": "session.update", "session": map[string]any{
		"type": "realtime", "instructions": instruction, "tools": tools(decls), "tool_choice": "auto"}})
	return p.env.Transport.Send(live.SendControl, b)
}

func (p *provider) Close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.env.Transport.Close(1000, "session closed")
}
