package vendorfixture_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/voicebox-go/voicebox/internal/core/live/vendorfixture"
)

// These tests hold the fixture to what the real vendors refuse, with a bare WebSocket client, so
// a relay test that passes against it could not pass by the fixture's leniency.

const bound = 10 * time.Second

func dial(t *testing.T, url string, h http.Header) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	t.Cleanup(func() { c.CloseNow() })
	return c
}

func send(t *testing.T, c *websocket.Conn, frame string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, []byte(frame)); err != nil {
		t.Fatalf("write: %v", err)
	}
}

// next reads frames until one whose text contains want, and returns it; or fails.
func next(t *testing.T, c *websocket.Conn, want string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("no frame with %q: %v", want, err)
		}
		if strings.Contains(string(b), want) {
			return string(b)
		}
	}
}

// closed reads until the connection closes and returns its close code.
func closed(t *testing.T, c *websocket.Conn) websocket.StatusCode {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	for {
		if _, _, err := c.Read(ctx); err != nil {
			return websocket.CloseStatus(err)
		}
	}
}

func openAI(t *testing.T, fx *vendorfixture.Fixture, extra http.Header) *websocket.Conn {
	h := http.Header{"Authorization": {"Bearer " + fx.Key()}}
	for k, v := range extra {
		h[k] = v
	}
	c := dial(t, fx.OpenAIURL()+"?model=gpt-realtime", h)
	next(t, c, `"session.created"`)
	return c
}

const gaSession = `{"type":"session.update","session":{"type":"realtime","model":"gpt-realtime","audio":{"input":{"format":{"type":"audio/pcm","rate":24000}},"output":{"format":{"type":"audio/pcm","rate":24000},"voice":"alloy"}}}}`

func TestOpenAIRefusals(t *testing.T) {
	t.Parallel()
	audio := `{"type":"input_audio_buffer.append","audio":"` + base64.StdEncoding.EncodeToString(make([]byte, 960)) + `"}`
	for _, tc := range []struct {
		name   string
		frames []string
		error  string
	}{
		{"beta session shape", []string{`{"type":"session.update","session":{"modalities":["audio","text"],"voice":"alloy","input_audio_format":"pcm16"}}`}, "beta_api_shape_disabled"},
		{"session without its type", []string{`{"type":"session.update","session":{"instructions":"x"}}`}, "beta_api_shape_disabled"},
		{"input at 16 kHz", []string{strings.Replace(gaSession, `"rate":24000}},"output"`, `"rate":16000}},"output"`, 1)}, "only audio/pcm at 24000 Hz"},
		{"audio before setup", []string{audio}, "session_not_configured"},
		{"unknown event", []string{`{"type":"session.delete"}`}, "invalid_event"},
		{"output for an unknown call", []string{gaSession, `{"type":"conversation.item.create","item":{"type":"function_call_output","call_id":"nope","output":"{}"}}`}, "no function call nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fx := vendorfixture.Start(t, vendorfixture.Options{})
			c := openAI(t, fx, nil)
			for _, f := range tc.frames {
				send(t, c, f)
			}
			next(t, c, tc.error)
			if len(fx.Violations()) == 0 {
				t.Fatal("no violation recorded")
			}
		})
	}
	t.Run("beta header", func(t *testing.T) {
		t.Parallel()
		fx := vendorfixture.Start(t, vendorfixture.Options{})
		c := dial(t, fx.OpenAIURL()+"?model=gpt-realtime", http.Header{"Authorization": {"Bearer " + fx.Key()}, "OpenAI-Beta": {"realtime=v1"}})
		if code := closed(t, c); code != 4000 {
			t.Fatalf("close code %d; want 4000", code)
		}
	})
	t.Run("wrong key", func(t *testing.T) {
		t.Parallel()
		fx := vendorfixture.Start(t, vendorfixture.Options{})
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		defer cancel()
		_, resp, err := websocket.Dial(ctx, fx.OpenAIURL()+"?model=gpt-realtime", &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer nope"}}})
		if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("dial with a wrong key: %v", err)
		}
	})
	t.Run("response ordering", func(t *testing.T) {
		t.Parallel()
		held := make(chan func(), 1)
		fx := vendorfixture.Start(t, vendorfixture.Options{Script: vendorfixture.Script{OnSetup: func(c *vendorfixture.Conn) {
			held <- c.CallToolsHeld(vendorfixture.ToolCall{ID: "call_1", Name: "f", Args: `{}`})
		}}})
		c := openAI(t, fx, nil)
		send(t, c, gaSession)
		next(t, c, `"response.function_call_arguments.done"`)
		send(t, c, `{"type":"response.create"}`)
		next(t, c, "conversation_already_has_active_response")
		(<-held)()
		next(t, c, `"response.done"`)
		send(t, c, `{"type":"response.create"}`)
		next(t, c, "function_call_output_missing")
		send(t, c, `{"type":"conversation.item.create","item":{"type":"function_call_output","call_id":"call_1","output":"{}"}}`)
		send(t, c, `{"type":"response.create"}`)
		next(t, c, `"response.done"`)
		if v := fx.Violations(); len(v) != 2 {
			t.Fatalf("violations %q; want the two early response.create", v)
		}
	})
}

func gemini(t *testing.T, fx *vendorfixture.Fixture, query string) *websocket.Conn {
	return dial(t, fx.GeminiURL()+query, http.Header{"x-goog-api-key": {fx.Key()}})
}

func TestGeminiRefusals(t *testing.T) {
	t.Parallel()
	setup := `{"setup":{"model":"models/gemini-3.8-live","generationConfig":{"responseModalities":["AUDIO"],"thinkingConfig":{"thinkingBudget":-1}}}}`
	audio := func(mime string) string {
		return `{"realtimeInput":{"audio":{"mimeType":"` + mime + `","data":"` + base64.StdEncoding.EncodeToString(make([]byte, 640)) + `"}}}`
	}
	for _, tc := range []struct {
		name   string
		frames []string
		code   websocket.StatusCode
	}{
		{"audio before setup", []string{audio("audio/pcm;rate=16000")}, 1007},
		{"both thinking fields", []string{`{"setup":{"model":"models/gemini-3.8-live-extended-thinking","generationConfig":{"thinkingConfig":{"thinkingBudget":-1,"thinkingLevel":"low"}}}}`}, 1007},
		{"unknown model", []string{`{"setup":{"model":"models/gemini-2.0-flash-live"}}`}, 1008},
		{"audio at 24 kHz", []string{setup, audio("audio/pcm;rate=24000")}, 1007},
		{"answer to an unknown call", []string{setup, `{"toolResponse":{"functionResponses":[{"id":"x","name":"f","response":{"output":{}}}]}}`}, 1007},
		{"second setup", []string{setup, setup}, 1007},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fx := vendorfixture.Start(t, vendorfixture.Options{})
			c := gemini(t, fx, "")
			for _, f := range tc.frames {
				send(t, c, f)
			}
			if code := closed(t, c); code != tc.code {
				t.Fatalf("close code %d; want %d", code, tc.code)
			}
			if len(fx.Violations()) == 0 {
				t.Fatal("no violation recorded")
			}
		})
	}
	t.Run("wrong key", func(t *testing.T) {
		t.Parallel()
		fx := vendorfixture.Start(t, vendorfixture.Options{})
		c := dial(t, fx.GeminiURL(), http.Header{"x-goog-api-key": {"nope"}})
		if code := closed(t, c); code != 1008 {
			t.Fatalf("close code %d; want 1008", code)
		}
	})
	t.Run("key in the query, binary frames", func(t *testing.T) {
		t.Parallel()
		fx := vendorfixture.Start(t, vendorfixture.Options{})
		c := dial(t, fx.GeminiURL()+"?key="+fx.Key(), nil)
		send(t, c, setup)
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		defer cancel()
		typ, b, err := c.Read(ctx)
		if err != nil || typ != websocket.MessageBinary || string(b) != `{"setupComplete":{}}` {
			t.Fatalf("after setup: %v %v %s", err, typ, b)
		}
		send(t, c, audio("audio/pcm;rate=16000"))
		conn := fx.Conn(t, 0, bound)
		conn.Wait(t, bound, "audio", func(c *vendorfixture.Conn) bool { return c.AudioBytes() == 640 })
		if v := fx.Violations(); len(v) != 0 {
			t.Fatalf("violations %q", v)
		}
		var m map[string]any
		if json.Unmarshal(b, &m) != nil {
			t.Fatal("setupComplete does not parse")
		}
	})
}

func TestTone(t *testing.T) {
	t.Parallel()
	b := vendorfixture.Tone(16000, 20, 1000)
	if len(b) != 640 {
		t.Fatalf("20 ms at 16 kHz: %d bytes", len(b))
	}
	peak := 0
	for i := 0; i < len(b); i += 2 {
		v := int(int16(uint16(b[i]) | uint16(b[i+1])<<8))
		peak = max(peak, v, -v)
	}
	if peak < 10000 || peak > 11000 {
		t.Fatalf("peak %d; want about a third of full scale", peak)
	}
}
