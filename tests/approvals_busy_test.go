//go:build !js

package tests

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// decisionBound is the hang guard of one decision from the page: far under the approval's own
// deadline (internal/shared/approval.Timeout, 60 s), so a decision that queues until a held request ends
// fails the test rather than passing late.
const decisionBound = 20 * time.Second

// TestApprovalsOfABusyTabAreAnsweredAtOnce: with 5, then 8, deletes typed in the page waiting for
// the person at once (a browser opens six connections to one host, and the event stream holds
// one), every waiting request is shown, each Approve or Deny is answered, and each turn ends once
// with its outcome shown: the approved file is gone, the denied one stays.
func TestApprovalsOfABusyTabAreAnsweredAtOnce(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t)
	tab := openExecutor(t, relay)
	summaryName := regexp.MustCompile(`^Delete (\S+) \(`)
	for round, n := range []int{5, 8} {
		names := map[string]bool{}
		for i := range n {
			name := fmt.Sprintf("r%d-f%d.txt", round, i)
			names[name] = true
			if got := harness.Eval[bool](tab, fmt.Sprintf(`voicebox.call('files.write', {path: %q, content: %q}).then(a => a.ok)`, name, name)); !got {
				t.Fatalf("writing %s failed", name)
			}
		}
		for name := range names {
			typedAsync(t, tab, "delete "+name)
		}
		shown := harness.WaitFor[int](tab, fmt.Sprintf(`(() => { const n = document.querySelectorAll('#approvals li.approval').length;
			return n === %d && !document.querySelector('#approvals').hidden && n; })()`, n), turnBound)
		t.Logf("round %d: %d requests wait for the person", round, shown)

		approved := map[string]bool{}
		for i := range n {
			// The oldest request still shown: its file, and its id.
			got := harness.Eval[[]string](tab, `(() => { const a = document.querySelector('#approvals li.approval');
				return [a.dataset.approvalId, a.querySelector('.summary').textContent]; })()`)
			m := summaryName.FindStringSubmatch(got[1])
			if m == nil || !names[m[1]] {
				t.Fatalf("round %d: a request asks %q", round, got[1])
			}
			name, approve := m[1], i%2 == 0
			approved[name] = approve
			button := map[bool]string{true: "approve", false: "deny"}[approve]
			harness.Eval[bool](tab, fmt.Sprintf(`(document.querySelector('#approvals li.approval[data-approval-id=%q] button.%s').click(), true)`, got[0], button))
			// The decision is answered (the request leaves the page) and the turn shows its
			// outcome, each within decisionBound.
			want := map[bool]string{true: "ok", false: "refused"}[approve]
			state := harness.WaitFor[string](tab, fmt.Sprintf(`(() => {
				if (document.querySelector('#approvals li.approval[data-approval-id=%q]')) return '';
				const li = [...document.querySelectorAll('#turns li')].find(l => l.querySelector('.said').textContent === %q);
				return li && li.dataset.state !== 'pending' && li.dataset.state; })()`, got[0], "delete "+name), decisionBound)
			if state != want {
				t.Fatalf("round %d: %s of %s ended %q", round, button, name, state)
			}
		}
		// Every turn ended once, with one outcome shown, the one decided.
		for name, approve := range approved {
			res := harness.Eval[[]string](tab, fmt.Sprintf(`(() => {
				const li = [...document.querySelectorAll('#turns li')].filter(l => l.querySelector('.said').textContent === %q);
				return li.length === 1 ? [li[0].dataset.state, String(li[0].querySelectorAll('.result').length), li[0].querySelector('.result').textContent] : [String(li.length)]; })()`, "delete "+name))
			if len(res) != 3 || res[1] != "1" {
				t.Fatalf("round %d: the turns of delete %s: %v", round, name, res)
			}
			if approve && (res[0] != "ok" || !strings.Contains(res[2], "you approved it")) || !approve && (res[0] != "refused" || !strings.Contains(res[2], "approval-denied")) {
				t.Fatalf("round %d: delete %s (approved %v) shows %v", round, name, approve, res)
			}
			present := harness.Eval[bool](tab, fmt.Sprintf(`voicebox.call('files.read', {path: %q}).then(a => a.ok)`, name))
			if present == approve {
				t.Fatalf("round %d: %s approved %v, present %v", round, name, approve, present)
			}
		}
		if left := harness.Eval[int](tab, `document.querySelectorAll('#approvals li.approval, #turns li[data-state="pending"]').length`); left != 0 {
			t.Fatalf("round %d: %d requests or turns still wait", round, left)
		}
	}
}
