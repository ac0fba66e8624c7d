//go:build !js

package tests

import (
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/internal/core/live/vendorfixture"
	"github.com/voicebox-go/voicebox/tests/harness"
)

// holdMicrophone makes the page's getUserMedia wait until the test calls __mic.release(), and
// keeps every track it hands out in __mic.tracks.
const holdMicrophone = `(() => {
	const real = navigator.mediaDevices.getUserMedia.bind(navigator.mediaDevices);
	window.__mic = { tracks: [], asked: 0, release: null };
	navigator.mediaDevices.getUserMedia = (c) => new Promise((resolve, reject) => {
		__mic.asked++;
		__mic.release = () => real(c).then((s) => { __mic.tracks.push(...s.getTracks()); resolve(s); }, reject);
	});
	return true;
})()`

// A session that ends while the browser is still asking for the microphone (the person pressed
// stop, or the relay refused) must not leave the microphone open once it is granted.
func TestMicrophoneGrantedAfterTheSessionEndedIsClosed(t *testing.T) {
	t.Parallel()
	_, _, tab := startLive(t, vendorfixture.Script{})
	harness.Eval[bool](tab, holdMicrophone)
	clickMic(t, tab)
	harness.WaitFor[bool](tab, `__mic.asked === 1`, liveBound)
	clickMic(t, tab) // stop, while the microphone is still being asked for
	harness.WaitFor[bool](tab, `!voicebox.live.open()`, liveBound)
	harness.Eval[bool](tab, `__mic.release().then(() => true)`)
	harness.WaitFor[bool](tab, `__mic.tracks.length > 0 && __mic.tracks.every((t) => t.readyState === 'ended')`, liveBound)
}

// When the capture graph cannot be built, the microphone stream already granted is stopped.
func TestMicrophoneStoppedWhenTheCaptureCannotStart(t *testing.T) {
	t.Parallel()
	_, _, tab := startLive(t, vendorfixture.Script{})
	harness.Eval[bool](tab, holdMicrophone)
	harness.Eval[bool](tab, `(AudioWorklet.prototype.addModule = () => Promise.reject(new Error('no worklet here')), true)`)
	clickMic(t, tab)
	harness.WaitFor[bool](tab, `__mic.asked === 1`, liveBound)
	harness.Eval[bool](tab, `__mic.release().then(() => true)`)
	harness.WaitFor[bool](tab, `voicebox.live.state() === 'error' && !voicebox.live.open()`, liveBound)
	harness.WaitFor[bool](tab, `__mic.tracks.length > 0 && __mic.tracks.every((t) => t.readyState === 'ended')`, liveBound)
}

// When the person denies the microphone, the panel keeps saying so after the session it ended
// has closed, instead of "Session ended."
func TestMicrophoneDenialStaysShown(t *testing.T) {
	t.Parallel()
	_, _, tab := startLive(t, vendorfixture.Script{})
	harness.Eval[bool](tab, `(navigator.mediaDevices.getUserMedia = () => Promise.reject(new DOMException('Permission denied', 'NotAllowedError')), true)`)
	clickMic(t, tab)
	harness.WaitFor[bool](tab, `voicebox.live.state() === 'error' && !voicebox.live.open()`, liveBound)
	if status := harness.Eval[string](tab, `document.querySelector('#live-status').textContent`); !strings.Contains(status, "microphone") {
		t.Fatalf("status %q after the microphone was denied", status)
	}
}

// A refusal the session went on after (typed text over the bound) is not what the panel says
// when the person later ends the session.
func TestARefusalMidSessionIsNotShownAsItsEnd(t *testing.T) {
	t.Parallel()
	_, _, tab := startLive(t, vendorfixture.Script{})
	clickMic(t, tab)
	harness.WaitFor[bool](tab, `voicebox.live.state() === 'listening'`, liveBound)
	harness.Eval[bool](tab, `(() => {
		document.querySelector('#live-text').value = 'a'.repeat(5000);
		document.querySelector('#live-text-form').requestSubmit();
		return true;
	})()`)
	harness.WaitFor[bool](tab, `document.querySelector('#live-status').textContent.includes('live-message-invalid')`, liveBound)
	clickMic(t, tab)
	harness.WaitFor[bool](tab, `!voicebox.live.open()`, liveBound)
	if st, status := harness.Eval[string](tab, `voicebox.live.state()`), harness.Eval[string](tab, `document.querySelector('#live-status').textContent`); st != "idle" {
		t.Fatalf("state %q, status %q after the person ended the session", st, status)
	}
}

// Pressing stop before the relay's first frame arrives means the microphone is never asked for.
func TestStopBeforeTheRateFrameAsksForNoMicrophone(t *testing.T) {
	t.Parallel()
	_, _, tab := startLive(t, vendorfixture.Script{})
	harness.Eval[bool](tab, holdMicrophone)
	harness.Eval[bool](tab, `(() => {
		const mic = document.querySelector('#mic');
		mic.click();
		mic.click();
		return true;
	})()`)
	harness.WaitFor[bool](tab, `!voicebox.live.open()`, liveBound)
	if asked := harness.Eval[int](tab, `__mic.asked`); asked != 0 {
		t.Fatalf("the microphone was asked for %d times after the person pressed stop", asked)
	}
}
