//go:build !js

package chaos

import (
	"fmt"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/internal/door/fleet/fleettest"
	"github.com/voicebox-go/voicebox/internal/shared/approval"
	"github.com/voicebox-go/voicebox/tests/harness"
)

// lostTurnBound bounds the wait for a lost turn to show outcome-unknown after its relay was
// killed: the approval's own wait, so it ends long before the page's timer could (the
// approval's wait and OUTCOME_GRACE_MS, from the turn's 202, which came before the kill). Only
// the fleet's list of live runs can settle the turn within it.
const lostTurnBound = approval.Timeout

// TestAFleetsTurnPendingApprovalIsKnownLostWhenItsRelayRestarts: two relays of a fleet on one
// NATS, the page on relay A with a delete waiting for the person's approval. A is killed (-9)
// and started again on its port (a new run). Its new hello cannot name the turn, and in a fleet
// that proves nothing (another relay may hold it), so the page once waited 105 s; now, once A
// knows the fleet's live runs (a lease TTL after joining), it lists them, the old run is not
// among them, and the page settles the turn outcome-unknown within the approval's own wait. The
// file is untouched, and a delete typed again is asked, approved and done.
func TestAFleetsTurnPendingApprovalIsKnownLostWhenItsRelayRestarts(t *testing.T) {
	nats := fleettest.Start(t)
	fleetEnv := []string{"VOICEBOX_NATS=" + nats.URL(), "VOICEBOX_NATS_PREFIX=fleet44"}
	port := harness.RestartablePort(t)
	a := harness.StartRelay(t, append([]string{"PORT=" + port}, fleetEnv...)...)
	harness.StartRelay(t, fleetEnv...) // relay B, alive throughout
	state := a.StateDir
	tab := openPage(t, a)
	tab.Allow(`WebSocket connection to .*/channel' failed`)
	tab.Allow(`ERR_CONNECTION_REFUSED|ERR_CONNECTION_RESET|ERR_EMPTY_RESPONSE|ERR_NETWORK_CHANGED`)
	tab.Allow(`Failed to load resource|ERR_INCOMPLETE_CHUNKED_ENCODING|answered 503: .*/api/(events|turn)`)

	const name = "kept.txt"
	if !harness.Eval[bool](tab, fmt.Sprintf(`voicebox.call('files.write', {path: %q, content: 'still here'}).then(a => a.ok)`, name)) {
		t.Fatalf("writing %s failed", name)
	}
	typeCommand(t, tab, "delete "+name)
	pendingTurn(t, tab)

	a.Kill(t)
	a = harness.StartRelay(t, append([]string{"PORT=" + port, "VOICEBOX_STATE_DIR=" + state}, fleetEnv...)...)
	harness.WaitFor[bool](tab, `(() => { const li = document.querySelector('#turns li.turn'); return li.dataset.state !== 'pending'; })()`, lostTurnBound)
	if got := turnShown(tab); got[0] != "refused" || !strings.Contains(got[1], "outcome-unknown") || !strings.Contains(got[1], "no longer hears") {
		t.Fatalf("the turn of the killed run shows %q: %q", got[0], got[1])
	}
	if !harness.Eval[bool](tab, fmt.Sprintf(`voicebox.call('files.read', {path: %q}).then(v => v.ok && v.value.text === 'still here')`, name)) {
		t.Fatalf("%s is gone, though its delete was never approved", name)
	}

	harness.WaitFor[bool](tab, `document.querySelector('#channel').dataset.state === 'connected'`, patience)
	typeCommand(t, tab, "delete "+name)
	id := pendingTurn(t, tab)
	harness.Eval[bool](tab, fmt.Sprintf(`(document.querySelector('#approvals li.approval[data-approval-id=%q] button.approve').click(), true)`, id))
	harness.WaitFor[bool](tab, `(() => { const li = document.querySelector('#turns li.turn'); return li.dataset.state !== 'pending'; })()`, patience)
	if got := turnShown(tab); got[0] != "ok" {
		t.Fatalf("after the restart an approved delete shows %q: %q", got[0], got[1])
	}
	if harness.Eval[bool](tab, fmt.Sprintf(`voicebox.call('files.read', {path: %q}).then(v => v.ok)`, name)) {
		t.Fatalf("%s is still there after its approved delete", name)
	}
}
