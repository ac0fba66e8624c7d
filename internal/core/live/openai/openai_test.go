package openai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/internal/core/live"
	"github.com/voicebox-go/voicebox/internal/core/live/livetest"
	"github.com/voicebox-go/voicebox/internal/core/live/openai"
	"github.com/voicebox-go/voicebox/internal/core/live/vendorfixture"
	"github.com/voicebox-go/voicebox/shared/refusal"
	"github.com/voicebox-go/voicebox/shared/tool"
)

var writeFile = tool.Declaration{Name: "write_file", Description: "Write a file",
	Parameters: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"},"content":{"type":"string"}},"required":["name","content"]}`)}

type rig struct {
	fx  *vendorfixture.Fixture
	rec *livetest.Recorder
	s   *live.Conversation
	log *livetest.LogBuffer
}

func startRig(t *testing.T, opts vendorfixture.Options, choice live.Choice) *rig {
	t.Helper()
	fx := vendorfixture.Start(t, opts)
	reg := &live.Providers{}
	openai.Register(reg)
	rec := livetest.NewRecorder()
	buf := &livetest.LogBuffer{}
	choice.Provider = openai.Name
	s, err := reg.Start(context.Background(), live.Config{Choice: choice, Key: fx.Key(), BaseURL: fx.OpenAIURL(),
		Tools: []tool.Declaration{writeFile}, Instruction: "Be brief.", Callbacks: rec.Callbacks(),
		Log: slog.New(slog.NewTextHandler(buf, nil))})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		s.Close()
		if v := fx.Violations(); len(v) > 0 {
			t.Errorf("the fixture refused what the relay sent: %q", v)
		}
		if strings.Contains(buf.String(), fx.Key()) {
			t.Errorf("the key reached the log")
		}
		for _, e := range rec.Events() {
			if strings.Contains(e, fx.Key()) {
				t.Errorf("the key reached a callback: %q", e)
			}
		}
	})
	return &rig{fx: fx, rec: rec, s: s, log: buf}
}

func (r *rig) ready(t *testing.T) *vendorfixture.Conn {
	t.Helper()
	r.rec.WaitFor(t, "state:ready:", 1)
	return r.fx.Conn(t, 0, livetest.Bound)
}

func TestSetupIsTheGAShapeAndReadyWaitsForSessionUpdated(t *testing.T) {
	t.Parallel()
	r := startRig(t, vendorfixture.Options{Script: vendorfixture.Script{NoAck: true}, KeepAudio: true}, live.Choice{Model: "gpt-4o-mini-realtime-preview", Voice: "coral"})
	c := r.fx.Conn(t, 0, livetest.Bound)
	c.WaitType(t, livetest.Bound, "session.update", 1)
	if c.Model != "gpt-4o-mini-realtime-preview" {
		t.Fatalf("dialed model %q", c.Model)
	}
	if c.Header.Get("OpenAI-Beta") != "" || c.Header.Get("Authorization") != "Bearer "+r.fx.Key() {
		t.Fatalf("upgrade headers: beta %q, authorization set %v", c.Header.Get("OpenAI-Beta"), c.Header.Get("Authorization") != "")
	}
	got := c.Frames()[0].Raw
	want := openai.SessionUpdate("gpt-4o-mini-realtime-preview", "coral", "Be brief.", []tool.Declaration{writeFile})
	if !bytes.Equal(got, want) {
		t.Fatalf("first frame\n got %s\nwant %s", got, want)
	}
	var su struct {
		Session struct {
			Type  string `json:"type"`
			Audio struct {
				Input struct {
					Format struct{ Rate int } `json:"format"`
				} `json:"input"`
				Output struct {
					Format struct{ Rate int } `json:"format"`
					Voice  string             `json:"voice"`
				} `json:"output"`
			} `json:"audio"`
			Tools []struct{ Type, Name string } `json:"tools"`
		} `json:"session"`
	}
	json.Unmarshal(got, &su)
	if su.Session.Type != "realtime" || su.Session.Audio.Input.Format.Rate != 24000 || su.Session.Audio.Output.Format.Rate != 24000 ||
		su.Session.Audio.Output.Voice != "coral" || len(su.Session.Tools) != 1 || su.Session.Tools[0].Type != "function" {
		t.Fatalf("session.update = %s", got)
	}
	// Not ready yet: audio is dropped here, never sent.
	if err := r.s.SendAudio(make([]byte, 960), 24000); refusal.RuleOf(err) != refusal.LiveNotReady {
		t.Fatalf("audio before session.updated: %v", err)
	}
	c.Ack()
	r.rec.WaitFor(t, "state:ready:", 1)
	if err := r.s.SendAudio(vendorfixture.Tone(24000, 20, 440), 24000); err != nil {
		t.Fatal(err)
	}
	c.Wait(t, livetest.Bound, "the audio sent after ready", func(c *vendorfixture.Conn) bool { return c.AudioBytes() >= 960 })
	if n := c.AudioBytes(); n != 960 {
		t.Fatalf("the fixture got %d bytes of audio; want the 960 sent after ready only", n)
	}
}

func TestAudioBothWaysAndTranscripts(t *testing.T) {
	t.Parallel()
	tone := vendorfixture.Tone(24000, 250, 330)
	r := startRig(t, vendorfixture.Options{KeepAudio: true, Script: vendorfixture.Script{OnAudio: func(c *vendorfixture.Conn, pcm []byte) {
		if c.AudioBytes() >= 3*960 {
			c.Hear("hello there")
			c.Say("Hi, how can I help?", tone)
		}
	}}}, live.Choice{})
	c := r.ready(t)
	sent := vendorfixture.Tone(24000, 60, 440)
	for i := range 3 {
		if err := r.s.SendAudio(sent[i*960:(i+1)*960], 24000); err != nil {
			t.Fatal(err)
		}
	}
	r.rec.WaitFor(t, "state:turn-complete:", 1)
	var got []byte
	for _, fr := range c.Frames() {
		if fr.Type == "input_audio_buffer.append" {
			var ev struct{ Audio []byte }
			json.Unmarshal(fr.Raw, &ev)
			got = append(got, ev.Audio...)
		}
	}
	if !bytes.Equal(got, sent) {
		t.Fatalf("the vendor got %d bytes, not the %d sent unchanged", len(got), len(sent))
	}
	out, rates := r.rec.Audio()
	if !bytes.Equal(out, tone) || len(rates) != 1 || rates[0] != 24000 {
		t.Fatalf("output audio: %d bytes at %v; want the %d-byte tone at 24000", len(out), rates, len(tone))
	}
	if r.rec.Text(live.UserText) != "hello there" || r.rec.Text(live.ModelText) != "Hi, how can I help?" {
		t.Fatalf("transcripts: user %q, model %q", r.rec.Text(live.UserText), r.rec.Text(live.ModelText))
	}
}

func TestOlderEventNamesAndMalformedFrames(t *testing.T) {
	t.Parallel()
	r := startRig(t, vendorfixture.Options{}, live.Choice{})
	c := r.ready(t)
	c.Send([]byte(`not json at all`))
	c.Send([]byte(`{"type":"response.output_audio.delta","delta":"@@not base64@@"}`))
	c.Send([]byte(`{"type":"response.audio.delta","delta":"AA=="}`)) // one byte: not PCM16
	c.Send([]byte(`{"type":"some.future.event","x":1}`))
	c.Send([]byte(`{"type":"response.audio.delta","item_id":"i1","delta":"AQACAA=="}`))
	c.Send([]byte(`{"type":"response.audio_transcript.delta","delta":"old "}`))
	c.Send([]byte(`{"type":"response.text.delta","delta":"words"}`))
	c.Send([]byte(`{"type":"response.output_text.delta","delta":"!"}`))
	r.rec.Wait(t, "the older names", func() bool { return r.rec.Text(live.PlainText) == "words!" })
	out, _ := r.rec.Audio()
	if !bytes.Equal(out, []byte{1, 0, 2, 0}) || r.rec.Text(live.ModelText) != "old " {
		t.Fatalf("audio %v, model text %q", out, r.rec.Text(live.ModelText))
	}
	if len(r.rec.Terminals()) != 0 {
		t.Fatalf("a malformed frame ended the session: %q", r.rec.Events())
	}
}

// answer answers every call the recorder delivers with its own name, or its refusal.
func answer(s *live.Conversation, calls []live.Call) {
	for _, call := range calls {
		res := live.ToolResult{ID: call.ID, Name: call.Name, Result: json.RawMessage(`{"ok":true,"wrote":"` + call.ID + `"}`)}
		if call.Refused != nil {
			res = live.RefusalResult(call, call.Refused)
		}
		s.SendToolResponses([]live.ToolResult{res})
	}
}

func TestToolLoopResponseDoneFirst(t *testing.T) {
	t.Parallel()
	var r *rig
	r = startRig(t, vendorfixture.Options{Script: vendorfixture.Script{OnSetup: func(c *vendorfixture.Conn) {
		c.CallTools(vendorfixture.ToolCall{ID: "call_1", Name: "write_file", Args: `{"name":"a.txt","content":"x"}`},
			vendorfixture.ToolCall{ID: "call_2", Name: "write_file", Args: `{"name":"b.txt","content":"y"}`})
	}}}, live.Choice{})
	c := r.ready(t)
	r.rec.WaitFor(t, "state:turn-complete:", 1) // response.done has come
	calls := r.rec.Calls()
	if len(calls) != 2 || calls[0].ID != "call_1" || calls[1].ID != "call_2" || string(calls[0].Args) != `{"name":"a.txt","content":"x"}` {
		t.Fatalf("calls = %+v; want each reported once, in order", calls)
	}
	answer(r.s, calls[:1])
	c.WaitType(t, livetest.Bound, "conversation.item.create", 1)
	answer(r.s, calls[1:])
	c.WaitType(t, livetest.Bound, "response.create", 1)
	r.rec.WaitFor(t, "state:turn-complete:", 2)
	want := "session.update conversation.item.create conversation.item.create response.create"
	if got := strings.Join(c.Types(), " "); got != want {
		t.Fatalf("frames %q; want %q", got, want)
	}
}

func TestToolLoopOutputsFirst(t *testing.T) {
	t.Parallel()
	done := make(chan func(), 1)
	var r *rig
	r = startRig(t, vendorfixture.Options{Script: vendorfixture.Script{OnSetup: func(c *vendorfixture.Conn) {
		done <- c.CallToolsHeld(vendorfixture.ToolCall{ID: "call_9", Name: "write_file", Args: `{"name":"c.txt","content":"z"}`})
	}}}, live.Choice{})
	c := r.ready(t)
	r.rec.WaitFor(t, "calls:", 1)
	answer(r.s, r.rec.Calls())
	c.WaitType(t, livetest.Bound, "conversation.item.create", 1)
	if n := strings.Count(strings.Join(c.Types(), " "), "response.create"); n != 0 {
		t.Fatalf("response.create was sent before response.done")
	}
	(<-done)()
	c.WaitType(t, livetest.Bound, "response.create", 1)
	r.rec.WaitFor(t, "state:turn-complete:", 2)
	want := "session.update conversation.item.create response.create"
	if got := strings.Join(c.Types(), " "); got != want {
		t.Fatalf("frames %q; want %q", got, want)
	}
	var out struct {
		Item struct {
			Type, CallID, Output string
		} `json:"item"`
	}
	fr := c.WaitType(t, livetest.Bound, "conversation.item.create", 1)
	json.Unmarshal(fr.Raw, &out)
	if out.Item.Type != "function_call_output" || !strings.Contains(out.Item.Output, `"wrote":"call_9"`) {
		t.Fatalf("output frame %s", fr.Raw)
	}
}

func TestMalformedArgumentsGetACorrelatedRefusal(t *testing.T) {
	t.Parallel()
	outputs := make(chan string, 1)
	var r *rig
	r = startRig(t, vendorfixture.Options{Script: vendorfixture.Script{
		OnSetup: func(c *vendorfixture.Conn) {
			c.CallTools(vendorfixture.ToolCall{ID: "call_bad", Name: "write_file", Args: `{"name": "a.txt", "content": `})
		},
		OnToolOutput: func(c *vendorfixture.Conn, id string, output json.RawMessage) {
			var s string
			json.Unmarshal(output, &s)
			outputs <- id + " " + s
		},
	}}, live.Choice{})
	r.ready(t)
	r.rec.WaitFor(t, "calls:", 1)
	calls := r.rec.Calls()
	if calls[0].Refused == nil || calls[0].Refused.Rule != refusal.InvalidToolArguments || string(calls[0].Args) != `{}` {
		t.Fatalf("malformed call = %+v; want refused invalid-tool-arguments with empty args", calls[0])
	}
	answer(r.s, calls)
	got := <-outputs
	if !strings.HasPrefix(got, "call_bad ") || !strings.Contains(got, `"refused":"invalid-tool-arguments"`) {
		t.Fatalf("the vendor got %q; want the refusal under the same call id", got)
	}
}

func TestInterruptCancelsAndTruncates(t *testing.T) {
	t.Parallel()
	r := startRig(t, vendorfixture.Options{}, live.Choice{})
	c := r.ready(t)
	// A response that is still talking: created, with audio, no response.done yet.
	c.Send([]byte(`{"type":"response.created","response":{"id":"resp_x","status":"in_progress","output":[]}}`))
	c.Send([]byte(`{"type":"response.output_audio.delta","response_id":"resp_x","item_id":"item_talk","delta":"AAAAAA=="}`))
	r.rec.WaitFor(t, "audio:", 1)
	c.SpeechStarted()
	r.rec.WaitFor(t, "state:interrupted:", 1)
	if err := r.s.Interrupt(250); err != nil {
		t.Fatal(err)
	}
	fr := c.WaitType(t, livetest.Bound, "conversation.item.truncate", 1)
	var tr struct {
		ItemID     string `json:"item_id"`
		AudioEndMs int    `json:"audio_end_ms"`
	}
	json.Unmarshal(fr.Raw, &tr)
	if tr.ItemID != "item_talk" || tr.AudioEndMs != 250 {
		t.Fatalf("truncate = %s", fr.Raw)
	}
	if got := strings.Join(c.Types(), " "); got != "session.update response.cancel conversation.item.truncate" {
		t.Fatalf("frames %q", got)
	}
	// Nothing active any more: a second interrupt sends nothing.
	if err := r.s.Interrupt(10); err != nil {
		t.Fatal(err)
	}
}

func TestTypedTextWaitsForTheActiveResponse(t *testing.T) {
	t.Parallel()
	texts := make(chan string, 1)
	r := startRig(t, vendorfixture.Options{Script: vendorfixture.Script{
		OnText: func(c *vendorfixture.Conn, text string) { texts <- text },
	}}, live.Choice{})
	c := r.ready(t)
	// A response that is still talking (the relay sees its audio, so it has seen it begin).
	c.Send([]byte(`{"type":"response.created","response":{"id":"resp_t","status":"in_progress","output":[]}}`))
	c.Send([]byte(`{"type":"response.output_audio.delta","response_id":"resp_t","item_id":"item_t","delta":"AAAAAA=="}`))
	r.rec.WaitFor(t, "audio:", 1)
	if err := r.s.SendText("read notes.md"); err != nil {
		t.Fatal(err)
	}
	if got := <-texts; got != "read notes.md" {
		t.Fatalf("text %q", got)
	}
	if strings.Contains(strings.Join(c.Types(), " "), "response.create") {
		t.Fatal("response.create went out while a response was active")
	}
	c.Send([]byte(`{"type":"response.done","response":{"id":"resp_t","status":"completed","output":[]}}`))
	c.WaitType(t, livetest.Bound, "response.create", 1)
	if got := strings.Join(c.Types(), " "); got != "session.update conversation.item.create response.create" {
		t.Fatalf("frames %q", got)
	}
}

func TestUpdateToolsAndUpstreamClose(t *testing.T) {
	t.Parallel()
	r := startRig(t, vendorfixture.Options{}, live.Choice{})
	c := r.ready(t)
	if err := r.s.UpdateTools(nil, "New instruction."); err != nil {
		t.Fatal(err)
	}
	fr := c.WaitType(t, livetest.Bound, "session.update", 2)
	if !bytes.Contains(fr.Raw, []byte(`"instructions":"New instruction."`)) || !bytes.Contains(fr.Raw, []byte(`"type":"realtime"`)) {
		t.Fatalf("second session.update = %s", fr.Raw)
	}
	c.Close(4001, "session expired")
	r.rec.WaitFor(t, "state:upstream-closed:", 1)
	if got := r.rec.Terminals(); len(got) != 1 || !strings.Contains(got[0], "4001") {
		t.Fatalf("terminals = %q", got)
	}
}

func TestRefusedBeforeDialing(t *testing.T) {
	t.Parallel()
	fx := vendorfixture.Start(t, vendorfixture.Options{})
	reg := &live.Providers{}
	openai.Register(reg)
	for _, tc := range []struct {
		name   string
		choice live.Choice
		key    string
		rule   refusal.Rule
	}{
		{"a Gemini model", live.Choice{Provider: openai.Name, Model: "models/gemini-3.8-live"}, fx.Key(), refusal.LiveModelRefused},
		{"a Gemini voice", live.Choice{Provider: openai.Name, Voice: "Kore"}, fx.Key(), refusal.LiveVoiceRefused},
		{"no key", live.Choice{Provider: openai.Name}, "", refusal.LiveKeyMissing},
	} {
		_, err := reg.Start(context.Background(), live.Config{Choice: tc.choice, Key: tc.key, BaseURL: fx.OpenAIURL()})
		if refusal.RuleOf(err) != tc.rule {
			t.Errorf("%s: %v; want %s", tc.name, err, tc.rule)
		}
	}
	if n := len(fx.Conns()); n != 0 {
		t.Fatalf("%d connections reached the vendor", n)
	}
}

func TestWrongKeyFailsWithoutLeakingIt(t *testing.T) {
	t.Parallel()
	fx := vendorfixture.Start(t, vendorfixture.Options{})
	reg := &live.Providers{}
	openai.Register(reg)
	const wrong = "sk-wrong-key-5555aaaa9999"
	rec := livetest.NewRecorder()
	_, err := reg.Start(context.Background(), live.Config{Choice: live.Choice{Provider: openai.Name}, Key: wrong, BaseURL: fx.OpenAIURL(), Callbacks: rec.Callbacks()})
	if err == nil || strings.Contains(err.Error(), wrong) || !strings.Contains(err.Error(), "401") {
		t.Fatalf("Start with a wrong key: %v; want a 401 without the key", err)
	}
	if got := rec.Terminals(); len(got) != 1 || strings.Contains(got[0], wrong) {
		t.Fatalf("terminals = %q", got)
	}
}
