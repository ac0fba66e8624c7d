//go:build !js

package tests

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"voicebox/tests/harness"
	"voicebox/tests/vendorfixture"
)

// TestTalkingWritesAFileThroughATool is the product's main path: the fake microphone's tone
// streams from the page's AudioWorklet through /live to the vendor; the vendor answers with a
// write_file call; the assistant's catalogue runs it on the page's OPFS over /channel; the vendor
// gets the tool output under the call's id and speaks; the page plays the reply and shows the
// captions, the call and its result.
func TestTalkingWritesAFileThroughATool(t *testing.T) {
	t.Parallel()
	const content = "Written by voice, through the catalogue."
	reply := vendorfixture.Tone(24000, 600, 660)
	var mu sync.Mutex
	var heard []byte
	outputs := make(chan string, 1)
	var once sync.Once
	fx, _, tab := startLive(t, vendorfixture.Script{
		OnAudio: func(c *vendorfixture.Conn, pcm []byte) {
			mu.Lock()
			heard = append(heard, pcm...)
			enough := len(heard) >= 24000*2/2 // half a second
			mu.Unlock()
			if enough {
				once.Do(func() {
					c.Hear("please save a note")
					args, _ := json.Marshal(map[string]string{"name": "voice-note.txt", "content": content})
					c.CallTools(vendorfixture.ToolCall{ID: "call_voice_1", Name: "write_file", Args: string(args)})
				})
			}
		},
		OnToolOutput:     func(c *vendorfixture.Conn, id string, out json.RawMessage) { outputs <- id + " " + string(out) },
		OnResponseCreate: func(c *vendorfixture.Conn) { c.Say("I saved your note.", reply) },
	})
	clickMic(t, tab)
	harness.WaitFor[bool](tab, `voicebox.live.state() === 'listening' || voicebox.live.state() === 'speaking'`, liveBound)

	var out string
	select {
	case out = <-outputs:
	case <-time.After(liveBound):
		t.Fatalf("the vendor got no tool output; page transcript %q", harness.Eval[[]string](tab, `voicebox.live.transcript()`))
	}
	var output string
	if !strings.HasPrefix(out, "call_voice_1 ") || json.Unmarshal([]byte(strings.TrimPrefix(out, "call_voice_1 ")), &output) != nil {
		t.Fatalf("tool output %q", out)
	}
	if strings.Contains(output, `"refused"`) {
		t.Fatalf("write_file was refused: %s", output)
	}

	// The microphone's tone reached the vendor as audio, not silence, at 24 kHz in 20 ms frames.
	mu.Lock()
	level := energy(heard)
	mu.Unlock()
	if level < 0.05 {
		t.Fatalf("the vendor heard RMS %.4f; want the fake microphone's tone", level)
	}
	conn := fx.Conn(t, 0, liveBound)
	for _, fr := range conn.Frames() {
		if fr.Type == "input_audio_buffer.append" && fr.Raw != nil {
			t.Fatalf("audio payloads were kept")
		}
	}

	// The file is in the page's OPFS.
	type view struct {
		OK    bool `json:"ok"`
		Value struct {
			Text string `json:"text"`
		} `json:"value"`
	}
	if v := harness.Eval[view](tab, `voicebox.call('files.read', {path: 'voice-note.txt'})`); !v.OK || v.Value.Text != content {
		t.Fatalf("the page's OPFS has %+v", v)
	}

	// The page plays the reply and shows what happened.
	want := len(reply) / 2
	harness.WaitFor[bool](tab, fmt.Sprintf(`voicebox.live.stats().samplesPlayed >= %d`, want), liveBound)
	harness.WaitFor[bool](tab, `voicebox.live.state() === 'listening'`, liveBound)
	s := stats(tab)
	if s.ToolCalls != 1 || s.ToolResults != 1 || s.FramesSent < 25 || s.BytesSent != s.FramesSent*960 {
		t.Fatalf("page stats %+v; want one call and result, 20 ms frames of 960 bytes", s)
	}
	lines := strings.Join(harness.Eval[[]string](tab, `voicebox.live.transcript()`), "\n")
	for _, w := range []string{"You: please save a note", `Tool: write_file({"content":"` + content + `","name":"voice-note.txt"})`, "→ {", "Model: I saved your note."} {
		if !strings.Contains(lines, w) {
			t.Fatalf("transcript lacks %q:\n%s", w, lines)
		}
	}
	if got := harness.Eval[string](tab, `document.querySelector('#caption-model').textContent`); got != "I saved your note." {
		t.Fatalf("model caption %q", got)
	}
	if page := harness.Eval[string](tab, `document.documentElement.outerHTML`); strings.Contains(page, fx.Key()) {
		t.Fatal("the vendor key reached the page")
	}
	tab.Screenshot("live-talk")

	// Stop: the session ends cleanly and the vendor connection closes.
	clickMic(t, tab)
	harness.WaitFor[bool](tab, `voicebox.live.state() === 'idle'`, liveBound)
	conn.Wait(t, liveBound, "the vendor connection to close", func(c *vendorfixture.Conn) bool { closed, _ := c.Closed(); return closed })
	types := strings.Join(conn.Types(), " ")
	if !strings.HasPrefix(types, "session.update conversation.item.create response.create") {
		t.Fatalf("the vendor got %q", types)
	}
}
