//go:build !js

package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/internal/door/fleet"
	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
	"github.com/voicebox-go/voicebox/tests/harness"
)

// routedBurst is how many calls B and C route at once to the page on A in each round, half
// each: more than the holder takes in flight (fleet.MaxRoutedCalls), and fewer than one client
// holds connections open on one relay (server.MaxConnsPerClient).
const routedBurst = 400

// routedStop is how long A's relay is stopped while B's calls are on their way: well within the
// lease TTL (5 s), so nobody takes A for gone.
const routedStop = 2 * time.Second

// routedCallBound bounds each of B's calls: a call whose message was dropped on the way is
// answered page-timeout at its deadline (channel.DefaultTimeout, 30 s).
const routedCallBound = 45 * time.Second

// stallingPage is a page on an in-memory folder that counts the calls it runs at once (each takes
// a little while) and the writes of each path, and holds every call while stalled.
type stallingPage struct {
	exec *executor.Executor

	mu         sync.Mutex
	stall      chan struct{} // closed: the page runs calls again; nil: it is not stalled
	now, most  int
	writes     map[string]int
	stalledNow int
}

func (p *stallingPage) Execute(ctx context.Context, call wire.Call) (json.RawMessage, error) {
	p.mu.Lock()
	p.now++
	p.most = max(p.most, p.now)
	stall := p.stall
	if stall != nil {
		p.stalledNow++
	}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.now--
		p.mu.Unlock()
	}()
	if stall != nil {
		<-stall
	}
	time.Sleep(100 * time.Millisecond)
	if call.Tool == "write-file" {
		var args struct{ Path string }
		json.Unmarshal(call.Args, &args)
		p.mu.Lock()
		p.writes[args.Path]++
		p.mu.Unlock()
	}
	return p.exec.Execute(ctx, call)
}

// routedWrite is one of B's calls and its answer.
type routedWrite struct {
	path   string
	answer harness.Answer
	err    error
}

// burst writes n files at once through relays in turn, under prefix, and returns every call's
// answer.
func burst(relays []*harness.Relay, tokens []string, prefix string, n int) []routedWrite {
	out := make([]routedWrite, n)
	var wg sync.WaitGroup
	for i := range n {
		out[i].path = fmt.Sprintf("%s/%d.txt", prefix, i)
		relay, token := relays[i%len(relays)], tokens[i%len(relays)]
		wg.Go(func() {
			b, _ := json.Marshal(map[string]any{"tool": "write-file", "args": map[string]string{"path": out[i].path, "content": "x"}})
			ctx, cancel := context.WithTimeout(context.Background(), routedCallBound)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, relay.URL+"/api/root/call", bytes.NewReader(b))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("x-voicebox-host-token", token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				out[i].err = err
				return
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			if err := json.Unmarshal(raw, &out[i].answer); err != nil {
				out[i].err = fmt.Errorf("answered %d %q", resp.StatusCode, raw)
			}
			out[i].answer.Raw = raw
		})
	}
	wg.Wait()
	return out
}

// TestRoutedCallsStayBoundedWhileTheHolderStalls: relays A, B and C of a fleet, the page on A.
// Round one: the page stalls (it holds every call) while B and C route 400 calls at once; at most
// fleet.MaxRoutedCalls reach it, the others are answered too-many-calls at once (never
// outcome-unknown), and once it runs again the held ones are answered. Round two: A's relay is
// stopped (SIGSTOP) while B and C route 400 calls; once it runs again it reads them all at once and
// still lets at most the bound in flight. Every call gets one answer: ok (its file written
// once), too-many-calls (nothing written), or page-timeout at its deadline only when A said it
// dropped messages; calls after it run. On main the page was sent every call at once.
func TestRoutedCallsStayBoundedWhileTheHolderStalls(t *testing.T) {
	t.Parallel()
	f := harness.StartFleet(t, harness.FleetOptions{Prefix: "stall48", Relays: 3, Named: true})
	a, b, c := f.Relays[0], f.Relays[1], f.Relays[2]
	page := &stallingPage{exec: executor.New(fsroot.NewMemory(), executor.Options{}), writes: map[string]int{}}
	f.GoPageWith(a, page)
	callers, tokens := []*harness.Relay{b, c}, []string{b.HostToken(t), c.HostToken(t)}

	check := func(round string, got []routedWrite) {
		t.Helper()
		counts := map[string]int{}
		page.mu.Lock()
		defer page.mu.Unlock()
		for _, w := range got {
			rule := w.answer.Refused
			if w.err != nil {
				t.Errorf("%s: %s got no answer: %v", round, w.path, w.err)
				continue
			}
			written := page.writes[w.path]
			switch {
			case w.answer.OK:
				rule = "ok"
				if written != 1 {
					t.Errorf("%s: %s answered ok, written %d times", round, w.path, written)
				}
			case rule == "too-many-calls":
				if written != 0 {
					t.Errorf("%s: %s refused too-many-calls, written %d times", round, w.path, written)
				}
			case rule == "page-timeout" && strings.Contains(a.Stderr(), "stall48.exec."):
				// Its message was among those A dropped past its queue (said in its log).
			default:
				t.Errorf("%s: %s answered %s", round, w.path, w.answer.Raw)
			}
			counts[rule]++
		}
		t.Logf("%s: %v; the page ran at most %d calls at once", round, counts, page.most)
		if page.most > fleet.MaxRoutedCalls {
			t.Errorf("%s: the page was sent %d routed calls at once; the holder lets at most %d in flight", round, page.most, fleet.MaxRoutedCalls)
		}
		if counts["too-many-calls"] == 0 {
			t.Errorf("%s: no call past the bound was refused too-many-calls", round)
		}
	}

	// Round one: the page stalls.
	page.mu.Lock()
	page.stall = make(chan struct{})
	page.mu.Unlock()
	done := make(chan []routedWrite, 1)
	go func() { done <- burst(callers, tokens, "stalled", routedBurst) }()
	fleetWaitFor(t, "the stalled page to hold the bound's calls", func() bool {
		page.mu.Lock()
		defer page.mu.Unlock()
		return page.stalledNow >= min(fleet.MaxRoutedCalls, routedBurst) || page.stalledNow >= routedBurst
	})
	time.Sleep(time.Second) // the rest, refused (or, on main, sent too)
	page.mu.Lock()
	close(page.stall)
	page.stall = nil
	page.mu.Unlock()
	check("the page stalled", <-done)

	// Round two: A's relay stops while B's calls are on their way.
	page.mu.Lock()
	page.most = 0
	page.mu.Unlock()
	resume := a.Pause(t)
	go func() { done <- burst(callers, tokens, "stopped", routedBurst) }()
	time.Sleep(routedStop)
	resume()
	check("A's relay stopped", <-done)

	// After it, calls run.
	for i := range 3 {
		if r := b.Call(t, "write-file", map[string]string{"path": fmt.Sprintf("after/%d.txt", i), "content": "x"}); !r.OK {
			t.Fatalf("a call through B after the rounds answered %s", r.Raw)
		}
	}
	if r := a.Call(t, "list-files", map[string]string{}); !r.OK {
		t.Fatalf("a call through A after the rounds answered %s", r.Raw)
	}
}
