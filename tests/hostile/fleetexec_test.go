//go:build !js

package hostile

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/voicebox-go/voicebox/internal/door/fleet"
	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
	"github.com/voicebox-go/voicebox/tests/harness"
)

// The attack on the lease's subject: execFloodCalls small well-formed calls the page holds,
// execFloodHuge well-formed calls of execFloodHugeBytes it holds too, and garbage, small and huge.
const (
	execFloodCalls     = 3000
	execFloodHuge      = 64
	execFloodHugeBytes = 900 << 10
	execFloodGarbage   = 2000
)

// execFloodRSSSlackKB is how far above its resident memory before the attack the holder's may
// reach: MaxRoutedBytes of calls in flight (each read, parsed and sent to the page), the
// subscription's queue, and the client's buffers the flood passes through (on main, which held
// every call, the holder took hundreds of MB more).
const execFloodRSSSlackKB = 80 << 10

// heldPage is a page on an in-memory folder that holds every call on a path under "held/" until
// release is closed (a page busy with slow calls), counting how many it holds at once.
type heldPage struct {
	exec    *executor.Executor
	release chan struct{}

	mu         sync.Mutex
	held, most int
}

func (p *heldPage) Execute(ctx context.Context, call wire.Call) (json.RawMessage, error) {
	var args struct{ Path string }
	json.Unmarshal(call.Args, &args)
	if !strings.HasPrefix(args.Path, "held/") {
		return p.exec.Execute(ctx, call)
	}
	p.mu.Lock()
	p.held++
	p.most = max(p.most, p.held)
	p.mu.Unlock()
	<-p.release
	p.mu.Lock()
	p.held--
	p.mu.Unlock()
	return json.RawMessage(`{"held":true}`), nil
}

func (p *heldPage) counts() (held, most int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held, p.most
}

// TestAFloodOfRoutedCallsIsBoundedOnTheHolder: relays A and B of a fleet, the page on A. A NATS
// client with the fleet's credentials publishes on the lease's subject (<prefix>.exec.<lease>)
// thousands of well-formed calls the page holds (with a deadline of half an hour), huge ones,
// and garbage, small and huge. Before: the holder started a goroutine per message, each holding
// its call until the page answered (the page held 3,000 at once, and the relay hundreds of MB).
// Now at most fleet.MaxRoutedCalls reach the page at once and the holder's memory stays
// bounded; every other call is answered at once too-many-calls, each message at most once; a
// call of the person's through B meanwhile is answered too-many-calls at once (never
// outcome-unknown, never a wait), and through A it runs; the holder says so once per 10 s.
// Once the page answers, every held call is answered once and B's calls run again.
func TestAFloodOfRoutedCallsIsBoundedOnTheHolder(t *testing.T) {
	t.Parallel()
	f := harness.StartFleet(t, harness.FleetOptions{Prefix: "execflood", Named: true})
	a, b := f.Relays[0], f.Relays[1]
	page := &heldPage{exec: executor.New(fsroot.NewMemory(), executor.Options{}), release: make(chan struct{})}
	released := false
	release := func() {
		if !released {
			released = true
			close(page.release)
		}
	}
	t.Cleanup(release)
	f.GoPageWith(a, page)
	nc := f.Client()
	subject := f.ExecSubject()

	// Every reply the attacker gets, by its inbox.
	var mu sync.Mutex
	replies := map[string][]string{}
	inbox, err := nc.Subscribe("_INBOX.execflood.>", func(m *nats.Msg) {
		var body struct {
			CallID  string `json:"callId"`
			Refused string `json:"refused"`
		}
		json.Unmarshal(m.Data, &body)
		what := body.Refused
		if what == "" && body.CallID != "" {
			what = "answer " + body.CallID
		}
		mu.Lock()
		replies[m.Subject] = append(replies[m.Subject], what)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	inbox.SetPendingLimits(-1, -1)
	count := func() (tooMany, answered, other int, twice []string) {
		mu.Lock()
		defer mu.Unlock()
		for subj, rs := range replies {
			if len(rs) > 1 {
				twice = append(twice, fmt.Sprintf("%s: %v", subj, rs))
			}
			for _, r := range rs {
				switch {
				case r == "too-many-calls":
					tooMany++
				case strings.HasPrefix(r, "answer "):
					answered++
				default:
					other++
				}
			}
		}
		return
	}

	before := statsOf(t, a.PID())
	threadsBefore := threadsOf(t, a.PID())
	n := 0
	send := func(data []byte) {
		t.Helper()
		n++
		m := &nats.Msg{Subject: subject, Reply: fmt.Sprintf("_INBOX.execflood.%d", n), Data: data, Header: nats.Header{}}
		m.Header.Set("Voicebox-Deadline-Ms", "1800000")
		if err := nc.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
	}
	call := func(i int, content string) []byte {
		b, _ := json.Marshal(map[string]any{"v": 1, "callId": fmt.Sprintf("ghost/%d", i), "tool": "write-file",
			"descriptorId": executor.BuiltinDescriptor, "args": map[string]string{"path": fmt.Sprintf("held/%d.txt", i), "content": content},
			"boundsEcho": map[string]any{}})
		return b
	}
	huge := strings.Repeat("x", execFloodHugeBytes)
	for i := range execFloodHuge {
		send(call(i, huge))
		send([]byte(huge))
		if i%8 == 0 {
			nc.Flush()
		}
	}
	for i := range execFloodCalls {
		send(call(execFloodHuge+i, "x"))
		if i < execFloodGarbage {
			send([]byte(`{"v":1,"callId":`))
		}
		if i%500 == 0 {
			nc.Flush()
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	// The attacker's calls settle: the bound reached (on main: every call held), the rest
	// refused at once.
	// Some of the flood may have been dropped past the subscription's queue: more calls, at a
	// pace the holder reads them, until the page holds the bound.
	topped := execFloodHuge + execFloodCalls
	waitFor(t, "the flood's calls held", func() bool {
		if held, _ := page.counts(); held >= fleet.MaxRoutedCalls {
			return true
		}
		for range 32 {
			send(call(topped, "x"))
			topped++
		}
		nc.Flush()
		return false
	})
	for last := -1; ; time.Sleep(time.Second) { // what is still queued reaches the page, or not
		held, _ := page.counts()
		if held == last {
			break
		}
		last = held
	}
	during := statsOf(t, a.PID())
	held, most := page.counts()
	tooMany, answered, other, _ := count()
	t.Logf("the page holds %d routed calls (at most %d at once); the attacker got %d too-many-calls, %d answers, %d other replies",
		held, most, tooMany, answered, other)
	if most > fleet.MaxRoutedCalls {
		t.Errorf("the page held %d routed calls at once; the holder lets at most %d in flight", most, fleet.MaxRoutedCalls)
	}

	// The person's calls: through A (its own page) they run; through B, while the holder is
	// full, they are refused too-many-calls at once (a refused call ran nowhere).
	if r := a.Call(t, "now", map[string]string{}); !r.OK {
		t.Errorf("a call through A during the flood answered %s", r.Raw)
	}
	if held >= fleet.MaxRoutedCalls {
		start := time.Now()
		r := b.Call(t, "now", map[string]string{})
		if r.Refused != "too-many-calls" {
			t.Errorf("a call through B while the holder is full answered %s; want too-many-calls", r.Raw)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("B's call took %v to be refused; want at once", took)
		}
	} else {
		t.Errorf("the page holds %d calls, fewer than the bound %d: the flood did not fill it", held, fleet.MaxRoutedCalls)
	}

	release()
	waitFor(t, "the held calls answered", func() bool {
		_, answered, _, _ := count()
		held, _ := page.counts()
		return held == 0 && answered >= min(most, fleet.MaxRoutedCalls)
	})
	waitFor(t, "a call through B to run again", func() bool { return b.Call(t, "now", map[string]string{}).OK })
	time.Sleep(500 * time.Millisecond) // any late, second reply
	tooMany, answered, other, twice := count()
	t.Logf("in all the attacker got %d too-many-calls, %d answers, %d other replies (of %d messages)", tooMany, answered, other, n)
	if len(twice) > 0 {
		t.Errorf("%d messages were answered more than once, e.g. %s", len(twice), twice[0])
	}
	after := statsOf(t, a.PID())
	threadsAfter := threadsOf(t, a.PID())
	t.Logf("holder A: rss %d KB before, %d during, %d after (peak %d); threads %d before, %d after; fds %d, %d",
		before.rssKB, during.rssKB, after.rssKB, after.peakKB, threadsBefore, threadsAfter, before.fds, after.fds)
	if after.peakKB > before.rssKB+execFloodRSSSlackKB {
		t.Errorf("holder A held %d KB at its peak, %d before the flood", after.peakKB, before.rssKB)
	}
	if after.fds > before.fds+8 {
		t.Errorf("holder A has %d descriptors open after the flood, %d before", after.fds, before.fds)
	}
	logs := a.Stderr()
	if n := strings.Count(logs, "routed calls past the executor's bound were refused"); n == 0 || n > 3 {
		t.Errorf("holder A said %d times that it refused routed calls past its bound (want once per 10 s)", n)
	}
	served(t, a)
}
