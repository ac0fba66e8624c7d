//go:build !js

package chaos

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// takeoverWriters is how many writes through the relay the holder tab has in hand when it goes.
const takeoverWriters = 8

// TestTheWaitingTabTakesOverWhenTheHolderGoesMidWrite: two tabs are open on one relay; the one
// holding the workspace has writes in flight when its renderer crashes, or when it is closed. Every
// call ends with one answer (ok, or the rule that names why: page-closed for one in the holder's
// hands, no-page for one in the moment nobody held the slot), the waiting tab takes the workspace
// over with no click, the next write is served, and every file is its old or its new version.
func TestTheWaitingTabTakesOverWhenTheHolderGoesMidWrite(t *testing.T) {
	for _, tt := range []struct {
		name string
		end  func(t *testing.T, tab *harness.Tab)
	}{
		{"renderer crash", func(t *testing.T, tab *harness.Tab) {
			// Page.crash does not answer: the renderer it would answer from is gone.
			ctx, cancel := context.WithTimeout(tab.Ctx, time.Second)
			defer cancel()
			chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, target *chromedp.Target) error {
				_, err := cdp.Call(ctx, target, page.Crash, cdp.Empty{})
				return err
			}))
		}},
		{"tab closed", func(t *testing.T, tab *harness.Tab) { tab.Close() }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			relay := harness.StartRelay(t)
			token := relay.HostToken(t)
			holder := openPage(t, relay)
			holder.Allow(`.`) // it is the one that goes: whatever it logs on the way
			waiting := harness.NewTab(t)
			waiting.Navigate(relay.URL)
			harness.WaitFor[bool](waiting, `document.querySelector('#status').dataset.state === 'ready' &&
				document.querySelector('#channel').dataset.state === 'replaced'`, patience)
			if !harness.Eval[bool](holder, `document.querySelector('#channel').dataset.state === 'connected'`) {
				t.Fatal("the second tab took the workspace when it opened")
			}
			was := make([]string, takeoverWriters)
			for i := range takeoverWriters {
				if o := call(relay.URL, token, "write-file", map[string]string{"path": fileName(i), "content": sized(0, i, pageFileSize)}); !o.answer.OK {
					t.Fatalf("the first version of file %d answered %s", i, o)
				}
				was[i] = sized(0, i, pageFileSize)
			}

			outs := make([]outcome, takeoverWriters)
			first := make(chan struct{}, 1)
			ended := make(chan int, takeoverWriters)
			for i := range takeoverWriters {
				go func() {
					outs[i] = call(relay.URL, token, "write-file", map[string]string{"path": fileName(i), "content": sized(1, i, pageFileSize)})
					select {
					case first <- struct{}{}:
					default:
					}
					ended <- i
				}()
			}
			<-first
			tt.end(t, holder)
			for range takeoverWriters {
				select {
				case <-ended:
				case <-time.After(callBound):
					t.Fatalf("a write had no answer within %v of the holder going", callBound)
				}
			}
			for i, o := range outs {
				if !o.answered() {
					t.Fatalf("write %d ended with no answer: %s", i, o)
				}
				if !o.answer.OK && o.answer.Refused != "page-closed" && o.answer.Refused != "no-page" {
					t.Fatalf("write %d was refused %s", i, o)
				}
			}
			t.Logf("%d of %d writes answered ok, refused %v", okCount(outs), takeoverWriters, rules(outs))

			harness.WaitFor[bool](waiting, `document.querySelector('#channel').dataset.state === 'connected'`, patience)
			waitFor(t, "the relay to hold the waiting tab's root", func() bool { return rootKind(relay.URL) == "opfs" })
			if o := call(relay.URL, token, "write-file", map[string]string{"path": "after.txt", "content": "served"}); !o.answer.OK {
				t.Fatalf("after the takeover a write answered %s", o)
			}
			for i := range takeoverWriters {
				got := pageFile(waiting, i)
				if got != was[i] && got != sized(1, i, pageFileSize) {
					t.Fatalf("file %d is neither old nor new: %d bytes beginning %q", i, len(got), got[:min(len(got), 40)])
				}
				if outs[i].answer.OK && got != sized(1, i, pageFileSize) {
					t.Fatalf("write %d answered ok but the file holds its old version", i)
				}
			}
		})
	}
}
