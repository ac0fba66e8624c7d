// Package voice is the relay's live-voice door: the /live socket, the agent settings, the vendor
// key store and the tool loop, over the harness in internal/core/live.
//
// # The /live socket
//
// The page opens /live (admitted like /channel's page: the page's origin, and the gate's session
// when the gate is on) and gets one live session with the provider the agent settings name. The
// relay's first frame is {"type":"rate","inputRate":N,"outputRate":N,"provider","model","voice",
// "thinking"}, or {"type":"refused","refused":RULE,"why":...} and a 1008 close when there can be
// no session (live-key-missing, live-provider-unavailable, too-many-sockets...).
//
// From the page: binary frames are PCM16 little-endian mono at inputRate (an even number of
// bytes, at most MaxAudioFrameBytes; anything else is answered live-audio-frame-invalid and the
// session goes on, except a frame past the socket's read limit, 1 KiB beyond that bound, which
// ends the socket with 1009, message too big); text frames are {"type":"text","text":...}, {"type":"interrupt","playedMs":N}
// (the person barged in; playedMs is how much of the reply they heard) and {"type":"close"}.
// Anything else is answered live-message-invalid.
//
// To the page: binary frames are the model's PCM16 at outputRate; text frames are
// {"type":"state","state":S,"detail":...} (see live.State; a terminal state is the last frame),
// {"type":"transcript","kind":"user"|"model"|"text","text":...} (pieces to append),
// {"type":"tool-call","id","name","args"}, {"type":"tool-result","id","name","result"[,"refused"]},
// {"type":"notice","text"} and {"type":"refused","refused","why"}.
//
// # The tool loop
//
// A call the model makes goes to the Catalogue (the assistant's, which routes it to the
// executor), and its one answer, observation or refusal, goes back to the vendor under the same
// call id and is shown to the page. A call whose arguments could not be read is refused without
// running. A catalogue that is also a Viewer (the open external apps' current view) has its note
// at the end of the instruction, refreshed after every turn (see view.go).
//
// # Keys and settings
//
// Vendor keys come from the environment (OPENAI_API_KEY, GEMINI_API_KEY) or from the host's key
// store (PUT /api/keys with the host token, kept 0600 in the state directory); they never reach
// the page, a log or an error. GET/PUT /api/agent-settings choose the provider, model, voice and
// thinking depth of the next session, and say per provider whether a key is configured.
package voice

import (
	"errors"
	"github.com/voicebox-go/voicebox/internal/core/live"
	"github.com/voicebox-go/voicebox/internal/core/live/gemini"
	"github.com/voicebox-go/voicebox/internal/core/live/openai"
)

// Claude is the provider name listed for Claude, which has no live voice API.
const Claude = "claude"

// ClaudeUnavailable is why Claude cannot run a live session.
const ClaudeUnavailable = "Claude has no live voice API, so it cannot hold a spoken session; choose gemini or openai for voice (Claude's coding-task delegation is a separate capability)"

// Providers returns the registry of the providers a relay offers: OpenAI Realtime, Gemini Live,
// and Claude, listed but refusing live sessions. Their offers are constants of this program, so
// a refused registration is a mistake in it (every voice test builds this registry), not in any
// input.
func Providers() *live.Providers {
	r := &live.Providers{}
	if err := errors.Join(openai.Register(r), gemini.Register(r),
		r.Register(Claude, nil, live.Offer{Label: "Claude", Unavailable: ClaudeUnavailable})); err != nil {
		panic("voice: a built-in live provider's offer was refused: " + err.Error())
	}
	return r
}

// KeyEnvs maps each provider that takes a key to its environment variable.
func KeyEnvs(r *live.Providers) map[string]string {
	m := map[string]string{}
	for _, name := range r.Names() {
		if o, ok := r.Offer(name); ok && o.KeyEnv != "" {
			m[name] = o.KeyEnv
		}
	}
	return m
}

// Configured reports whether the next session could start: the provider settings choose runs
// live sessions and keys hold a key for it. It needs no Handler, so a part built before the
// /live door (the assistant's offline mode) can ask it too.
func Configured(reg *live.Providers, settings *Settings, keys *Keys) bool {
	c := settings.Current()
	if _, err := reg.InputRate(c.Provider); err != nil {
		return false
	}
	return keys.Key(c.Provider) != ""
}
