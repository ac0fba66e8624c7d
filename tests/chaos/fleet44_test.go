//go:build !js

package chaos

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

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
	fleet := harness.StartFleet(t, harness.FleetOptions{Prefix: "fleet44", Restartable: true}) // relay B alive throughout
	a := fleet.Relays[0]
	tab := fleet.OpenPage(a)
	allowRelayDown(tab)

	const name = "kept.txt"
	if !harness.Eval[bool](tab, fmt.Sprintf(`voicebox.call('files.write', {path: %q, content: 'still here'}).then(a => a.ok)`, name)) {
		t.Fatalf("writing %s failed", name)
	}
	typeCommand(t, tab, "delete "+name)
	pendingTurn(t, tab)

	a.Kill(t)
	fleet.Restart(0) // on its port, with its state directory: a new run
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

// TestAFleetsTurnIsKnownLostWhenTheRelayThatTookItDies: two relays of a fleet behind a balancer
// that sends the page's turns to relay A and everything else (the page, its event stream, its
// channel) to relay B. A delete typed in the page is taken by A and waits for the person's
// approval, shown through B. A is killed (-9) for good and the balancer sends turns to B. The
// page's stream never breaks, so no hello tells it anything: B's runs event, once A's heartbeats
// have stopped for a lease TTL, is what settles the turn outcome-unknown, within the approval's
// own wait. The file is untouched, and a delete typed again is asked, approved and done by B.
func TestAFleetsTurnIsKnownLostWhenTheRelayThatTookItDies(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	origin := "http://" + ln.Addr().String()
	fleet := harness.StartFleet(t, harness.FleetOptions{Prefix: "fleet44b", Env: []string{"VOICEBOX_ORIGIN=" + origin}})
	a, b := fleet.Relays[0], fleet.Relays[1]
	urlA, _ := url.Parse(a.URL)
	urlB, _ := url.Parse(b.URL)
	var turnsTo atomic.Pointer[url.URL]
	turnsTo.Store(urlA)
	balancer := &http.Server{Handler: &httputil.ReverseProxy{FlushInterval: -1, Rewrite: func(r *httputil.ProxyRequest) {
		to := urlB
		if r.In.Method == http.MethodPost && r.In.URL.Path == "/api/turn" {
			to = turnsTo.Load()
		}
		r.SetURL(to)
		r.Out.Host = r.In.Host
	}}}
	go balancer.Serve(ln)
	t.Cleanup(func() { balancer.Close() })

	tab := harness.NewTab(t)
	tab.Allow(`answered 50[23]: .*/api/turn|Failed to load resource`)
	tab.Navigate(origin)
	harness.WaitFor[bool](tab, `document.querySelector('#status').dataset.state === 'ready' &&
		document.querySelector('#channel').dataset.state === 'connected'`, patience)
	waitFor(t, "B holding the page's root", func() bool { return rootKind(b.URL) == "opfs" })

	const name = "kept.txt"
	if !harness.Eval[bool](tab, fmt.Sprintf(`voicebox.call('files.write', {path: %q, content: 'still here'}).then(a => a.ok)`, name)) {
		t.Fatalf("writing %s failed", name)
	}
	typeCommand(t, tab, "delete "+name)
	id := pendingTurn(t, tab)
	if got := fleetDo(a, a.HostToken(t), http.MethodGet, "/api/approvals", nil); got.err != nil || !strings.Contains(fmt.Sprint(got.body["approvals"]), id) {
		t.Fatalf("the delete's request %s does not wait on A: %v %v", id, got.body, got.err)
	}

	a.Kill(t)
	turnsTo.Store(urlB)
	harness.WaitFor[bool](tab, `(() => { const li = document.querySelector('#turns li.turn'); return li.dataset.state !== 'pending'; })()`, lostTurnBound)
	if got := turnShown(tab); got[0] != "refused" || !strings.Contains(got[1], "outcome-unknown") || !strings.Contains(got[1], "no longer hears") {
		t.Fatalf("the turn A took shows %q: %q", got[0], got[1])
	}
	if !harness.Eval[bool](tab, fmt.Sprintf(`voicebox.call('files.read', {path: %q}).then(v => v.ok && v.value.text === 'still here')`, name)) {
		t.Fatalf("%s is gone, though its delete was never approved", name)
	}

	typeCommand(t, tab, "delete "+name)
	id = pendingTurn(t, tab)
	harness.Eval[bool](tab, fmt.Sprintf(`(document.querySelector('#approvals li.approval[data-approval-id=%q] button.approve').click(), true)`, id))
	harness.WaitFor[bool](tab, `(() => { const li = document.querySelector('#turns li.turn'); return li.dataset.state !== 'pending'; })()`, patience)
	if got := turnShown(tab); got[0] != "ok" {
		t.Fatalf("an approved delete through B shows %q: %q", got[0], got[1])
	}
	if harness.Eval[bool](tab, fmt.Sprintf(`voicebox.call('files.read', {path: %q}).then(v => v.ok)`, name)) {
		t.Fatalf("%s is still there after its approved delete", name)
	}
}
