package vendorfixture

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"

	"github.com/coder/websocket"
)

// GeminiInputMime is the only audio the fixture takes from the relay for Gemini.
const GeminiInputMime = "audio/pcm;rate=16000"

func (f *Fixture) serveGemini(w http.ResponseWriter, r *http.Request) {
	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	ws.SetReadLimit(1 << 24)
	c := newConn(f, Gemini, ws, r.Header.Clone())
	f.add(c)
	defer c.ended(ws)
	key := r.Header.Get("x-goog-api-key")
	if key == "" {
		key = r.URL.Query().Get("key")
	}
	if key != f.opts.Key {
		c.close1008("API key not valid. Please pass a valid API key.")
		return
	}
	for {
		typ, b, err := ws.Read(context.Background())
		if err != nil {
			return
		}
		if !c.geminiFrame(b, typ == websocket.MessageBinary) {
			return
		}
	}
}

func (c *Conn) close1008(why string) {
	c.f.violate(c, "1008: "+why)
	c.ws.Close(websocket.StatusPolicyViolation, why)
}

func (c *Conn) close1007(why string) {
	c.f.violate(c, "1007: "+why)
	c.ws.Close(websocket.StatusInvalidFramePayloadData, why)
}

// geminiFrame handles one client message and reports whether the connection goes on.
func (c *Conn) geminiFrame(b []byte, binary bool) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil || len(m) != 1 {
		c.record(Frame{Type: "(unparseable)", Raw: b, Binary: binary})
		c.close1007("a client message is a JSON object with exactly one field")
		return false
	}
	var typ string
	for k := range m {
		typ = k
	}
	var input struct {
		Audio *struct {
			Data     string `json:"data"`
			MimeType string `json:"mimeType"`
		} `json:"audio"`
		Text *string `json:"text"`
	}
	if typ == "realtimeInput" {
		if json.Unmarshal(m[typ], &input) != nil {
			c.record(Frame{Type: typ, Raw: b, Binary: binary})
			c.close1007("realtimeInput is not an object")
			return false
		}
		switch {
		case input.Audio != nil:
			typ = "realtimeInput.audio"
		case input.Text != nil:
			typ = "realtimeInput.text"
		}
	}
	fr := Frame{Type: typ, Raw: b, Binary: binary}
	if typ == "realtimeInput.audio" && !c.f.opts.KeepAudio {
		fr.Raw = nil
	}
	c.record(fr)
	c.mu.Lock()
	setup := c.setup
	c.mu.Unlock()
	if typ != "setup" && !setup {
		c.close1007("the first message must be setup, not " + typ)
		return false
	}
	s := c.f.opts.Script
	switch typ {
	case "setup":
		if setup {
			c.close1007("setup was already sent")
			return false
		}
		return c.geminiSetup(m["setup"])
	case "realtimeInput.audio":
		c.mu.Lock()
		acked := c.acked
		c.mu.Unlock()
		if !acked {
			c.close1007("audio arrived before setupComplete")
			return false
		}
		if input.Audio.MimeType != GeminiInputMime {
			c.close1007("audio must be " + GeminiInputMime + ", not " + input.Audio.MimeType)
			return false
		}
		pcm, err := base64.StdEncoding.DecodeString(input.Audio.Data)
		if err != nil || len(pcm)%2 != 0 {
			c.close1007("audio data is not base64 PCM16")
			return false
		}
		c.mu.Lock()
		c.audioBytes += len(pcm)
		c.mu.Unlock()
		c.notify() // a waiter on AudioBytes wakes now, not at the next frame
		if s.OnAudio != nil {
			s.OnAudio(c, pcm)
		}
	case "realtimeInput.text":
		if s.OnText != nil {
			s.OnText(c, *input.Text)
		}
	case "clientContent":
		var cc struct {
			Turns []struct {
				Parts []struct {
					Text string `json:"text"`
				} `json:"parts"`
			} `json:"turns"`
		}
		if json.Unmarshal(m[typ], &cc) != nil {
			c.close1007("clientContent is not an object")
			return false
		}
		for _, t := range cc.Turns {
			for _, p := range t.Parts {
				if p.Text != "" && s.OnText != nil {
					s.OnText(c, p.Text)
				}
			}
		}
	case "toolResponse":
		var tr struct {
			FunctionResponses []struct {
				ID       string          `json:"id"`
				Name     string          `json:"name"`
				Response json.RawMessage `json:"response"`
			} `json:"functionResponses"`
		}
		if json.Unmarshal(m[typ], &tr) != nil || len(tr.FunctionResponses) == 0 {
			c.close1007("toolResponse needs functionResponses")
			return false
		}
		for _, fr := range tr.FunctionResponses {
			c.mu.Lock()
			known := c.outstanding[fr.ID]
			delete(c.outstanding, fr.ID)
			c.mu.Unlock()
			if !known {
				c.close1007("no function call " + fr.ID + " is waiting for a response")
				return false
			}
			if s.OnToolOutput != nil {
				s.OnToolOutput(c, fr.ID, fr.Response)
			}
		}
	default:
		c.close1007("unknown client message " + typ)
		return false
	}
	return true
}

func (c *Conn) geminiSetup(raw json.RawMessage) bool {
	var setup struct {
		Model            string `json:"model"`
		GenerationConfig *struct {
			ThinkingConfig map[string]json.RawMessage `json:"thinkingConfig"`
		} `json:"generationConfig"`
		Tools []struct {
			FunctionDeclarations []struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
			} `json:"functionDeclarations"`
		} `json:"tools"`
	}
	if json.Unmarshal(raw, &setup) != nil {
		c.close1007("setup is not an object")
		return false
	}
	if !slices.Contains(GeminiModels, setup.Model) {
		c.close1008(setup.Model + " is not found for API version v1beta, or is not supported for bidiGenerateContent")
		return false
	}
	if g := setup.GenerationConfig; g != nil && g.ThinkingConfig != nil {
		_, budget := g.ThinkingConfig["thinkingBudget"]
		_, level := g.ThinkingConfig["thinkingLevel"]
		if budget && level {
			c.close1007("thinkingBudget and thinkingLevel cannot both be set")
			return false
		}
	}
	for _, t := range setup.Tools {
		for _, fd := range t.FunctionDeclarations {
			if fd.Name == "" {
				c.close1007("a function declaration needs a name")
				return false
			}
			// parameters is an OpenAPI 3.0 Schema object, which has no additionalProperties.
			if len(fd.Parameters) > 0 && hasKey(fd.Parameters, "additionalProperties") {
				c.close1007(`Unknown name "additionalProperties" in the parameters of ` + fd.Name + `: Cannot find field.`)
				return false
			}
		}
	}
	c.mu.Lock()
	c.setup = true
	c.Model = setup.Model
	c.mu.Unlock()
	s := c.f.opts.Script
	if s.NoAck {
		return true
	}
	c.Ack()
	if s.OnSetup != nil {
		s.OnSetup(c)
	}
	return true
}

// hasKey reports whether the JSON value raw holds key in any object at any depth.
func hasKey(raw json.RawMessage, key string) bool {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	var walk func(any) bool
	walk = func(v any) bool {
		switch v := v.(type) {
		case map[string]any:
			if _, ok := v[key]; ok {
				return true
			}
			for _, e := range v {
				if walk(e) {
					return true
				}
			}
		case []any:
			for _, e := range v {
				if walk(e) {
					return true
				}
			}
		}
		return false
	}
	return walk(v)
}
