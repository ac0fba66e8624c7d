//go:build !js

package hostile

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// BenchmarkInputDuringFlood measures the page's input latency while a mini-app floods it: each
// iteration starts the flood app (floodApp: 100,000 forged messages to its parent and 100,000 to
// the top window) and presses keys one after another through the flood until it is over (see
// keysThrough). A key's latency is its keydown's queueing delay on the page's main thread, from
// the event's time stamp to its handler. Reported: keys handled while the flood's messages
// arrived (flood-ms), keys on the idle page before it (idle-ms), both p50 and p99, the slowest
// key during a flood, how many keys fell among the flood's messages, and how many of its
// messages reached the page before the app was stopped and its process ended.
func BenchmarkInputDuringFlood(b *testing.B) {
	relay := harness.StartRelay(b)
	tab := harness.NewTab(b)
	tab.Quiet()
	tab.Navigate(relay.URL)
	harness.WaitFor[bool](tab, `!!(window.voicebox && voicebox.miniApps) && !document.querySelector('#new-file').disabled`, pageBound)
	id := writeAndLaunch(b, tab, "flood.html", floodApp, 2)
	harness.Eval[bool](tab, fmt.Sprintf(probeJS, id))

	var idle, flood []float64
	keysAmong, messages := 0, 0
	for range 300 {
		if err := pressKey(tab.Ctx); err != nil {
			b.Fatal(err)
		}
	}
	for _, k := range harness.Eval[[]probeKey](tab, `probe.keys`) {
		idle = append(idle, k.Lag)
	}
	floods := 0
	for b.Loop() {
		if floods > 0 {
			startAgain(b, tab, id, 2)
		}
		floods++
		harness.Eval[bool](tab, `probe.reset()`)
		keys, seen := keysThrough(b, tab, func() {
			harness.Eval[map[string]any](tab, fmt.Sprintf(`voicebox.call('miniapps.call', {appId: %q, tool: 'flood', args: {}})`, id))
		})
		messages += seen
		for _, k := range keys {
			if k.Seen > 0 && k.Seen < seen {
				flood = append(flood, k.Lag)
				keysAmong++
			}
		}
	}
	b.StopTimer()
	harness.ReportPercentiles(b, idle, "idle-ms")
	harness.ReportPercentiles(b, flood, "flood-ms")
	if len(flood) > 0 {
		b.ReportMetric(slices.Max(flood), "flood-ms-max")
	}
	b.ReportMetric(float64(keysAmong)/float64(floods), "keys-among/flood")
	b.ReportMetric(float64(messages)/float64(floods), "messages-seen/flood")
}

// floodWindow is how long BenchmarkInputAfterFloodStarts presses keys after each flood begins.
const floodWindow = 20 * time.Second

// BenchmarkInputAfterFloodStarts measures how long a key press takes to be answered in the
// floodWindow after a mini-app's 100,000-message flood (floodApp) begins: from
// Input.dispatchKeyEvent to Chromium's answer that the page handled it (key-ms), keys pressed one
// after another. It uses only the page API that predates the message budget (files.write,
// miniApps.launch, miniapps.call), so the same file measures an older page too (see
// BENCHMARKS.md).
func BenchmarkInputAfterFloodStarts(b *testing.B) {
	relay := harness.StartRelay(b)
	tab := harness.NewTab(b)
	tab.Quiet()
	tab.Navigate(relay.URL)
	harness.WaitFor[bool](tab, `!!(window.voicebox && voicebox.miniApps) && !document.querySelector('#new-file').disabled`, pageBound)
	content, _ := json.Marshal(floodApp)
	harness.Eval[bool](tab, fmt.Sprintf(`voicebox.must('files.write', {path: 'flood.html', content: %s}).then(() => true)`, content))
	harness.Eval[bool](tab, `(() => { const i = document.createElement('input'); document.body.prepend(i); i.focus(); return true; })()`)
	var keys []float64
	for b.Loop() {
		id := harness.Eval[string](tab, `voicebox.miniApps.launch({path: 'flood.html'}).then(a => a.appId)`)
		harness.WaitFor[bool](tab, fmt.Sprintf(`voicebox.miniApps.tools(%q).length === 2`, id), appBound)
		harness.Eval[bool](tab, `(document.querySelector('input').focus(), true)`)
		harness.Eval[bool](tab, fmt.Sprintf(`(voicebox.call('miniapps.call', {appId: %q, tool: 'flood', args: {}}), true)`, id))
		for end := time.Now().Add(floodWindow); time.Now().Before(end); {
			t0 := time.Now()
			if err := pressKey(tab.Ctx); err != nil {
				b.Fatal(err)
			}
			keys = append(keys, float64(time.Since(t0).Microseconds())/1000)
		}
	}
	b.StopTimer()
	harness.ReportPercentiles(b, keys, "key-ms")
	b.ReportMetric(slices.Max(keys), "key-ms-max")
	b.ReportMetric(float64(len(keys))/float64(b.N), "keys/flood")
}
