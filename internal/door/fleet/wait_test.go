package fleet_test

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/voicebox-go/voicebox/internal/core/hub"
	"github.com/voicebox-go/voicebox/internal/door/fleet"
	"github.com/voicebox-go/voicebox/internal/door/fleet/fleettest"
	"github.com/voicebox-go/voicebox/internal/shared/channel"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
)

// latePage is a page that answers every call after late: the peer of a channel.Broker, the one a
// relay's hub asks its page through, so the broker's own timeout and waits are the real ones.
type latePage struct {
	late   time.Duration
	broker *channel.Broker
}

func (p *latePage) Connected() bool { return true }

func (p *latePage) Send(frame []byte) error {
	call, err := wire.ParseCall(frame)
	if err != nil {
		return err
	}
	time.AfterFunc(p.late, func() {
		b, _ := wire.Answer{CallID: call.CallID, OK: true, Observed: json.RawMessage(`{"late":true}`)}.MarshalJSON()
		p.broker.Answer(b)
	})
	return nil
}

// brokerLocal is a relay's executor slot whose page is asked through a channel.Broker.
type brokerLocal struct{ broker *channel.Broker }

func (l brokerLocal) AskLocal(ctx context.Context, call wire.Call) wire.Answer {
	return l.broker.Ask(ctx, call)
}
func (brokerLocal) Displace(string) bool { return false }

// Its broker waits timeout for an answer to a call whose caller asked no wait of its own.
func newLatePage(late, timeout time.Duration) *channel.Broker {
	p := &latePage{late: late}
	p.broker = channel.New(channel.Page, p, channel.Options{Timeout: timeout})
	return p.broker
}

// TestARoutedCallKeepsTheWaitItsCallerAsked: a call whose caller asked a wait longer than the
// broker's timeout (channel.WithWait, as an external app's call waiting for the person's
// approval does), to a page that answers a second after that timeout, gets the page's answer on
// a relay alone and routed from another relay in a fleet alike. Before, both the caller's relay
// (Router.Ask) and the holder's (serve) cut the routed call at the timeout (DefaultTimeout):
// page-timeout at 30 s in a fleet, the answer alone. The brokers and the fleet's relays wait
// callTimeout (2 s) where a relay waits DefaultTimeout, so it takes 3 s, not 31.
func TestARoutedCallKeepsTheWaitItsCallerAsked(t *testing.T) {
	t.Parallel()
	const callTimeout = 2 * time.Second
	late := callTimeout + time.Second
	wait := callTimeout + 10*time.Second

	srv := fleettest.Start(t)
	joinWaiting := func() *fleet.Fleet {
		f, err := fleet.Connect(fleet.WithCallTimeout(fleet.Config{URL: srv.URL(), Prefix: "wait49"}, callTimeout))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(f.Close)
		return f
	}
	a, b := joinWaiting(), joinWaiting()
	ra := a.NewRouter(brokerLocal{newLatePage(late, callTimeout)})
	rb := b.NewRouter(&stalledLocal{absent: true})
	t.Cleanup(func() { rb.Close(); ra.Close() })
	ra.SlotChanged(hub.Slot{Gen: 1, Held: true, Kind: channel.Page, Root: hub.Holding{Kind: "opfs", Name: "Browser storage"}})
	until(t, "B to hear A's lease", func() bool { _, ok := rb.Holding(); return ok })

	var alone, routed wire.Answer
	var wg sync.WaitGroup
	wg.Go(func() {
		alone = newLatePage(late, callTimeout).Ask(channel.WithWait(context.Background(), wait), routedCall("relay-1"))
	})
	start := time.Now()
	wg.Go(func() {
		routed = rb.Ask(channel.WithWait(context.Background(), wait), routedCall("relay-1"))
	})
	wg.Wait()
	took := time.Since(start)
	if !alone.OK {
		t.Fatalf("alone, the call answered %+v; want the page's answer", alone)
	}
	if !routed.OK || routed.CallID != "relay-1" || string(routed.Observed) != `{"late":true}` {
		t.Fatalf("routed, the call answered %+v after %v; want the page's answer, as alone", routed, took.Round(time.Millisecond))
	}
	if took < late {
		t.Fatalf("routed, the page's answer came after %v, sooner than the page gave it (%v)", took, late)
	}
}

// TestTheHolderBelievesNoLongerWaitThanAnyDoorAsks: whoever holds the fleet's NATS credentials
// can publish a call on the lease's subject with any deadline in its header. The holder's page
// is asked with the header's wait up to channel.MaxWait and no longer (a year's header before
// asked the page under a year's deadline; its broker cut it at 30 s only because no wait was
// marked); a header within a call's own bound marks no wait (the holder's broker keeps its own
// timeout), and a header that says nothing readable gives channel.DefaultTimeout.
func TestTheHolderBelievesNoLongerWaitThanAnyDoorAsks(t *testing.T) {
	srv := fleettest.Start(t)
	a := join(t, srv, "hwait49")
	seen := make(chan time.Duration, 1)
	marked := make(chan time.Duration, 1)
	ra := a.NewRouter(recordLocal(func(ctx context.Context) {
		d, _ := ctx.Deadline()
		seen <- time.Until(d)
		w, _ := channel.Wait(ctx)
		marked <- w
	}))
	t.Cleanup(ra.Close)
	ra.SlotChanged(hub.Slot{Gen: 1, Held: true, Kind: channel.Page, Root: hub.Holding{Kind: "opfs", Name: "Browser storage"}})

	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	var subject string
	until(t, "A's lease", func() bool {
		kv, err := js.KeyValue(context.Background(), "hwait49_executor")
		if err != nil {
			return false
		}
		e, err := kv.Get(context.Background(), "slot")
		if err != nil {
			return false
		}
		var l struct{ ID string }
		json.Unmarshal(e.Value(), &l)
		subject = "hwait49.exec." + l.ID
		return l.ID != ""
	})
	year := (365 * 24 * time.Hour).Milliseconds()
	for _, c := range []struct {
		header   string
		deadline time.Duration
		wait     time.Duration // 0: none marked
		what     string
	}{
		{strconv.FormatInt(year, 10), channel.MaxWait, channel.MaxWait, "a year"},
		{strconv.FormatInt(1<<62, 10), channel.MaxWait, channel.MaxWait, "past what a Duration holds in ms"},
		{"45000", 45 * time.Second, 45 * time.Second, "45 s, a wait a caller asked"},
		{"20000", 20 * time.Second, 0, "20 s, within a call's own bound"},
		{"soon", channel.DefaultTimeout, 0, "nothing readable"},
	} {
		frame, _ := routedCall("hostile/1").MarshalJSON()
		m := &nats.Msg{Subject: subject, Data: frame, Header: nats.Header{}}
		m.Header.Set("Voicebox-Deadline-Ms", c.header)
		if _, err := nc.RequestMsg(m, waitBound); err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		d, w := <-seen, <-marked
		if d > c.deadline || d < c.deadline-5*time.Second {
			t.Errorf("%s: the page was asked with %v left; want %v", c.what, d.Round(time.Millisecond), c.deadline)
		}
		if c.wait == 0 && w != 0 || c.wait != 0 && (w > c.wait || w < c.wait-5*time.Second) {
			t.Errorf("%s: the page was asked with a wait of %v; want %v", c.what, w.Round(time.Millisecond), c.wait)
		}
	}
}

// recordLocal is a relay's executor slot whose page answers at once, after see looked at how it
// was asked.
type recordLocal func(ctx context.Context)

func (l recordLocal) AskLocal(ctx context.Context, call wire.Call) wire.Answer {
	l(ctx)
	return wire.Answer{CallID: call.CallID, OK: true, Observed: json.RawMessage(`{}`)}
}
func (recordLocal) Displace(string) bool { return false }
