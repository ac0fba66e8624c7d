package gemini_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/internal/core/live"
	"github.com/voicebox-go/voicebox/internal/core/live/gemini"
	"github.com/voicebox-go/voicebox/internal/core/live/livetest"
	"github.com/voicebox-go/voicebox/internal/core/live/vendorfixture"
	"github.com/voicebox-go/voicebox/shared/refusal"
	"github.com/voicebox-go/voicebox/shared/tool"
)

var listFiles = tool.Declaration{Name: "list_files", Description: "List files",
	Parameters: json.RawMessage(`{"type":"object","properties":{"dir":{"type":"string"},"at":{"type":"object","properties":{"n":{"type":"number","maximum":6.0000000000000001}},"additionalProperties":false}},"additionalProperties":false}`)}

type rig struct {
	fx  *vendorfixture.Fixture
	rec *livetest.Recorder
	s   *live.Conversation
}

func startRig(t *testing.T, opts vendorfixture.Options, choice live.Choice, tools ...tool.Declaration) *rig {
	t.Helper()
	fx := vendorfixture.Start(t, opts)
	reg := &live.Providers{}
	gemini.Register(reg)
	rec := livetest.NewRecorder()
	choice.Provider = gemini.Name
	s, err := reg.Start(context.Background(), live.Config{Choice: choice, Key: fx.Key(), BaseURL: fx.GeminiURL(),
		Tools: tools, Instruction: "Be brief.", Callbacks: rec.Callbacks()})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		s.Close()
		for _, e := range rec.Events() {
			if strings.Contains(e, fx.Key()) {
				t.Errorf("the key reached a callback: %q", e)
			}
		}
	})
	return &rig{fx: fx, rec: rec, s: s}
}

// clean fails the test when the fixture refused anything the relay sent.
func (r *rig) clean(t *testing.T) {
	t.Helper()
	if v := r.fx.Violations(); len(v) > 0 {
		t.Fatalf("the fixture refused what the relay sent: %q", v)
	}
}

func setupOf(t *testing.T, c *vendorfixture.Conn) map[string]any {
	t.Helper()
	fr := c.WaitType(t, livetest.Bound, "setup", 1)
	var m struct {
		Setup map[string]any `json:"setup"`
	}
	if err := json.Unmarshal(fr.Raw, &m); err != nil {
		t.Fatal(err)
	}
	return m.Setup
}

func TestSetupFrames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		choice   live.Choice
		tools    []tool.Declaration
		model    string
		thinking string
	}{
		{"default model, dynamic budget", live.Choice{}, []tool.Declaration{listFiles}, gemini.DefaultModel, `{"thinkingBudget":-1}`},
		{"extended thinking, a level", live.Choice{Model: gemini.ExtendedModel, Thinking: "high"}, nil, gemini.ExtendedModel, `{"thinkingLevel":"high"}`},
		{"legacy id normalized", live.Choice{Model: gemini.LegacyThinkingModel}, nil, gemini.ExtendedModel, `{"thinkingLevel":"low"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := startRig(t, vendorfixture.Options{}, tc.choice, tc.tools...)
			r.rec.WaitFor(t, "state:ready:", 1)
			c := r.fx.Conn(t, 0, livetest.Bound)
			if c.Header.Get("x-goog-api-key") != r.fx.Key() {
				t.Fatalf("the key was not in the x-goog-api-key header")
			}
			setup := setupOf(t, c)
			if setup["model"] != tc.model {
				t.Fatalf("model %v; want %s", setup["model"], tc.model)
			}
			gen := setup["generationConfig"].(map[string]any)
			th, _ := json.Marshal(gen["thinkingConfig"])
			if string(th) != tc.thinking {
				t.Fatalf("thinkingConfig %s; want %s", th, tc.thinking)
			}
			voice, _ := json.Marshal(gen["speechConfig"])
			if string(voice) != `{"voiceConfig":{"prebuiltVoiceConfig":{"voiceName":"Kore"}}}` {
				t.Fatalf("speechConfig %s", voice)
			}
			_, hasTools := setup["tools"]
			if hasTools != (len(tc.tools) > 0) {
				t.Fatalf("tools present = %v with %d tools", hasTools, len(tc.tools))
			}
			for _, k := range []string{"systemInstruction", "inputAudioTranscription", "outputAudioTranscription"} {
				if _, ok := setup[k]; !ok {
					t.Fatalf("setup lacks %s", k)
				}
			}
			r.clean(t)
		})
	}
	got := gemini.Setup(gemini.DefaultModel, "Puck", "", "x", []tool.Declaration{listFiles})
	want := `{"setup":{"generationConfig":{"responseModalities":["AUDIO"],"speechConfig":{"voiceConfig":{"prebuiltVoiceConfig":{"voiceName":"Puck"}}},"thinkingConfig":{"thinkingBudget":-1}},"inputAudioTranscription":{},"model":"models/gemini-3.8-live","outputAudioTranscription":{},"systemInstruction":{"parts":[{"text":"x"}]},"tools":[{"functionDeclarations":[{"description":"List files","name":"list_files","parameters":{"properties":{"at":{"properties":{"n":{"maximum":6.0000000000000001,"type":"number"}},"type":"object"},"dir":{"type":"string"}},"type":"object"}}]}]}}`
	if string(got) != want {
		t.Fatalf("Setup\n got %s\nwant %s", got, want)
	}
}

func TestReadyAudioAndTranscripts(t *testing.T) {
	t.Parallel()
	for _, frames := range []string{"binary", "text"} {
		t.Run(frames, func(t *testing.T) {
			t.Parallel()
			tone := vendorfixture.Tone(24000, 300, 300)
			r := startRig(t, vendorfixture.Options{KeepAudio: true, TextFrames: frames == "text", Script: vendorfixture.Script{NoAck: true,
				OnAudio: func(c *vendorfixture.Conn, pcm []byte) {
					if c.AudioBytes() >= 2*640 {
						c.Hear("what time is it")
						c.Say("It is noon.", tone)
					}
				}}}, live.Choice{})
			c := r.fx.Conn(t, 0, livetest.Bound)
			c.WaitType(t, livetest.Bound, "setup", 1)
			if err := r.s.SendAudio(make([]byte, 640), gemini.InputRate); refusal.RuleOf(err) != refusal.LiveNotReady {
				t.Fatalf("audio before setupComplete: %v", err)
			}
			c.Ack()
			r.rec.WaitFor(t, "state:ready:", 1)
			in := vendorfixture.Tone(16000, 40, 440)
			if err := r.s.SendAudio(in, 24000); refusal.RuleOf(err) != refusal.LiveRateMismatch {
				t.Fatalf("audio at 24000 Hz: %v; want live-rate-mismatch", err)
			}
			r.s.SendAudio(in[:640], gemini.InputRate)
			r.s.SendAudio(in[640:], gemini.InputRate)
			r.rec.WaitFor(t, "state:turn-complete:", 1)
			fr := c.WaitType(t, livetest.Bound, "realtimeInput.audio", 1)
			var ri struct {
				RealtimeInput struct {
					Audio struct {
						MimeType string `json:"mimeType"`
						Data     []byte `json:"data"`
					} `json:"audio"`
				} `json:"realtimeInput"`
			}
			json.Unmarshal(fr.Raw, &ri)
			if ri.RealtimeInput.Audio.MimeType != "audio/pcm;rate=16000" || !bytes.Equal(ri.RealtimeInput.Audio.Data, in[:640]) {
				t.Fatalf("first audio frame %s", fr.Raw)
			}
			out, rates := r.rec.Audio()
			if !bytes.Equal(out, tone) || len(rates) != 1 || rates[0] != 24000 {
				t.Fatalf("output audio %d bytes at %v", len(out), rates)
			}
			if r.rec.Text(live.UserText) != "what time is it" || r.rec.Text(live.ModelText) != "It is noon." {
				t.Fatalf("transcripts %q / %q", r.rec.Text(live.UserText), r.rec.Text(live.ModelText))
			}
			if c.AudioBytes() != len(in) {
				t.Fatalf("the vendor got %d bytes; want the %d sent after ready", c.AudioBytes(), len(in))
			}
			r.clean(t)
		})
	}
}

func TestToolRoundTripAndRefusal(t *testing.T) {
	t.Parallel()
	responses := make(chan string, 2)
	r := startRig(t, vendorfixture.Options{Script: vendorfixture.Script{
		OnSetup: func(c *vendorfixture.Conn) {
			c.CallTools(vendorfixture.ToolCall{ID: "fc-1", Name: "list_files", Args: `{"dir":"notes"}`},
				vendorfixture.ToolCall{ID: "fc-2", Name: "list_files", Args: `["not","an","object"]`})
		},
		OnToolOutput: func(c *vendorfixture.Conn, id string, resp json.RawMessage) { responses <- id + " " + string(resp) },
	}}, live.Choice{}, listFiles)
	r.rec.WaitFor(t, "calls:", 1)
	calls := r.rec.Calls()
	if len(calls) != 2 || string(calls[0].Args) != `{"dir":"notes"}` || calls[0].Refused != nil || calls[1].Refused == nil {
		t.Fatalf("calls %+v", calls)
	}
	if !r.s.SendToolResponses([]live.ToolResult{{ID: "fc-1", Name: "list_files", Result: json.RawMessage(`{"files":["a.md"]}`)},
		live.RefusalResult(calls[1], calls[1].Refused)}) {
		t.Fatal("SendToolResponses reported false")
	}
	got := []string{<-responses, <-responses}
	if got[0] != `fc-1 {"output":{"files":["a.md"]}}` || !strings.HasPrefix(got[1], `fc-2 {"error":{"refused":"invalid-tool-arguments"`) {
		t.Fatalf("the vendor got %q", got)
	}
	fr := r.fx.Conn(t, 0, livetest.Bound).WaitType(t, livetest.Bound, "toolResponse", 1)
	if !bytes.Contains(fr.Raw, []byte(`"name":"list_files"`)) {
		t.Fatalf("toolResponse lacks the name: %s", fr.Raw)
	}
	if r.s.SendToolResponses([]live.ToolResult{{ID: "fc-1", Result: json.RawMessage(`{}`)}}) {
		t.Fatal("a second answer to the same call was sent")
	}
	r.clean(t)
}

func TestInterruptedTurnCompleteGoAwayAndCancellation(t *testing.T) {
	t.Parallel()
	r := startRig(t, vendorfixture.Options{}, live.Choice{}, listFiles)
	r.rec.WaitFor(t, "state:ready:", 1)
	c := r.fx.Conn(t, 0, livetest.Bound)
	c.Send([]byte(`{"serverContent":{"interrupted":true,"turnComplete":true}}`))
	r.rec.WaitFor(t, "state:turn-complete:", 1)
	c.SpeechStarted()
	r.rec.WaitFor(t, "state:interrupted:", 2)
	if err := r.s.Interrupt(100); err != nil {
		t.Fatal(err)
	}
	c.GoAway("9s")
	r.rec.WaitFor(t, "state:go-away:", 1)
	if ev := r.rec.Events(); !strings.Contains(strings.Join(ev, "|"), "9s") {
		t.Fatalf("go-away detail: %q", ev)
	}
	c.CallTools(vendorfixture.ToolCall{ID: "fc-x", Name: "list_files", Args: `{}`})
	r.rec.WaitFor(t, "calls:", 1)
	c.CancelCalls("fc-x")
	c.Send([]byte(`garbage`))
	c.Send([]byte(`{"serverContent":{"turnComplete":true}}`))
	r.rec.WaitFor(t, "state:turn-complete:", 2)
	if r.s.SendToolResponses([]live.ToolResult{{ID: "fc-x", Name: "list_files", Result: json.RawMessage(`{}`)}}) {
		t.Fatal("an answer to a cancelled call was sent")
	}
	if got := strings.Join(c.Types(), " "); got != "setup" {
		t.Fatalf("frames %q; the interrupt must send nothing", got)
	}
	if err := r.s.UpdateTools(nil, "x"); refusal.RuleOf(err) != refusal.LiveUpdateUnsupported {
		t.Fatalf("UpdateTools: %v", err)
	}
	r.clean(t)
}

func TestFallbackOnce(t *testing.T) {
	t.Parallel()
	r := startRig(t, vendorfixture.Options{Script: vendorfixture.Script{
		OnText: func(c *vendorfixture.Conn, text string) {
			c.CallTools(vendorfixture.ToolCall{ID: "fc-" + c.Model, Name: "list_files", Args: `{}`})
			c.Close(1011, "Internal error encountered.")
		},
	}}, live.Choice{}, listFiles)
	r.rec.WaitFor(t, "state:ready:", 1)
	if err := r.s.SendText("list my notes"); err != nil {
		t.Fatal(err)
	}
	r.rec.WaitFor(t, "state:reconnecting:", 1)
	// The fallback replays the text, and the fixture fails again during the tool turn: no
	// second retry.
	r.rec.WaitFor(t, "state:upstream-closed:", 1)
	conns := r.fx.Conns()
	if len(conns) != 2 {
		t.Fatalf("%d connections; want the first and exactly one fallback", len(conns))
	}
	if conns[0].Model != gemini.DefaultModel || conns[1].Model != gemini.FallbackModel {
		t.Fatalf("models %s then %s", conns[0].Model, conns[1].Model)
	}
	fr := conns[1].WaitType(t, livetest.Bound, "realtimeInput.text", 1)
	if !bytes.Contains(fr.Raw, []byte(`"list my notes"`)) {
		t.Fatalf("the fallback got %s; want the pending text replayed", fr.Raw)
	}
	if got := r.rec.Count("state:ready:"); got != 2 {
		t.Fatalf("ready %d times; want 2", got)
	}
	if got := r.rec.Terminals(); len(got) != 1 || !strings.Contains(got[0], "1011") {
		t.Fatalf("terminals %q", got)
	}
	r.clean(t)
}

// TestFallbackForAnyPendingTurn: a 1011 while any turn is pending (typed, spoken, or the model
// answering; not only a tool turn) is retried once on the fallback model, the turn's text
// replayed, and the session goes on there.
func TestFallbackForAnyPendingTurn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		script vendorfixture.Script
		send   string // typed by the person once ready; "" sends nothing
	}{
		{"a typed turn the model has not answered", vendorfixture.Script{OnText: func(c *vendorfixture.Conn, text string) {
			if c.Model == gemini.DefaultModel {
				c.Close(1011, "Internal error encountered.")
			}
		}}, "what is on my list"},
		{"a spoken turn", vendorfixture.Script{OnSetup: func(c *vendorfixture.Conn) {
			if c.Model == gemini.DefaultModel {
				c.Hear("what is on my list")
				c.Close(1011, "Internal error encountered.")
			}
		}}, ""},
		{"the model in the middle of its answer", vendorfixture.Script{OnText: func(c *vendorfixture.Conn, text string) {
			if c.Model == gemini.DefaultModel {
				c.SendJSON(map[string]any{"serverContent": map[string]any{"outputTranscription": map[string]string{"text": "Your list has"}}})
				c.Close(1011, "Internal error encountered.")
			}
		}}, "what is on my list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := startRig(t, vendorfixture.Options{Script: tc.script}, live.Choice{})
			r.rec.WaitFor(t, "state:ready:", 1)
			if tc.send != "" {
				if err := r.s.SendText(tc.send); err != nil {
					t.Fatal(err)
				}
			}
			r.rec.WaitFor(t, "state:reconnecting:", 1)
			r.rec.WaitFor(t, "state:ready:", 2)
			conns := r.fx.Conns()
			if len(conns) != 2 || conns[1].Model != gemini.FallbackModel {
				t.Fatalf("%d connections; want the first and one on %s", len(conns), gemini.FallbackModel)
			}
			if tc.send != "" {
				fr := conns[1].WaitType(t, livetest.Bound, "realtimeInput.text", 1)
				if !bytes.Contains(fr.Raw, []byte(`"`+tc.send+`"`)) {
					t.Fatalf("the fallback got %s; want the pending text replayed", fr.Raw)
				}
			}
			// The session goes on, on the fallback: its answer reaches the person.
			conns[1].Say("Milk and eggs.", nil)
			r.rec.WaitFor(t, "state:turn-complete:", 1)
			if got := r.rec.Terminals(); len(got) != 0 {
				t.Fatalf("the session ended: %q", got)
			}
			r.clean(t)
		})
	}
}

func TestNoFallbackWithoutAPendingTurn(t *testing.T) {
	t.Parallel()
	t.Run("before any turn", func(t *testing.T) {
		t.Parallel()
		r := startRig(t, vendorfixture.Options{Script: vendorfixture.Script{OnSetup: func(c *vendorfixture.Conn) {
			c.Close(1011, "Internal error encountered.")
		}}}, live.Choice{})
		r.rec.WaitFor(t, "state:upstream-closed:", 1)
		if n := len(r.fx.Conns()); n != 1 {
			t.Fatalf("%d connections; a failure with no turn pending is not retried", n)
		}
	})
	t.Run("after the turn completed", func(t *testing.T) {
		t.Parallel()
		r := startRig(t, vendorfixture.Options{Script: vendorfixture.Script{OnText: func(c *vendorfixture.Conn, text string) {
			c.Say("Milk and eggs.", nil)
			c.Close(1011, "Internal error encountered.")
		}}}, live.Choice{})
		r.rec.WaitFor(t, "state:ready:", 1)
		if err := r.s.SendText("what is on my list"); err != nil {
			t.Fatal(err)
		}
		r.rec.WaitFor(t, "state:upstream-closed:", 1)
		if n := len(r.fx.Conns()); n != 1 {
			t.Fatalf("%d connections; a failure after the turn completed is not retried", n)
		}
	})
}

func TestRefusedBeforeDialing(t *testing.T) {
	t.Parallel()
	fx := vendorfixture.Start(t, vendorfixture.Options{})
	reg := &live.Providers{}
	gemini.Register(reg)
	for _, tc := range []struct {
		name   string
		choice live.Choice
		rule   refusal.Rule
	}{
		{"an OpenAI model", live.Choice{Provider: gemini.Name, Model: "gpt-realtime"}, refusal.LiveModelRefused},
		{"an OpenAI voice", live.Choice{Provider: gemini.Name, Voice: "alloy"}, refusal.LiveVoiceRefused},
		{"a thinking level on the default model", live.Choice{Provider: gemini.Name, Thinking: "high"}, refusal.LiveThinkingRefused},
	} {
		_, err := reg.Start(context.Background(), live.Config{Choice: tc.choice, Key: fx.Key(), BaseURL: fx.GeminiURL()})
		if refusal.RuleOf(err) != tc.rule {
			t.Errorf("%s: %v; want %s", tc.name, err, tc.rule)
		}
	}
	if n := len(fx.Conns()); n != 0 {
		t.Fatalf("%d connections reached the vendor", n)
	}
}

func TestWrongKeyEndsTheSessionWithoutLeakingIt(t *testing.T) {
	t.Parallel()
	fx := vendorfixture.Start(t, vendorfixture.Options{})
	reg := &live.Providers{}
	gemini.Register(reg)
	const wrong = "AIza-wrong-key-1234567890"
	rec := livetest.NewRecorder()
	s, err := reg.Start(context.Background(), live.Config{Choice: live.Choice{Provider: gemini.Name}, Key: wrong, BaseURL: fx.GeminiURL(), Callbacks: rec.Callbacks()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rec.WaitFor(t, "state:upstream-closed:", 1)
	for _, e := range rec.Events() {
		if strings.Contains(e, wrong) {
			t.Fatalf("the key reached a callback: %q", e)
		}
	}
	if got := rec.Terminals(); len(got) != 1 || !strings.Contains(got[0], "1008") {
		t.Fatalf("terminals %q", got)
	}
}
