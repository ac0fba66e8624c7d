//go:build !js

package chaos

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// typeCommand types command into the page's command box and sends it.
func typeCommand(t *testing.T, tab *harness.Tab, command string) {
	t.Helper()
	text, _ := json.Marshal(command)
	harness.Eval[bool](tab, fmt.Sprintf(`(document.querySelector('#command').value = %s, document.querySelector('#command-form button[type="submit"]').click(), true)`, text))
}

// pendingTurn is the page's newest turn once it waits for the person's approval: the approval's
// id, and the request is shown among the approvals.
func pendingTurn(t *testing.T, tab *harness.Tab) string {
	t.Helper()
	return harness.WaitFor[string](tab, `(() => { const li = document.querySelector('#turns li.turn');
		return li && li.dataset.state === 'pending' && li.dataset.approvalId &&
			document.querySelector('#approvals li.approval[data-approval-id="' + li.dataset.approvalId + '"]') && li.dataset.approvalId; })()`, patience)
}

// turnShown is the page's newest turn as shown: its state and its text.
func turnShown(tab *harness.Tab) []string {
	return harness.Eval[[]string](tab, `(() => { const li = document.querySelector('#turns li.turn');
		return [li.dataset.state, li.textContent]; })()`)
}

// TestATurnPendingApprovalIsKnownLostWhenItsRelayRestarts: a delete typed in the page waits for the
// person's approval when its relay is killed (-9) and started again on the same port. The new
// relay's hello, which names the turns it can answer for, is the page's proof the turn is lost:
// by the time that hello has cleared the old request from the approvals (the same event), the
// turn says outcome-unknown (it waited the approval's 60 s and 45 s more, with the relay back and
// the request gone), and the file is still there. Then a delete typed again is asked, approved
// and done by the new relay. Every round the same.
func TestATurnPendingApprovalIsKnownLostWhenItsRelayRestarts(t *testing.T) {
	port := harness.RestartablePort(t)
	relay := harness.StartRelay(t, "PORT="+port)
	state := relay.StateDir
	tab := openPage(t, relay)
	allowRelayDown(tab)
	for round := 1; round <= chaosRounds; round++ {
		name := fmt.Sprintf("kept-%d.txt", round)
		if !harness.Eval[bool](tab, fmt.Sprintf(`voicebox.call('files.write', {path: %q, content: 'still here'}).then(a => a.ok)`, name)) {
			t.Fatalf("round %d: writing %s failed", round, name)
		}
		typeCommand(t, tab, "delete "+name)
		pendingTurn(t, tab)

		relay.Kill(t)
		relay = harness.StartRelay(t, "PORT="+port, "VOICEBOX_STATE_DIR="+state)
		harness.WaitFor[bool](tab, `document.querySelectorAll('#approvals li.approval').length === 0`, patience)
		if got := turnShown(tab); got[0] != "refused" || !strings.Contains(got[1], "outcome-unknown") || !strings.Contains(got[1], "stopped") {
			t.Fatalf("round %d: the new relay's hello cleared the request, yet the turn shows %q: %q", round, got[0], got[1])
		}
		if !harness.Eval[bool](tab, fmt.Sprintf(`voicebox.call('files.read', {path: %q}).then(v => v.ok && v.value.text === 'still here')`, name)) {
			t.Fatalf("round %d: %s is gone, though its delete was never approved", round, name)
		}

		harness.WaitFor[bool](tab, `document.querySelector('#channel').dataset.state === 'connected'`, patience)
		typeCommand(t, tab, "delete "+name)
		id := pendingTurn(t, tab)
		harness.Eval[bool](tab, fmt.Sprintf(`(document.querySelector('#approvals li.approval[data-approval-id=%q] button.approve').click(), true)`, id))
		harness.WaitFor[bool](tab, `(() => { const li = document.querySelector('#turns li.turn'); return li.dataset.state !== 'pending'; })()`, patience)
		if got := turnShown(tab); got[0] != "ok" {
			t.Fatalf("round %d: after the restart an approved delete shows %q: %q", round, got[0], got[1])
		}
	}
}
