package fleet_test

import (
	"testing"

	"github.com/voicebox-go/voicebox/internal/door/extensionhost"
	"github.com/voicebox-go/voicebox/internal/door/extensionhost/storetest"
	"github.com/voicebox-go/voicebox/internal/door/fleet"
	"github.com/voicebox-go/voicebox/internal/door/fleet/fleettest"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// TestExtensionStoreConformance holds the fleet's extension store to the suite the state
// directory passes, two relays (two connections) on one embedded NATS.
func TestExtensionStoreConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, twoRelays(fleettest.Start(t), "ext", func(f *fleet.Fleet) extensionhost.Store { return f.Extensions() }))
}

// TestARevocationOnOneRelayIsHonouredOnTheOther: an extension admitted through relay A, loaded
// there (its ledger kept), revoked through relay B, is no longer loaded by A's reload on hearing
// B's message; admitted again and revoked again through B while A hears nothing (the message
// lost), it is not loaded by A's next listing either. No read of A's is answered from a ledger
// older than the stream.
func TestARevocationOnOneRelayIsHonouredOnTheOther(t *testing.T) {
	t.Parallel()
	srv := fleettest.Start(t)
	fa, fb := join(t, srv, "revoke"), join(t, srv, "revoke")
	onA := extensionhost.NewAdmissionsIn(t.TempDir(), fa.Extensions(), nil)
	onB := extensionhost.NewAdmissionsIn(t.TempDir(), fb.Extensions(), nil)
	loadedOnA := func() int {
		t.Helper()
		l, _, err := onA.Load()
		if err != nil {
			t.Fatal(err)
		}
		return len(l)
	}
	if _, err := onA.Stage([]byte(`{"id":"notes","name":"Notes","capabilities":["clock"],"tools":[{"name":"notes_now","primitive":"now"}]}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := onA.Decide("notes", true, "host", nil); err != nil {
		t.Fatal(err)
	}
	if n := loadedOnA(); n != 1 {
		t.Fatalf("A loaded %d after admitting; want 1", n)
	}
	reloaded := make(chan int, 1)
	stop, err := fa.WatchExtensions(func() { reloaded <- loadedOnA() })
	if err != nil {
		t.Fatal(err)
	}
	if err := onB.Revoke("notes"); err != nil {
		t.Fatal(err)
	}
	if n := <-reloaded; n != 0 {
		t.Fatalf("A's reload on hearing B's revocation loaded %d; want 0", n)
	}
	stop()

	if _, err := onB.Decide("notes", true, "host", nil); err != nil {
		t.Fatal(err)
	}
	if n := loadedOnA(); n != 1 {
		t.Fatalf("A's listing after B admitted again loaded %d; want 1", n)
	}
	if err := onB.Revoke("notes"); err != nil {
		t.Fatal(err)
	}
	if n := loadedOnA(); n != 0 {
		t.Fatalf("A's listing after B revoked, the message lost, loaded %d; want 0", n)
	}
	if err := onA.Revoke("notes"); refusal.RuleOf(err) != refusal.NotFound {
		t.Fatalf("A's revocation of what B revoked: %v; want not-found", err)
	}
}
