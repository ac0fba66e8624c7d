package fleet_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/voicebox-go/voicebox/internal/core/hub"
	"github.com/voicebox-go/voicebox/internal/door/fleet"
	"github.com/voicebox-go/voicebox/internal/door/fleet/fleettest"
	"github.com/voicebox-go/voicebox/internal/shared/channel"
	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// stalledLocal is a relay's executor slot whose page holds every call until release is closed
// (with no executor, when absent is set).
type stalledLocal struct {
	absent  bool
	release chan struct{}

	mu   sync.Mutex
	held int
}

func (l *stalledLocal) AskLocal(ctx context.Context, call wire.Call) wire.Answer {
	if l.absent {
		return wire.Refuse(call.CallID, refusal.New(refusal.NoPage, "no page here"))
	}
	l.mu.Lock()
	l.held++
	l.mu.Unlock()
	select {
	case <-l.release:
		return wire.Answer{CallID: call.CallID, OK: true, Observed: json.RawMessage(`{}`)}
	case <-ctx.Done():
		return wire.Refuse(call.CallID, refusal.New(refusal.PageTimeout, "held"))
	}
}

func (l *stalledLocal) Displace(string) bool { return false }

func (l *stalledLocal) holding() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held
}

func routedCall(id string) wire.Call {
	return wire.Call{CallID: id, Tool: "now", DescriptorID: executor.BuiltinDescriptor, Args: json.RawMessage(`{}`), BoundsEcho: json.RawMessage(`{}`)}
}

// TestARoutedCallPastTheHoldersBoundIsRefusedAtOnce: relay A's page holds every call; relay B
// routes fleet.MaxRoutedCalls calls to it, then one more. The one more is answered at once
// too-many-calls, under its caller's callId (before: every call was sent to the page, and a
// holder refusing would have read as malformed-answer); once the page answers, B's next call runs.
func TestARoutedCallPastTheHoldersBoundIsRefusedAtOnce(t *testing.T) {
	srv := fleettest.Start(t)
	a, b := join(t, srv, "bound48"), join(t, srv, "bound48")
	page := &stalledLocal{release: make(chan struct{})}
	ra := a.NewRouter(page)
	rb := b.NewRouter(&stalledLocal{absent: true})
	t.Cleanup(func() { rb.Close(); ra.Close() })
	ra.SlotChanged(hub.Slot{Gen: 1, Held: true, Kind: channel.Page, Root: hub.Holding{Kind: "opfs", Name: "Browser storage"}})
	until(t, "B to hear A's lease", func() bool { _, ok := rb.Holding(); return ok })

	var wg sync.WaitGroup
	answers := make(chan wire.Answer, fleet.MaxRoutedCalls)
	for i := range fleet.MaxRoutedCalls {
		wg.Go(func() { answers <- rb.Ask(context.Background(), routedCall(fmt.Sprintf("held-%d", i))) })
	}
	until(t, "A's page to hold the bound's calls", func() bool { return page.holding() >= fleet.MaxRoutedCalls })
	start := time.Now()
	one := rb.Ask(context.Background(), routedCall("relay-1"))
	if one.OK || one.Refused != refusal.TooManyCalls || one.CallID != "relay-1" {
		t.Fatalf("the call past the bound answered %+v; want too-many-calls under relay-1", one)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the call past the bound was refused after %v; want at once", took)
	}
	t.Logf("told: %s", one.Why)
	close(page.release)
	wg.Wait()
	close(answers)
	for a := range answers {
		if !a.OK {
			t.Errorf("a held call answered %+v", a)
		}
	}
	if a := rb.Ask(context.Background(), routedCall("relay-2")); !a.OK {
		t.Fatalf("a call after the page answered: %+v", a)
	}
}

// TestARoutedCallWhoseMessageIsDroppedTimesOut: a call routed to a lease whose subject has a
// subscriber that never answers (as when the holder dropped the message past its queue, in a
// flood) is answered at its deadline with the page's timeout rule, "may or may not have run":
// its relay cannot tell a drop from a slow page, and the lease is alive meanwhile.
func TestARoutedCallWhoseMessageIsDroppedTimesOut(t *testing.T) {
	srv := fleettest.Start(t)
	b := join(t, srv, "drop48")
	rb := b.NewRouter(&stalledLocal{absent: true})
	t.Cleanup(rb.Close)
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	if _, err := nc.Subscribe("drop48.exec.ghost", func(*nats.Msg) {}); err != nil { // dropped
		t.Fatal(err)
	}
	nc.Flush()
	js, _ := jetstream.New(nc)
	kv, err := js.KeyValue(context.Background(), "drop48_executor")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(context.Background(), "slot", []byte(`{"id":"ghost","relay":"relay-ghost","kind":"page","beat":1}`)); err != nil {
		t.Fatal(err)
	}
	until(t, "B to hear the lease", func() bool { _, ok := rb.Holding(); return ok })
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start := time.Now()
	a := rb.Ask(ctx, routedCall("relay-1"))
	if a.OK || a.Refused != refusal.PageTimeout || a.CallID != "relay-1" {
		t.Fatalf("a call whose message was dropped answered %+v; want page-timeout", a)
	}
	if took := time.Since(start); took < 900*time.Millisecond || took > 3*time.Second {
		t.Errorf("it was answered after %v; want at its deadline (1 s)", took)
	}
	t.Logf("told: %s", a.Why)
}
