//go:build !js

package hostile

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/coder/websocket"

	"github.com/voicebox-go/voicebox/internal/core/hub/hubtest"
	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/shared/refusal"
	"github.com/voicebox-go/voicebox/tests/harness"
)

// TestTakeFramesMoveTheSlotAndLoseNoCall: a page that waits (standby) may take the slot with
// {"type":"take"} (its person's "Use this tab"). A waiting page floods take frames, well formed
// and not (extra members, a 60 KB member, another case), while calls keep coming: every call is
// answered once, by whichever page held the slot when it was sent, or refused by a rule that
// names why (page-closed, no-page); the holder that lost the slot waits with its socket open and
// takes it back with one take; the relay serves on.
func TestTakeFramesMoveTheSlotAndLoseNoCall(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	dial := func() *hubtest.Peer {
		return hubtest.Serve(hubtest.Dial(t, relay.URL, http.Header{"Origin": {relay.URL}}, patience), executor.New(fsroot.NewMemory(), executor.Options{}))
	}
	first := dial()
	waitFor(t, "the first page to hold the slot", func() bool { return first.SawControl("holding") })
	if a := relay.Call(t, "write-file", map[string]string{"path": "first.txt", "content": "only the first page has it"}); !a.OK {
		t.Fatalf("a write to the first page: %s", a.Raw)
	}
	second := dial()
	waitFor(t, "the second page to wait", func() bool { return second.SawControl("standby") })
	if a := relay.Call(t, "read-file", map[string]string{"path": "first.txt"}); !a.OK {
		t.Fatalf("a page that only waits took the calls: %s", a.Raw)
	}

	frames := []string{`{"type":"take"}`, `{"type":"take","take":{"x":[1,2,3]}}`, `{"type":"take","why":"` + strings.Repeat("w", 60<<10) + `"}`, `{"type":"TAKE"}`, `{"type":"take","role":"environment"}`}
	var flood sync.WaitGroup
	flood.Go(func() {
		for i := range 400 {
			if err := second.WS.Write(context.Background(), websocket.MessageText, []byte(frames[i%len(frames)])); err != nil {
				t.Errorf("the relay closed the waiting page's socket at take %d: %v", i, err)
				return
			}
		}
	})
	allowed := map[string]bool{"": true, string(refusal.PageClosed): true, string(refusal.NoPage): true, string(refusal.NotFound): true}
	for i := range 40 {
		a := relay.Call(t, "read-file", map[string]string{"path": "first.txt"})
		if !allowed[a.Refused] {
			t.Fatalf("call %d during the flood answered %s", i, a.Raw)
		}
	}
	flood.Wait()
	// The second page holds now: its workspace has no first.txt.
	waitFor(t, "the second page to hold the slot", func() bool {
		return relay.Call(t, "read-file", map[string]string{"path": "first.txt"}).Refused == string(refusal.NotFound)
	})
	waitFor(t, "the first page to be told it waits", func() bool { return first.SawControl("standby") })

	// One take gives it back, on the socket it kept.
	if err := first.WS.Write(context.Background(), websocket.MessageText, []byte(`{"type":"take"}`)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first page to hold the slot again", func() bool {
		return relay.Call(t, "read-file", map[string]string{"path": "first.txt"}).OK
	})
	served(t, relay)
}
