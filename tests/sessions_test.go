//go:build !js

package tests

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// sessionLifetime is the relay's session lifetime in TestSessionsEndAndCloseThePagesChannel: long
// enough for the page to sign in and connect on a loaded machine (the page's own bounds are 20
// s), short enough to see it run out.
const sessionLifetime = "45s"

// relayCommand runs bin/relay with args against the relay's state directory and returns its
// standard output.
func relayCommand(t *testing.T, relay *harness.Relay, args ...string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(harness.RepoRoot(), "bin", "relay"), append(args, "--state-dir", relay.StateDir)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("relay %v: %v; %s", args, err, stderr.String())
	}
	return string(out)
}

// TestSessionsEndAndCloseThePagesChannel signs a page in (in a browser context of its own, so
// its cookie is apart from the other gated tests'; the relay sends its other loopback names to
// the printed one, so another name would not keep it apart), revokes its session with `relay sessions revoke
// --all`, and sees the page's channel refused session-revoked; then signs it in again with an
// address minted by `relay ticket` and sees the session run out: the channel is refused
// session-expired. Each time the relay has no executor afterwards and the page's address
// answers 401.
func TestSessionsEndAndCloseThePagesChannel(t *testing.T) {
	t.Parallel()
	relay := harness.StartRelay(t, "VOICEBOX_LOOPBACK_AUTH=1", "VOICEBOX_SESSION_LIFETIME="+sessionLifetime)
	page := relay.URL
	line := relay.NextLine(t, 5*time.Second)
	i := strings.Index(line, relay.URL+"/?bootstrap=")
	if i < 0 {
		t.Fatalf("the relay printed %q, want the one-time URL", line)
	}
	ticket := strings.Replace(strings.Fields(line[i:])[0], relay.URL, page, 1)
	tab := harness.NewIsolatedTab(t)
	tab.Allow(`401.*/api/root`) // the probes after each end

	signIn := func(address string) {
		t.Helper()
		openWorkspace(t, tab, address)
		harness.WaitFor[bool](tab, `document.querySelector('#channel').dataset.state === 'connected'`, channelBound)
		if a := relay.Call(t, "now", map[string]string{}); !a.OK {
			t.Fatalf("through the signed-in page a call answered %s", a.Raw)
		}
	}
	ended := func(rule, says string) {
		t.Helper()
		harness.WaitFor[bool](tab, `document.querySelector('#channel').dataset.state === 'refused' &&
			document.querySelector('#channel').title.includes(`+"`"+says+"`"+`)`, 2*time.Minute)
		if a := relay.Call(t, "now", map[string]string{}); a.OK || a.Refused != "no-page" {
			t.Fatalf("after the session's end (%s) a call answered %s, want no-page", rule, a.Raw)
		}
		status := harness.Eval[int](tab, `fetch('/api/root').then(r => r.status)`)
		if status != 401 {
			t.Fatalf("after the session's end (%s) the page's API answered %d, want 401", rule, status)
		}
	}

	signIn(ticket)
	list := relayCommand(t, relay, "sessions")
	if rows := strings.Split(strings.TrimSpace(list), "\n"); len(rows) != 2 || !strings.HasSuffix(rows[1], " 1") {
		t.Fatalf("relay sessions listed (want one session with its socket):\n%s", list)
	}
	if out := relayCommand(t, relay, "sessions", "revoke", "--all"); out != "revoked 1 session\n" {
		t.Fatalf("relay sessions revoke --all printed %q", out)
	}
	ended("session-revoked", "revoked")

	minted := strings.TrimSpace(relayCommand(t, relay, "ticket"))
	if !strings.HasPrefix(minted, relay.URL+"/?bootstrap=") {
		t.Fatalf("relay ticket printed %q", minted)
	}
	signIn(strings.Replace(minted, relay.URL, page, 1))
	ended("session-expired", "lifetime")
}

// printedTicket returns the one-time sign-in address relay printed at start.
func printedTicket(t *testing.T, relay *harness.Relay) string {
	t.Helper()
	for range 20 {
		line := relay.NextLine(t, 10*time.Second)
		if i := strings.Index(line, relay.URL+"/?bootstrap="); i >= 0 {
			return strings.Fields(line[i:])[0]
		}
	}
	t.Fatalf("relay %s printed no sign-in address in its first 20 lines", relay.URL)
	return ""
}

// TestTwoRelaysOnOneMachineKeepTheirOwnSessions: a browser scopes cookies by host, not port. One
// browser signs in to two gated relays apart and to one relay of a gated fleet, all on
// 127.0.0.1; afterwards every one of them still admits it (each relay's session kept under its
// own deployment's name), and so does the fleet's other relay, which it never signed in to (the
// fleet's relays share one name).
func TestTwoRelaysOnOneMachineKeepTheirOwnSessions(t *testing.T) {
	t.Parallel()
	a := harness.StartRelay(t, "VOICEBOX_LOOPBACK_AUTH=1")
	b := harness.StartRelay(t, "VOICEBOX_LOOPBACK_AUTH=1")
	fleet := harness.StartFleet(t, harness.FleetOptions{Prefix: "cookies", Env: []string{"VOICEBOX_LOOPBACK_AUTH=1"}})
	f1, f2 := fleet.Relays[0], fleet.Relays[1]
	tab := harness.NewIsolatedTab(t)

	apiStatus := `fetch('/api/root').then(r => r.status)`
	for _, r := range []*harness.Relay{a, b, f1} {
		tab.Navigate(printedTicket(t, r))
		if got := harness.Eval[int](tab, apiStatus); got != 200 {
			t.Fatalf("just signed in to %s, its API answered %d", r.URL, got)
		}
	}
	for _, r := range []*harness.Relay{a, b, f1, f2} {
		tab.Navigate(r.URL + "/")
		if got := harness.Eval[int](tab, apiStatus); got != 200 {
			t.Fatalf("after signing in to the three, %s answered the browser %d, want 200 (its session kept)", r.URL, got)
		}
	}
}
