package relay

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/voicebox-go/voicebox/internal/door/fleet/fleettest"
	"github.com/voicebox-go/voicebox/internal/shared/channel"
	"github.com/voicebox-go/voicebox/internal/shared/executor"
	"github.com/voicebox-go/voicebox/internal/shared/wire"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// clockRaw is an extension whose one tool (now) runs on the page that holds the root.
const clockRaw = `{"id":"clock","name":"Clock","capabilities":["clock"],"tools":[{"name":"clock_now","primitive":"now"}]}`

// livePage is a page in Go that, like the real page, verifies extension calls against the
// admitted set its relay last sent it.
type livePage struct {
	ws       *websocket.Conn
	admitted *channel.LiveAdmitted
}

// dialLivePage attaches a live page to m, with a memory workspace declared as its root.
func dialLivePage(t testing.TB, m *member) *livePage {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(m.url, "http")+"/channel", &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {m.url}}})
	if err != nil {
		t.Fatal(err)
	}
	ws.SetReadLimit(wire.MaxFrameBytes)
	t.Cleanup(func() { ws.CloseNow() })
	p := &livePage{ws: ws, admitted: channel.NewLiveAdmitted(executor.BuiltinAdmitted())}
	door := channel.NewDoor(memoryExecutor(), p.admitted, channel.DoorOptions{})
	go func() {
		for {
			_, b, err := ws.Read(context.Background())
			if err != nil {
				return
			}
			if channel.ControlType(b) == channel.AdmittedType {
				if set, err := channel.ParseAdmitted(b); err == nil {
					p.admitted.Replace(set)
				}
				continue
			}
			if _, err := wire.ParseCall(b); err == nil {
				go func() {
					if a := door.Serve(context.Background(), b); a != nil {
						ws.Write(context.Background(), websocket.MessageText, a)
					}
				}()
			}
		}
	}()
	ws.Write(ctx, websocket.MessageText, []byte(`{"type":"root","kind":"opfs","name":"Browser storage"}`))
	return p
}

// admittedOn reports whether m lists id among the admitted extensions.
func admittedOn(t testing.TB, m *member, id string) bool {
	t.Helper()
	_, out := m.do(t, http.MethodGet, "/api/extensions", nil)
	ext, _ := out["extensions"].(map[string]any)
	list, _ := ext["admitted"].([]any)
	return slices.ContainsFunc(list, func(e any) bool { x, _ := e.(map[string]any); return x["id"] == id })
}

// callClock calls the clock extension's tool through m's /api/extensions/call.
func callClock(t testing.TB, m *member) map[string]any {
	t.Helper()
	status, out := m.do(t, http.MethodPost, "/api/extensions/call", map[string]any{"extension": "clock", "tool": "clock_now", "args": map[string]any{}})
	if status != http.StatusOK {
		t.Fatalf("POST /api/extensions/call on %s: %d %v", m.url, status, out)
	}
	return out
}

var codeLine = regexp.MustCompile(`approval code for extension clock: (\d{8})`)

// TestFleetExtensionsAreShared is issue 26's scenario for extensions, three relays on one
// NATS: a proposal staged on A waits on C; a console code printed on A's console is redeemed
// once on B and refused on C; the extension it admits is listed on every relay and callable
// through each, run by the page on B, which verifies it against the set B sent it; revoked on
// C, it is refused everywhere and gone from the page's set.
func TestFleetExtensionsAreShared(t *testing.T) {
	t.Parallel()
	nats := fleettest.Start(t)
	a, b, c := startMember(t, nats, "ext", false), startMember(t, nats, "ext", false), startMember(t, nats, "ext", false)
	page := dialLivePage(t, b)
	connectedOn(t, c)

	if status, out := a.do(t, http.MethodPost, "/api/extensions/sideload", json.RawMessage(clockRaw)); status != http.StatusOK {
		t.Fatalf("staging on A: %d %v", status, out)
	}
	_, out := c.do(t, http.MethodGet, "/api/extensions", nil)
	if pending, _ := out["extensions"].(map[string]any)["pending"].([]any); len(pending) != 1 {
		t.Fatalf("the proposal staged on A, as C lists it: %v", out)
	}
	if status, out := a.do(t, http.MethodPost, "/api/extensions/approval-request", map[string]any{"id": "clock"}); status != http.StatusOK {
		t.Fatalf("asking A for a code: %d %v", status, out)
	}
	m := codeLine.FindStringSubmatch(a.console.String())
	if m == nil {
		t.Fatalf("A's console: %q", a.console.String())
	}
	code := m[1]
	if strings.Contains(b.console.String()+c.console.String(), code) {
		t.Fatal("the code was printed on another relay's console")
	}
	if status, out := b.do(t, http.MethodPost, "/api/extensions/approve", map[string]any{"id": "clock", "code": code}); status != http.StatusOK {
		t.Fatalf("redeeming A's code on B: %d %v", status, out)
	}
	if status, out := c.do(t, http.MethodPost, "/api/extensions/approve", map[string]any{"id": "clock", "code": code}); status != http.StatusForbidden || ruleOf(out) != refusal.ApprovalCodeUsed {
		t.Fatalf("the same code on C: %d %v, want 403 approval-code-used", status, out)
	}

	for _, m := range []*member{a, b, c} {
		waitFor(t, "the extension admitted through B listed on "+m.url, func() bool { return admittedOn(t, m, "clock") })
	}
	waitFor(t, "the page on B told of the admission", func() bool { return page.admitted.Allows("clock", "now") })
	for _, m := range []*member{a, b, c} {
		observed(t, callClock(t, m)) // run by the page on B, which admitted it
	}

	if status, out := c.do(t, http.MethodPost, "/api/extensions/revoke", map[string]any{"id": "clock"}); status != http.StatusOK {
		t.Fatalf("revoking on C: %d %v", status, out)
	}
	for _, m := range []*member{a, b, c} {
		waitFor(t, "the clock refused through "+m.url+" once revoked on C", func() bool { return ruleOf(callClock(t, m)) == refusal.NotAdmitted })
		if admittedOn(t, m, "clock") {
			t.Fatalf("%s lists a revoked extension", m.url)
		}
	}
	waitFor(t, "the page on B told of the revocation", func() bool { return !page.admitted.Allows("clock", "now") })
}

// TestFleetExtensionsWhileNATSIsAway: with NATS away a relay refuses what needs the shared
// extension store (staging, deciding) fleet-unavailable, 503, and keeps the admitted set it last
// loaded; once NATS is back, a revocation through one relay reaches the other.
func TestFleetExtensionsWhileNATSIsAway(t *testing.T) {
	t.Parallel()
	nats := fleettest.Start(t)
	a, b := startMember(t, nats, "extaway", false), startMember(t, nats, "extaway", false)
	if status, out := a.do(t, http.MethodPost, "/api/extensions/sideload", json.RawMessage(clockRaw)); status != http.StatusOK {
		t.Fatalf("staging: %d %v", status, out)
	}
	if status, out := a.do(t, http.MethodPost, "/api/extensions/admit", map[string]any{"id": "clock", "decision": "admit", "confirm": true}); status != http.StatusOK {
		t.Fatalf("admitting with A's host token: %d %v", status, out)
	}
	waitFor(t, "B loads what A admitted", func() bool { return admittedOn(t, b, "clock") })

	nats.Stop()
	waitFor(t, "both relays see NATS gone", func() bool { return !a.Fleet.Connected() && !b.Fleet.Connected() })
	if status, out := b.do(t, http.MethodPost, "/api/extensions/revoke", map[string]any{"id": "clock"}); status != http.StatusServiceUnavailable || ruleOf(out) != refusal.FleetUnavailable {
		t.Fatalf("revoking with NATS away: %d %v, want 503 fleet-unavailable", status, out)
	}
	// A new version of the clock (exactly what is admitted is refused already-admitted without
	// the store).
	clockV2 := strings.Replace(clockRaw, `"name":"Clock"`, `"name":"Clock 2"`, 1)
	if status, out := b.do(t, http.MethodPost, "/api/extensions/sideload", json.RawMessage(clockV2)); status != http.StatusServiceUnavailable || ruleOf(out) != refusal.FleetUnavailable {
		t.Fatalf("staging with NATS away: %d %v, want 503 fleet-unavailable", status, out)
	}
	if !admittedOn(t, b, "clock") {
		t.Fatal("B dropped its admitted set while NATS was away")
	}

	nats.Restart()
	waitFor(t, "both relays back on NATS", func() bool { return a.Fleet.Connected() && b.Fleet.Connected() })
	waitFor(t, "the revocation through B taken once NATS is back", func() bool {
		status, _ := b.do(t, http.MethodPost, "/api/extensions/revoke", map[string]any{"id": "clock"})
		return status == http.StatusOK
	})
	waitFor(t, "A drops what B revoked", func() bool { return !admittedOn(t, a, "clock") })
}
