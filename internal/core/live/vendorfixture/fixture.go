// Package vendorfixture is a local stand-in for the two live-voice vendors: a WebSocket server that
// speaks OpenAI Realtime (GA) and Gemini Live (BidiGenerateContent) frames as the vendors do, and
// refuses what they refuse. The relay reaches it because vendor base URLs are configurable; no
// test ever calls a paid vendor.
//
// It is written from the vendors' protocol, independently of the relay's providers, so a test
// against it checks the relay, not the relay against itself. Every connection records each frame
// the relay sent (Conn.Frames), and every refusal the fixture made is kept as a violation
// (Fixture.Violations): a passing test asserts there are none.
//
// What it refuses, as the real services do:
//   - OpenAI: a wrong or missing bearer (HTTP 401), the OpenAI-Beta header (close 4000
//     beta_api_shape_disabled), a session.update in the beta shape or without type "realtime",
//     an audio rate other than 24000, audio before the session is configured, response.create
//     while a response is active or before every function call has its output, an output for an
//     unknown call, an unknown event type;
//   - Gemini: a wrong or missing key (close 1008), anything before setup (close 1007), both
//     thinkingBudget and thinkingLevel (1007), an unknown model (1008), audio at a rate other than
//     16000 (1007), a tool response for an unknown call (1007), a second setup (1007).
//
// A test scripts the vendor's side with Script: on setup, audio, text, tool outputs and
// response.create, it answers with Conn's actions (Say, Hear, CallTools, SpeechStarted, Close...).
package vendorfixture

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// Vendor names which protocol a connection speaks.
type Vendor string

// The two vendors.
const (
	OpenAI Vendor = "openai"
	Gemini Vendor = "gemini"
)

// The paths the fixture serves, as the vendors do.
const (
	OpenAIPath = "/v1/realtime"
	GeminiPath = "/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent"
)

// DefaultKey is the key the fixture accepts when Options.Key is empty.
const DefaultKey = "fixture-key-7f3a9c21d0e84b65"

// OpenAIModels and GeminiModels are the models the fixture knows; any other is refused.
var (
	OpenAIModels = []string{"gpt-realtime", "gpt-4o-realtime-preview", "gpt-4o-mini-realtime-preview"}
	GeminiModels = []string{"models/gemini-3.8-live", "models/gemini-3.8-live-extended-thinking", "models/gemini-3.8-flash"}
)

// Script is how a test plays the vendor. Every hook is optional and runs on the connection's
// reader goroutine, after the frame that triggered it was recorded and checked.
type Script struct {
	// NoAck keeps the fixture from acknowledging a good setup (session.updated, setupComplete);
	// the test calls Conn.Ack itself.
	NoAck bool
	// OnSetup runs after a good setup was acknowledged.
	OnSetup func(c *Conn)
	// OnAudio gets each chunk of PCM16 the relay sent.
	OnAudio func(c *Conn, pcm []byte)
	// OnText gets text the person typed.
	OnText func(c *Conn, text string)
	// OnToolOutput gets a tool call's answer: OpenAI's output text, Gemini's response object.
	OnToolOutput func(c *Conn, id string, output json.RawMessage)
	// OnResponseCreate answers an accepted OpenAI response.create; without it the fixture
	// answers with an empty response (response.created then response.done).
	OnResponseCreate func(c *Conn)
}

// Options configure a fixture.
type Options struct {
	// Key is the vendor key both endpoints accept; empty means DefaultKey.
	Key    string
	Script Script
	// KeepAudio keeps the payload of audio frames in Frames (only their count and size are
	// kept otherwise, so a long benchmark does not grow).
	KeepAudio bool
	// TextFrames makes the Gemini side send text frames instead of binary ones.
	TextFrames bool
}

// Fixture is a running vendor stand-in.
type Fixture struct {
	opts Options
	srv  *httptest.Server

	mu         sync.Mutex
	conns      []*Conn
	violations []string
	changed    chan struct{}
}

// Start starts a fixture on 127.0.0.1 and stops it when the test ends.
func Start(tb testing.TB, opts Options) *Fixture {
	tb.Helper()
	if opts.Key == "" {
		opts.Key = DefaultKey
	}
	f := &Fixture{opts: opts, changed: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+OpenAIPath, f.serveOpenAI)
	mux.HandleFunc("GET "+GeminiPath, f.serveGemini)
	f.srv = httptest.NewServer(mux)
	tb.Cleanup(f.Close)
	return f
}

// Key is the key the fixture accepts.
func (f *Fixture) Key() string { return f.opts.Key }

// OpenAIURL is the base URL to give the relay for OpenAI (VOICEBOX_OPENAI_URL).
func (f *Fixture) OpenAIURL() string {
	return "ws" + strings.TrimPrefix(f.srv.URL, "http") + OpenAIPath
}

// GeminiURL is the base URL to give the relay for Gemini (VOICEBOX_GEMINI_URL).
func (f *Fixture) GeminiURL() string {
	return "ws" + strings.TrimPrefix(f.srv.URL, "http") + GeminiPath
}

// Close stops the fixture and closes its connections.
func (f *Fixture) Close() {
	f.srv.CloseClientConnections()
	f.srv.Close()
}

// Conns returns the connections so far, oldest first.
func (f *Fixture) Conns() []*Conn {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*Conn(nil), f.conns...)
}

// Conn waits up to bound for the i-th connection (from 0) and returns it.
func (f *Fixture) Conn(tb testing.TB, i int, bound time.Duration) *Conn {
	tb.Helper()
	deadline := time.After(bound)
	for {
		f.mu.Lock()
		if len(f.conns) > i {
			c := f.conns[i]
			f.mu.Unlock()
			return c
		}
		ch := f.changed
		f.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			tb.Fatalf("vendorfixture: no connection #%d within %v", i, bound)
		}
	}
}

// Violations returns every refusal the fixture made: each is something a real vendor would have
// refused.
func (f *Fixture) Violations() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.violations...)
}

func (f *Fixture) violate(c *Conn, what string) {
	f.mu.Lock()
	f.violations = append(f.violations, string(c.Vendor)+": "+what)
	f.mu.Unlock()
	c.mu.Lock()
	c.violations = append(c.violations, what)
	c.mu.Unlock()
	c.notify()
}

func (f *Fixture) add(c *Conn) {
	f.mu.Lock()
	f.conns = append(f.conns, c)
	close(f.changed)
	f.changed = make(chan struct{})
	f.mu.Unlock()
}

// Frame is one frame the relay sent.
type Frame struct {
	// Type is OpenAI's event type, or Gemini's top-level field ("setup", "toolResponse",
	// "clientContent"), with realtimeInput split into "realtimeInput.audio" and
	// "realtimeInput.text".
	Type string
	// Raw is the frame (empty for audio unless Options.KeepAudio).
	Raw json.RawMessage
	// Binary reports whether it came as a binary frame.
	Binary bool
}

// Conn is one connection the relay made.
type Conn struct {
	Vendor Vendor
	// Model is the model asked for (OpenAI: the URL's model; Gemini: setup.model).
	Model string
	// Header is the upgrade request's header.
	Header http.Header

	f  *Fixture
	ws *websocket.Conn

	mu          sync.Mutex
	frames      []Frame
	violations  []string
	changed     chan struct{}
	setup       bool // the setup message arrived
	acked       bool // the fixture acknowledged it
	lastSession json.RawMessage
	audioBytes  int
	closed      bool
	closeCode   int

	// OpenAI: whether a response is active, the calls still without output, and a sequence for
	// ids.
	active      bool
	outstanding map[string]bool
	seq         int
}

func newConn(f *Fixture, v Vendor, ws *websocket.Conn, h http.Header) *Conn {
	return &Conn{Vendor: v, f: f, ws: ws, Header: h, changed: make(chan struct{}), outstanding: map[string]bool{}}
}

func (c *Conn) notify() {
	c.mu.Lock()
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

func (c *Conn) record(fr Frame) {
	c.mu.Lock()
	c.frames = append(c.frames, fr)
	c.mu.Unlock()
	c.notify()
}

// Frames returns the frames the relay sent on this connection, in order.
func (c *Conn) Frames() []Frame {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Frame(nil), c.frames...)
}

// Types returns the types of the frames the relay sent, in order, leaving out audio.
func (c *Conn) Types() []string {
	var out []string
	for _, fr := range c.Frames() {
		if fr.Type != "input_audio_buffer.append" && fr.Type != "realtimeInput.audio" {
			out = append(out, fr.Type)
		}
	}
	return out
}

// Violations returns this connection's refusals.
func (c *Conn) Violations() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.violations...)
}

// AudioBytes is how many bytes of PCM16 the relay sent.
func (c *Conn) AudioBytes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.audioBytes
}

// Closed reports whether the connection has ended, and its close code.
func (c *Conn) Closed() (bool, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed, c.closeCode
}

// Wait waits up to bound until cond holds for the connection, checking after every frame.
func (c *Conn) Wait(tb testing.TB, bound time.Duration, what string, cond func(c *Conn) bool) {
	tb.Helper()
	deadline := time.After(bound)
	for {
		c.mu.Lock()
		ch := c.changed
		c.mu.Unlock()
		if cond(c) {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			tb.Fatalf("vendorfixture: %s: not within %v; frames: %v; violations: %v", what, bound, c.Types(), c.Violations())
		}
	}
}

// WaitType waits up to bound for the n-th (from 1) frame of type typ and returns it.
func (c *Conn) WaitType(tb testing.TB, bound time.Duration, typ string, n int) Frame {
	tb.Helper()
	var got Frame
	c.Wait(tb, bound, "frame "+typ, func(c *Conn) bool {
		k := 0
		for _, fr := range c.Frames() {
			if fr.Type == typ {
				if k++; k == n {
					got = fr
					return true
				}
			}
		}
		return false
	})
	return got
}

// Close closes the connection from the vendor's side with code and reason.
func (c *Conn) Close(code int, reason string) {
	c.ws.Close(websocket.StatusCode(code), reason)
}

// Send sends raw as the vendor would (Gemini: a binary frame unless Options.TextFrames).
func (c *Conn) Send(raw []byte) {
	typ := websocket.MessageText
	if c.Vendor == Gemini && !c.f.opts.TextFrames {
		typ = websocket.MessageBinary
	}
	ctx, cancel := context.WithTimeout(context.Background(), sendBound)
	defer cancel()
	c.ws.Write(ctx, typ, raw)
}

// SendJSON marshals v and sends it.
func (c *Conn) SendJSON(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	c.Send(b)
}

// Tone returns ms milliseconds of a sine at hz as PCM16 little-endian mono at rate, at a third of
// full scale.
func Tone(rate, ms int, hz float64) []byte {
	n := rate * ms / 1000
	b := make([]byte, 2*n)
	for i := range n {
		v := int16(math.Round(math.Sin(2*math.Pi*hz*float64(i)/float64(rate)) * 32767 / 3))
		b[2*i], b[2*i+1] = byte(v), byte(uint16(v)>>8)
	}
	return b
}
