//go:build !js

package tests

import (
	"testing"

	"voicebox/tests/harness"
	"voicebox/tests/vendorfixture"
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
	harness.WaitFor[bool](tab, `!voicebox.live.open()`, liveBound)
	harness.WaitFor[bool](tab, `__mic.tracks.length > 0 && __mic.tracks.every((t) => t.readyState === 'ended')`, liveBound)
}
