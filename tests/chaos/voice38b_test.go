//go:build !js

package chaos

import (
	"fmt"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/voicebox-go/voicebox/internal/core/live/vendorfixture"
	"github.com/voicebox-go/voicebox/tests/harness"
)

// TestAVoiceSessionEndsWithItsRelayAndTheNextOneTalks: a live voice session runs (the socket in
// the page's live worker, the microphone's frames flowing to the vendor) when its relay is killed
// (-9, then SIGTERM in the next round). The Talk panel ends the session and says so (it does not
// stay "listening" with frames going nowhere), and once the relay is back on
// the same port a new session starts with one press and its microphone reaches the vendor again.
func TestAVoiceSessionEndsWithItsRelayAndTheNextOneTalks(t *testing.T) {
	var mu sync.Mutex
	heard := 0 // bytes of microphone audio the vendor got
	fx := vendorfixture.Start(t, vendorfixture.Options{Script: vendorfixture.Script{
		OnAudio: func(_ *vendorfixture.Conn, pcm []byte) {
			mu.Lock()
			defer mu.Unlock()
			heard += len(pcm)
		},
	}})
	vendorHeard := func() int {
		mu.Lock()
		defer mu.Unlock()
		return heard
	}
	env := []string{"VOICEBOX_OPENAI_URL=" + fx.OpenAIURL(), "OPENAI_API_KEY=" + fx.Key(), "GEMINI_API_KEY=", "VOICEBOX_LIVE_PROVIDER=openai"}
	port := harness.RestartablePort(t)
	relay := harness.StartRelay(t, append([]string{"PORT=" + port}, env...)...)
	state := relay.StateDir
	tab := openPage(t, relay)
	// While the relay is down the page's sockets and its checks for the relay fail: expected.
	allowRelayDown(tab)
	talk := func(round int) {
		t.Helper()
		harness.WaitFor[bool](tab, `!!(window.voicebox && voicebox.live) && !document.querySelector('#mic').disabled && !voicebox.live.open()`, patience)
		before := vendorHeard()
		if _, err := chromedp.Run(tab.Ctx, chromedp.Click(chromedp.ID("mic"))); err != nil {
			t.Fatalf("round %d: press the microphone: %v", round, err)
		}
		harness.WaitFor[bool](tab, `voicebox.live.state() === 'listening' && voicebox.live.stats().framesSent > 10`, patience)
		waitFor(t, fmt.Sprintf("round %d: the microphone's frames to reach the vendor", round), func() bool { return vendorHeard() > before })
	}
	for round, stop := range []func(){
		func() { relay.Kill(t) },
		func() { relay.Stop(t) },
	} {
		round++
		talk(round)
		stop()
		// Killed, the socket just closes; stopped, the relay may first say the session closed.
		harness.WaitFor[bool](tab, `!voicebox.live.open() && ['error', 'idle'].includes(voicebox.live.state()) &&
			/closed the voice socket|Session ended|failed|hung up/.test(document.querySelector('#live-status').textContent)`, patience)
		relay = harness.StartRelay(t, append([]string{"PORT=" + port, "VOICEBOX_STATE_DIR=" + state}, env...)...)
		harness.WaitFor[bool](tab, `document.querySelector('#channel').dataset.state === 'connected'`, patience)
	}
	talk(3)
}
