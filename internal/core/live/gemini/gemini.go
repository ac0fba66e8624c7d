// Package gemini is the live provider for the Gemini Live API (BidiGenerateContent).
//
// It dials the endpoint with the key in the x-goog-api-key header (never in the URL), sends one
// setup message (model, audio response, voice, thinking configuration, system instruction, the
// function declarations when there are any, and both transcriptions) and reports ready only on
// setupComplete. The server's messages are read whether they come as text or binary frames.
//
// The default model thinks with a dynamic budget (thinkingBudget -1); the extended-thinking model
// takes a thinking level instead. The two fields are never sent together: the API refuses that.
//
// A toolCall becomes calls for the host, and the host's answers go back as one toolResponse
// (a refusal under response.error). When the server closes with 1011 while a turn is pending (it
// began: text was sent, speech was heard, the model answered or called a tool; and no
// turnComplete ended it), the provider reconnects once on the fallback model and replays the
// text sent since the turn began; a second failure ends the session. Gemini's barge-in happens upstream (its own voice activity
// detection), so Interrupt sends nothing; tools cannot change mid-session
// (live-update-unsupported).
package gemini

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/voicebox-go/voicebox/internal/core/live"
	"github.com/voicebox-go/voicebox/shared/refusal"
	"github.com/voicebox-go/voicebox/shared/tool"
)

// Name is the provider's registry name.
const Name = "gemini"

// DefaultURL is the Gemini Live endpoint.
const DefaultURL = "wss://generativelanguage.googleapis.com/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent"

// The rates: 16 kHz PCM16 in, 24 kHz out.
const (
	InputRate  = 16000
	OutputRate = 24000
)

// KeyEnv is the environment variable the key comes from.
const KeyEnv = "GEMINI_API_KEY"

// The models.
const (
	// DefaultModel thinks with a dynamic budget.
	DefaultModel = "models/gemini-3.8-live"
	// ExtendedModel takes a thinking level.
	ExtendedModel = "models/gemini-3.8-live-extended-thinking"
	// LegacyThinkingModel is an old id, read as ExtendedModel.
	LegacyThinkingModel = "models/gemini-3.8-thinking"
	// FallbackModel is dialed once when the server fails (1011) while a turn is pending.
	FallbackModel = "models/gemini-3.8-flash"
)

// Voices are the offered prebuilt voices, the default first.
var Voices = []string{"Kore", "Puck", "Charon", "Fenrir", "Aoede", "Leda", "Orus", "Zephyr"}

// ThinkingLevels are the extended model's thinking levels, the default first.
var ThinkingLevels = []string{"low", "medium", "high"}

// maxReplayTexts bounds the texts kept for the fallback's replay.
const maxReplayTexts = 16

// Offer is what the provider registers with.
func Offer() live.Offer {
	return live.Offer{Label: "Gemini Live", InputRate: InputRate, OutputRate: OutputRate,
		Models: []string{DefaultModel, ExtendedModel}, Aliases: map[string]string{LegacyThinkingModel: ExtendedModel},
		Voices: Voices, Thinking: ThinkingLevels, ThinkingModels: []string{ExtendedModel}, KeyEnv: KeyEnv}
}

// Register registers the provider in r.
func Register(r *live.Providers) error { return r.Register(Name, New, Offer()) }

// New is the provider's live.Factory.
func New(env live.Env) (live.Provider, error) {
	if env.Key == "" {
		return nil, refusal.New(refusal.LiveKeyMissing, "no Gemini key is configured: set %s or store one with PUT /api/keys", KeyEnv)
	}
	return &provider{env: env, model: env.Model, pending: map[string]string{}}, nil
}

type provider struct {
	env live.Env

	mu       sync.Mutex
	closed   bool
	model    string
	retried  bool
	turnOpen bool              // a turn began and no turnComplete ended it yet
	pending  map[string]string // call id -> name, still waiting for an answer
	texts    []string          // sent since the current turn began, for the fallback's replay
	reconn   bool              // the current connection is the fallback's
}

func (p *provider) url() string {
	if p.env.BaseURL != "" {
		return p.env.BaseURL
	}
	return DefaultURL
}

func (p *provider) connect() error {
	h := http.Header{}
	h.Set("x-goog-api-key", p.env.Key)
	return p.env.Transport.Connect(context.Background(), p.url(), live.ConnectOptions{Headers: h, OnEvent: p.onEvent})
}

func (p *provider) Start() error { return p.connect() }

// Setup is the setup message for model, exported for tests that check the exact frame.
func Setup(model, voice, thinking, instruction string, decls []tool.Declaration) []byte {
	gen := map[string]any{
		"responseModalities": []string{"AUDIO"},
		"speechConfig":       map[string]any{"voiceConfig": map[string]any{"prebuiltVoiceConfig": map[string]string{"voiceName": voice}}},
	}
	switch model {
	case DefaultModel:
		gen["thinkingConfig"] = map[string]any{"thinkingBudget": -1}
	case ExtendedModel:
		gen["thinkingConfig"] = map[string]any{"thinkingLevel": thinking}
	}
	setup := map[string]any{
		"model":                    model,
		"generationConfig":         gen,
		"inputAudioTranscription":  map[string]any{},
		"outputAudioTranscription": map[string]any{},
	}
	if instruction != "" {
		setup["systemInstruction"] = map[string]any{"parts": []map[string]string{{"text": instruction}}}
	}
	if len(decls) > 0 {
		fds := make([]map[string]any, 0, len(decls))
		for _, d := range decls {
			fd := map[string]any{"name": d.Name, "description": d.Description}
			if len(d.Parameters) > 0 {
				fd["parameters"] = openAPISchema(d.Parameters)
			}
			fds = append(fds, fd)
		}
		setup["tools"] = []map[string]any{{"functionDeclarations": fds}}
	}
	b, _ := json.Marshal(map[string]any{"setup": setup})
	return b
}

// message is every server message field the provider reads.
type message struct {
	SetupComplete *json.RawMessage `json:"setupComplete"`
	ServerContent *struct {
		ModelTurn *struct {
			Parts []struct {
				Text       string `json:"text"`
				Thought    bool   `json:"thought"`
				InlineData *struct {
					MimeType string `json:"mimeType"`
					Data     string `json:"data"`
				} `json:"inlineData"`
			} `json:"parts"`
		} `json:"modelTurn"`
		InputTranscription  *struct{ Text string } `json:"inputTranscription"`
		OutputTranscription *struct{ Text string } `json:"outputTranscription"`
		Interrupted         bool                   `json:"interrupted"`
		TurnComplete        bool                   `json:"turnComplete"`
	} `json:"serverContent"`
	ToolCall *struct {
		FunctionCalls []struct {
			ID   string          `json:"id"`
			Name string          `json:"name"`
			Args json.RawMessage `json:"args"`
		} `json:"functionCalls"`
	} `json:"toolCall"`
	ToolCallCancellation *struct {
		IDs []string `json:"ids"`
	} `json:"toolCallCancellation"`
	GoAway *struct {
		TimeLeft string `json:"timeLeft"`
	} `json:"goAway"`
}

func (p *provider) onEvent(te live.TransportEvent) {
	switch te.Kind {
	case live.TransportOpened:
		p.mu.Lock()
		model := p.model
		p.mu.Unlock()
		if err := p.env.Transport.Send(live.SendHandshake, Setup(model, p.env.Voice, p.env.Thinking, p.env.Instruction, p.env.Tools)); err != nil {
			p.env.Emit(live.Event{Kind: live.EventError, Detail: "the session setup could not be sent"})
		}
		p.env.Emit(live.Event{Kind: live.EventTransportOpen})
	case live.TransportError:
		p.env.Emit(live.Event{Kind: live.EventError, Detail: te.Reason})
	case live.TransportClosed:
		p.closedUpstream(te.Code, te.Reason)
	case live.TransportMessage:
		var m message
		if json.Unmarshal(te.Data, &m) != nil {
			p.env.Log.Info("gemini: unparseable frame ignored", "bytes", len(te.Data))
			return
		}
		p.onMessage(&m)
	}
}

// closedUpstream ends the session, or retries once on the fallback model when the server failed
// (1011) while a turn was pending, whatever the turn was doing.
func (p *provider) closedUpstream(code int, reason string) {
	p.mu.Lock()
	retry := code == 1011 && p.turnOpen && !p.retried && !p.closed
	if retry {
		p.retried, p.reconn, p.model = true, true, FallbackModel
		p.turnOpen = false
		clear(p.pending)
	}
	p.mu.Unlock()
	if !retry {
		p.env.Emit(live.Event{Kind: live.EventClosed, Code: code, Detail: reason})
		return
	}
	p.env.Log.Warn("gemini: the server failed during a turn; retrying once on the fallback model", "model", FallbackModel)
	p.env.Emit(live.Event{Kind: live.EventReconnecting, Detail: "Gemini failed during a turn (1011); retrying once on " + FallbackModel})
	if err := p.connect(); err != nil {
		p.env.Emit(live.Event{Kind: live.EventClosed, Code: 1011, Detail: "the fallback could not connect: " + err.Error()})
	}
}

func (p *provider) onMessage(m *message) {
	if m.SetupComplete != nil {
		p.mu.Lock()
		replay := p.reconn
		texts := append([]string(nil), p.texts...)
		p.reconn = false
		p.mu.Unlock()
		p.env.Emit(live.Event{Kind: live.EventReady})
		if replay {
			for _, t := range texts {
				p.env.Transport.Send(live.SendText, textFrame(t))
			}
		}
	}
	if sc := m.ServerContent; sc != nil {
		if !sc.TurnComplete && (sc.ModelTurn != nil || sc.InputTranscription != nil || sc.OutputTranscription != nil) {
			p.openTurn() // the person spoke or the model answered: a turn is under way
		}
		if sc.InputTranscription != nil && sc.InputTranscription.Text != "" {
			p.env.Emit(live.Event{Kind: live.EventText, Text: sc.InputTranscription.Text, TextKind: live.UserText})
		}
		if sc.ModelTurn != nil {
			for _, part := range sc.ModelTurn.Parts {
				switch {
				case part.InlineData != nil:
					p.audio(part.InlineData.MimeType, part.InlineData.Data)
				case part.Text != "" && !part.Thought:
					p.env.Emit(live.Event{Kind: live.EventText, Text: part.Text, TextKind: live.PlainText})
				}
			}
		}
		if sc.OutputTranscription != nil && sc.OutputTranscription.Text != "" {
			p.env.Emit(live.Event{Kind: live.EventText, Text: sc.OutputTranscription.Text, TextKind: live.ModelText})
		}
		if sc.Interrupted {
			p.env.Emit(live.Event{Kind: live.EventInterrupted})
		}
		if sc.TurnComplete {
			p.mu.Lock()
			p.turnOpen = false
			p.texts = nil
			p.mu.Unlock()
			p.env.Emit(live.Event{Kind: live.EventTurnComplete})
		}
	}
	if tc := m.ToolCall; tc != nil && len(tc.FunctionCalls) > 0 {
		calls := make([]live.Call, 0, len(tc.FunctionCalls))
		p.mu.Lock()
		p.turnOpen = true
		for _, fc := range tc.FunctionCalls {
			p.pending[fc.ID] = fc.Name
			calls = append(calls, live.NewCall(fc.ID, fc.Name, fc.Args))
		}
		p.mu.Unlock()
		p.env.Emit(live.Event{Kind: live.EventToolCall, Calls: calls})
	}
	if cc := m.ToolCallCancellation; cc != nil {
		p.mu.Lock()
		for _, id := range cc.IDs {
			delete(p.pending, id)
		}
		p.mu.Unlock()
	}
	if m.GoAway != nil {
		p.env.Emit(live.Event{Kind: live.EventGoAway, Detail: "Gemini will close this connection in " + m.GoAway.TimeLeft})
	}
}

// audio decodes an inlineData part; its rate comes from the MIME type (24 kHz when it says none).
func (p *provider) audio(mime, data string) {
	if !strings.HasPrefix(mime, "audio/pcm") {
		return
	}
	rate := OutputRate
	if _, r, ok := strings.Cut(mime, "rate="); ok {
		if n, err := strconv.Atoi(r); err == nil && n > 0 {
			rate = n
		}
	}
	pcm, err := base64.StdEncoding.DecodeString(data)
	if err != nil || len(pcm)%2 != 0 {
		p.env.Log.Info("gemini: audio part ignored: not base64 PCM16")
		return
	}
	p.env.Emit(live.Event{Kind: live.EventAudio, PCM: pcm, Rate: rate})
}

// audioHead is the realtimeInput audio frame up to its data.
var audioHead = `{"realtimeInput":{"audio":{"mimeType":"audio/pcm;rate=` + strconv.Itoa(InputRate) + `","data":"`

func (p *provider) SendAudio(pcm []byte) error {
	return live.AudioFrame(audioHead, `"}}}`, pcm, p.sendAudio)
}

func (p *provider) sendAudio(frame []byte) error { return p.env.Transport.Send(live.SendAudio, frame) }

func textFrame(text string) []byte {
	b, _ := json.Marshal(map[string]any{"realtimeInput": map[string]string{"text": text}})
	return b
}

func (p *provider) SendText(text string) error {
	if err := p.env.Transport.Send(live.SendText, textFrame(text)); err != nil {
		return err
	}
	p.mu.Lock()
	if len(p.texts) == maxReplayTexts {
		p.texts = p.texts[1:]
	}
	p.texts = append(p.texts, text)
	p.turnOpen = true
	p.mu.Unlock()
	return nil
}

// openTurn marks a turn pending, for the fallback.
func (p *provider) openTurn() {
	p.mu.Lock()
	p.turnOpen = true
	p.mu.Unlock()
}

func (p *provider) SendToolResponses(results []live.ToolResult) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	var frs []map[string]any
	for _, r := range results {
		name, ok := p.pending[r.ID]
		if !ok {
			p.env.Log.Info("gemini: tool answer for a call not pending dropped", "call", r.ID)
			continue
		}
		resp := map[string]json.RawMessage{"output": r.Result}
		if _, refused := r.Refused(); refused {
			resp = map[string]json.RawMessage{"error": r.Result}
		}
		frs = append(frs, map[string]any{"id": r.ID, "name": name, "response": resp})
	}
	if len(frs) == 0 {
		return false
	}
	b, _ := json.Marshal(map[string]any{"toolResponse": map[string]any{"functionResponses": frs}})
	if p.env.Transport.Send(live.SendControl, b) != nil {
		return false
	}
	for _, fr := range frs {
		delete(p.pending, fr["id"].(string))
	}
	return true
}

func (p *provider) Interrupt(int) error {
	p.env.Log.Info("gemini: barge-in is detected upstream; no client command is sent")
	return nil
}

func (p *provider) UpdateTools([]tool.Declaration, string) error {
	return refusal.New(refusal.LiveUpdateUnsupported, "Gemini Live fixes its tools when the session starts; the new tools apply from the next session")
}

func (p *provider) Close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.env.Transport.Close(1000, "session closed")
}

// openAPISchema rewrites a tool's JSON Schema for Gemini's "parameters", an OpenAPI 3.0 Schema
// object that has no additionalProperties keyword: every one is dropped. Nothing is lost, since
// the catalogue checks each call's arguments against the full schema, unknown keys included,
// before anything runs.
func openAPISchema(raw json.RawMessage) any {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // numbers stay as written
	var v any
	if dec.Decode(&v) != nil {
		return raw
	}
	var strip func(any)
	strip = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			delete(v, "additionalProperties")
			for _, e := range v {
				strip(e)
			}
		case []any:
			for _, e := range v {
				strip(e)
			}
		}
	}
	strip(v)
	return v
}
