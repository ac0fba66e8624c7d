//go:build !js

package chaos

import (
	"fmt"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// pageWriters is how many writes through the relay the page's worker has in hand when its relay
// goes away.
const pageWriters = 10

// pageFileSize is the size of each file written to the page's browser storage: a few hundred
// kilobytes, so the writes are still in the worker's hands when the relay goes, without making
// the round wait on the page's JSON of a megabyte ten times over.
const pageFileSize = 256 << 10

// workerAnswerBound bounds how long the page's worker may take to answer a call of its own while
// its relay is gone: a worker that answers nothing by then is stuck (it once spun for ever).
const workerAnswerBound = 5 * time.Second

// openPage loads the page from relay and waits until it is the relay's executor over browser
// storage (its channel connected).
func openPage(t testing.TB, relay *harness.Relay) *harness.Tab {
	t.Helper()
	tab := harness.NewTab(t)
	tab.Navigate(relay.URL)
	harness.WaitFor[bool](tab, `document.querySelector('#status').dataset.state === 'ready' &&
		document.querySelector('#channel').dataset.state === 'connected'`, patience)
	waitFor(t, "the relay to hold the page's root", func() bool { return rootKind(relay.URL) == "opfs" })
	return tab
}

// allowRelayDown lets tab log what a page logs while its relay is down or stopping: its sockets
// (/channel, /live) fail, its requests are refused, reset or cut short (a socket the browser had
// open may also be not connected any more), and the relay answers 503 while it shuts down.
func allowRelayDown(tab *harness.Tab) {
	tab.Allow(`WebSocket connection to .*/(channel|live)' failed`)
	tab.Allow(`ERR_CONNECTION_REFUSED|ERR_CONNECTION_RESET|ERR_EMPTY_RESPONSE|ERR_NETWORK_CHANGED|ERR_SOCKET_NOT_CONNECTED`)
	tab.Allow(`Failed to load resource|ERR_INCOMPLETE_CHUNKED_ENCODING|answered 503: .*/api/(events|turn)`)
}

// workerAnswers reports whether the page's worker answers a call of its own (a listing of the
// big folder) within workerAnswerBound.
func workerAnswers(tab *harness.Tab) bool {
	return harness.Eval[bool](tab, fmt.Sprintf(`Promise.race([
		voicebox.call('files.list', {dir: 'big'}).then(() => true, () => true),
		new Promise(done => setTimeout(() => done(false), %d)),
	])`, workerAnswerBound.Milliseconds()))
}

// pageFile returns the content the page's browser storage holds for file i ("" for none).
func pageFile(tab *harness.Tab, i int) string {
	return harness.Eval[string](tab, fmt.Sprintf(`voicebox.call('files.read', {path: %q}).then(v => v.ok ? v.value.text : '')`, fileName(i)))
}

// TestThePageSurvivesItsRelayGoingAwayMidWrite: the relay routing large writes to the page's
// browser storage is killed (-9, then SIGTERM in the next round) with the writes in flight: the
// page's worker still answers its own calls at once (it once spun at full CPU, answering
// nothing), every call ends once (an answer, or its connection cut with the relay), every file
// is the old or the new version, and once the relay is back on the same port the page
// reconnects by itself, its history answers and a new write is served.
func TestThePageSurvivesItsRelayGoingAwayMidWrite(t *testing.T) {
	port := harness.RestartablePort(t)
	relay := harness.StartRelay(t, "PORT="+port)
	state := relay.StateDir
	token := relay.HostToken(t)
	tab := openPage(t, relay)
	// While the relay is down the page's channel and its checks for the relay fail: expected.
	allowRelayDown(tab)
	was := make([]string, writers)
	for round, stop := range []func(){
		func() { relay.Kill(t) },
		func() { relay.Stop(t) },
	} {
		round++
		dead := relay
		outs := make([]outcome, pageWriters)
		first := make(chan struct{}, 1)
		ended := make(chan int, pageWriters)
		for i := range pageWriters {
			go func() {
				outs[i] = call(dead.URL, token, "write-file", map[string]string{"path": fileName(i % writers), "content": sized(round, i%writers, pageFileSize)})
				select {
				case first <- struct{}{}:
				default:
				}
				ended <- i
			}()
		}
		<-first
		stop()
		for range pageWriters {
			select {
			case <-ended:
			case <-time.After(callBound):
				t.Fatalf("round %d: a write had no end within %v of the relay going away", round, callBound)
			}
		}
		cut := 0
		for i, o := range outs {
			switch {
			case o.err != nil:
				cut++
			case !o.answered():
				t.Fatalf("round %d: write %d was answered with no answer: %s", round, i, o)
			}
		}
		t.Logf("round %d: %d of %d writes answered ok, %d cut with the relay, refused %v", round, okCount(outs), pageWriters, cut, rules(outs))
		if !workerAnswers(tab) {
			t.Fatalf("round %d: with its relay gone the page's worker answers nothing within %v", round, workerAnswerBound)
		}
		harness.WaitFor[bool](tab, `document.querySelector('#channel').dataset.state !== 'connected'`, patience)

		relay = harness.StartRelay(t, "PORT="+port, "VOICEBOX_STATE_DIR="+state)
		harness.WaitFor[bool](tab, `document.querySelector('#channel').dataset.state === 'connected'`, patience)
		waitFor(t, "the relay to hold the page's root again", func() bool { return rootKind(relay.URL) == "opfs" })
		if o := call(relay.URL, token, "write-file", map[string]string{"path": "after.txt", "content": fmt.Sprint(round)}); !o.answer.OK {
			t.Fatalf("round %d: after the relay came back a write answered %s", round, o)
		}
		if o := call(relay.URL, token, "list-history", map[string]string{}); !o.answer.OK {
			t.Fatalf("round %d: after the relay came back the history answered %s", round, o)
		}
		for i := range writers {
			got := pageFile(tab, i)
			if got != was[i] && got != sized(round, i, pageFileSize) {
				t.Fatalf("round %d: file %d is neither old nor new: %d bytes beginning %q", round, i, len(got), got[:min(len(got), 40)])
			}
			was[i] = got
		}
	}
}
