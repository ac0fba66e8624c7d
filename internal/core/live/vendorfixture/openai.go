package vendorfixture

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/coder/websocket"
)

// sendBound bounds one frame the fixture writes.
const sendBound = 10 * time.Second

// betaSessionFields are the beta session's top-level fields; the GA endpoint refuses them.
var betaSessionFields = []string{"modalities", "voice", "input_audio_format", "output_audio_format", "input_audio_transcription", "turn_detection"}

func (f *Fixture) serveOpenAI(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+f.opts.Key {
		f.mu.Lock()
		f.violations = append(f.violations, "openai: a connection without the right bearer")
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"error":{"type":"invalid_request_error","code":"invalid_api_key","message":"Incorrect API key provided."}}`))
		return
	}
	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	ws.SetReadLimit(1 << 24)
	c := newConn(f, OpenAI, ws, r.Header.Clone())
	c.Model = r.URL.Query().Get("model")
	f.add(c)
	defer c.ended(ws)
	if r.Header.Get("OpenAI-Beta") != "" {
		f.violate(c, "the OpenAI-Beta header on the GA endpoint")
		ws.Close(4000, "beta_api_shape_disabled")
		return
	}
	if !slices.Contains(OpenAIModels, c.Model) {
		f.violate(c, "unknown model "+c.Model)
		c.oaError("invalid_request_error", "model_not_found", "The model "+c.Model+" does not exist.")
		ws.Close(websocket.StatusPolicyViolation, "model_not_found")
		return
	}
	c.SendJSON(map[string]any{"type": "session.created", "event_id": c.id("event"),
		"session": map[string]any{"type": "realtime", "object": "realtime.session", "id": c.id("sess"), "model": c.Model}})
	for {
		typ, b, err := ws.Read(context.Background())
		if err != nil {
			return
		}
		c.openAIFrame(b, typ == websocket.MessageBinary)
	}
}

// ended records how the connection ended.
func (c *Conn) ended(ws *websocket.Conn) {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	ws.CloseNow()
	c.notify()
}

func (c *Conn) id(prefix string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	return fmt.Sprintf("%s_%04d", prefix, c.seq)
}

// oaError sends an OpenAI error event.
func (c *Conn) oaError(typ, code, message string) {
	c.SendJSON(map[string]any{"type": "error", "event_id": c.id("event"),
		"error": map[string]any{"type": typ, "code": code, "message": message}})
}

// refuse records a violation and answers it with an error event.
func (c *Conn) refuse(code, message string) {
	c.f.violate(c, code+": "+message)
	c.oaError("invalid_request_error", code, message)
}

func (c *Conn) openAIFrame(b []byte, binary bool) {
	var ev struct {
		Type    string          `json:"type"`
		Session json.RawMessage `json:"session"`
		Audio   string          `json:"audio"`
		Item    *struct {
			Type    string `json:"type"`
			Role    string `json:"role"`
			CallID  string `json:"call_id"`
			Output  string `json:"output"`
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		} `json:"item"`
	}
	if err := json.Unmarshal(b, &ev); err != nil || ev.Type == "" {
		c.record(Frame{Type: "(unparseable)", Raw: b, Binary: binary})
		c.refuse("invalid_json", "the event is not a JSON object with a type")
		return
	}
	fr := Frame{Type: ev.Type, Raw: b, Binary: binary}
	if ev.Type == "input_audio_buffer.append" && !c.f.opts.KeepAudio {
		fr.Raw = nil
	}
	c.record(fr)
	s := c.f.opts.Script
	switch ev.Type {
	case "session.update":
		if why := checkGASession(ev.Session); why != "" {
			code := "invalid_value"
			if why == "beta" {
				code, why = "beta_api_shape_disabled", "the session uses the beta shape; the GA endpoint takes session.type \"realtime\" with audio nested under audio"
			}
			c.refuse(code, why)
			return
		}
		c.mu.Lock()
		first := !c.setup
		c.setup = true
		c.mu.Unlock()
		if first && s.NoAck {
			return
		}
		c.ackOpenAI(ev.Session)
		if first && s.OnSetup != nil {
			s.OnSetup(c)
		}
	case "input_audio_buffer.append":
		c.mu.Lock()
		acked := c.acked
		c.mu.Unlock()
		if !acked {
			c.refuse("session_not_configured", "audio arrived before the session was configured")
			return
		}
		pcm, err := base64.StdEncoding.DecodeString(ev.Audio)
		if err != nil || len(pcm)%2 != 0 {
			c.refuse("invalid_value", "audio is not base64 PCM16")
			return
		}
		c.mu.Lock()
		c.audioBytes += len(pcm)
		c.mu.Unlock()
		c.notify() // a waiter on AudioBytes wakes now, not at the next frame
		if s.OnAudio != nil {
			s.OnAudio(c, pcm)
		}
	case "input_audio_buffer.commit", "input_audio_buffer.clear", "conversation.item.truncate":
	case "conversation.item.create":
		if ev.Item == nil {
			c.refuse("missing_required_parameter", "conversation.item.create needs an item")
			return
		}
		switch ev.Item.Type {
		case "message":
			for _, part := range ev.Item.Content {
				if part.Type == "input_text" && s.OnText != nil {
					s.OnText(c, part.Text)
				}
			}
		case "function_call_output":
			c.mu.Lock()
			known := c.outstanding[ev.Item.CallID]
			delete(c.outstanding, ev.Item.CallID)
			c.mu.Unlock()
			if !known {
				c.refuse("invalid_value", "no function call "+ev.Item.CallID+" is waiting for output")
				return
			}
			if s.OnToolOutput != nil {
				s.OnToolOutput(c, ev.Item.CallID, json.RawMessage(mustJSON(ev.Item.Output)))
			}
		default:
			c.refuse("invalid_value", "unknown item type "+ev.Item.Type)
		}
	case "response.create":
		c.mu.Lock()
		active, waiting := c.active, len(c.outstanding)
		c.mu.Unlock()
		if active {
			c.refuse("conversation_already_has_active_response", "a response is already in progress")
			return
		}
		if waiting > 0 {
			c.refuse("function_call_output_missing", fmt.Sprintf("%d function calls still have no output", waiting))
			return
		}
		if s.OnResponseCreate != nil {
			s.OnResponseCreate(c)
		} else {
			c.Say("", nil)
		}
	case "response.cancel":
		c.mu.Lock()
		active := c.active
		c.active = false
		c.mu.Unlock()
		if !active {
			c.oaError("invalid_request_error", "response_cancel_not_active", "There is no active response to cancel.")
			return
		}
		c.SendJSON(map[string]any{"type": "response.done", "event_id": c.id("event"),
			"response": map[string]any{"id": c.id("resp"), "object": "realtime.response", "status": "cancelled", "output": []any{}}})
	default:
		c.refuse("invalid_event", "unknown client event type "+ev.Type)
	}
}

func mustJSON(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

// checkGASession returns why a session.update's session is refused, "beta" for the beta shape,
// or "" when it is a good GA session.
func checkGASession(raw json.RawMessage) string {
	var s map[string]json.RawMessage
	if json.Unmarshal(raw, &s) != nil || s == nil {
		return "session.update needs a session object"
	}
	for _, f := range betaSessionFields {
		if _, ok := s[f]; ok {
			return "beta"
		}
	}
	var typ string
	if json.Unmarshal(s["type"], &typ) != nil || typ != "realtime" {
		return "beta"
	}
	var audio struct {
		Input *struct {
			Format *struct {
				Type string `json:"type"`
				Rate int    `json:"rate"`
			} `json:"format"`
		} `json:"input"`
		Output *struct {
			Format *struct {
				Type string `json:"type"`
				Rate int    `json:"rate"`
			} `json:"format"`
			Voice string `json:"voice"`
		} `json:"output"`
	}
	if a, ok := s["audio"]; ok {
		if json.Unmarshal(a, &audio) != nil {
			return "session.audio is not an object"
		}
		if in := audio.Input; in != nil && in.Format != nil && (in.Format.Type != "audio/pcm" || in.Format.Rate != 24000) {
			return fmt.Sprintf("the input format %s at %d Hz: only audio/pcm at 24000 Hz is supported", in.Format.Type, in.Format.Rate)
		}
		if out := audio.Output; out != nil && out.Format != nil && (out.Format.Type != "audio/pcm" || out.Format.Rate != 24000) {
			return fmt.Sprintf("the output format %s at %d Hz: only audio/pcm at 24000 Hz is supported", out.Format.Type, out.Format.Rate)
		}
	}
	if t, ok := s["tools"]; ok {
		var tools []struct {
			Type string `json:"type"`
			Name string `json:"name"`
		}
		if json.Unmarshal(t, &tools) != nil {
			return "session.tools is not a list"
		}
		for _, tl := range tools {
			if tl.Type != "function" || tl.Name == "" {
				return "every tool needs type \"function\" and a name"
			}
		}
	}
	return ""
}
