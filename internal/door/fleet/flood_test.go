package fleet_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/voicebox-go/voicebox/internal/door/fleet/fleettest"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// holder is a relay's catalogue that holds the approval "ap-real", and whose decisions on
// "ap-block" wait until release is closed (a relay busy while a flood arrives).
type holder struct {
	release chan struct{}
}

func (h *holder) DeliverEvent([]byte) {}
func (h *holder) DecideLocal(id string, _ bool) bool {
	if id == "ap-block" {
		<-h.release
	}
	return id == "ap-real"
}
func (h *holder) Instance() string { return "run-holder" }

// floodDecisions is how many decisions the flood sends to the holder's own subject while it is
// busy: more than a subscription there holds, so the queue is full when the person decides.
const floodDecisions = 2000

// TestADecisionLostInAFloodIsSaidUnknown: relay B asked for approval "ap-real" and relay A
// heard it. While B is busy, a NATS client floods B's own decisions subject past what B holds,
// so the person's decision, posted through A, is dropped at B (or its answer is late past
// fleet.OpTimeout). A does not say the request is gone (that is "not found", a 404 the person
// reads as "it timed out"): it says outcome-unknown, with a sentence to decide again. Once B is
// free, the decision made again reaches it.
func TestADecisionLostInAFloodIsSaidUnknown(t *testing.T) {
	t.Parallel()
	srv := fleettest.Start(t)
	a := join(t, srv, "lost")
	b := join(t, srv, "lost")
	c := &catalogue{delivered: make(chan string, 16)}
	evA, err := a.NewEvents(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(evA.Close)
	h := &holder{release: make(chan struct{})}
	evB, err := b.NewEvents(h)
	if err != nil {
		t.Fatal(err)
	}
	released := false
	free := func() {
		if !released {
			released = true
			close(h.release)
		}
	}
	t.Cleanup(func() { free(); evB.Close() })
	evB.PublishEvent([]byte("event: approval\ndata: {\"id\":\"ap-real\",\"deadline\":\"" + time.Now().Add(time.Minute).UTC().Format(time.RFC3339) + "\"}\n\n"))
	c.waitFor(t, "approval")

	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	subject := "lost.approvals." + b.ID()
	nc.Publish(subject, []byte(`{"id":"ap-block","approve":true}`))
	for range floodDecisions {
		nc.Publish(subject, []byte(`{"id":"ap-made-up","approve":true}`))
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	decided, why := evA.Decide("ap-real", true)
	r, ok := refusal.As(why)
	if decided || !ok || r.Rule != refusal.OutcomeUnknown {
		t.Fatalf("a decision dropped in a flood: decided %v, %v; want outcome-unknown", decided, why)
	}
	t.Logf("told: %s", r.Why)

	free()
	until(t, "the decision made again to reach B", func() bool {
		decided, why := evA.Decide("ap-real", true)
		if r, ok := refusal.As(why); why != nil && (!ok || r.Rule != refusal.OutcomeUnknown) {
			t.Fatalf("deciding again: %v", why)
		}
		return decided
	})
}
