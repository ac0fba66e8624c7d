//go:build !js

package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/voicebox-go/voicebox/tests/harness"
)

// TestThunderboltGuestKeepsItsTokenAndHearsTheHostContext: a guest that reads the host as
// Thunderbolt's guest SDK does (guests/thunderbolt-auth-guest.html). Its getAuthToken() keeps the
// handshake's token while it is valid, so two calls ask the host for none (the token's expiresAt
// is ISO 8601, which the SDK parses; Unix milliseconds made every call mint a new token); and
// when the person's colour scheme turns dark the guest is sent
// ui/notifications/host-context-changed with only the theme.
func TestThunderboltGuestKeepsItsTokenAndHearsTheHostContext(t *testing.T) {
	t.Parallel()
	app := newOrigin(t)
	reg, _ := json.Marshal(map[string]any{
		"tba": map[string]any{"name": "Thunderbolt auth guest", "url": app.URL + "/thunderbolt-auth-guest.html", "origin": app.URL,
			"protocol": "thunderbolt", "capabilities": []string{"auth"}, "audience": app.URL, "secret": strings.Repeat("s", 40)},
	})
	relay := harness.StartRelay(t, "MINI_APPS="+string(reg))
	app.serve(t, guestHandler(relay.URL))
	tab := harness.NewTab(t)
	colourScheme(t, tab, "light")
	tab.Navigate(relay.URL)
	harness.WaitFor[bool](tab, `document.querySelector('#status').dataset.state === 'ready' &&
		document.querySelector('#channel').dataset.state === 'connected'`, externalBound)
	harness.Eval[int](tab, `voicebox.externalApps.refresh().then((r) => r.length)`)
	harness.Eval[bool](tab, `(voicebox.externalApps.open('tba'), true)`)
	harness.WaitFor[bool](tab, `(() => { const s = voicebox.externalApps.state('tba'); return s.live && s.tools.length === 2; })()`, externalBound)

	probe := func(tool string, into any) {
		t.Helper()
		a := harness.Eval[callAnswer](tab, fmt.Sprintf(`voicebox.externalApps.callTool('tba', %q, {})`, tool))
		if !a.OK || json.Unmarshal([]byte(a.Value.Text), into) != nil {
			t.Fatalf("%s answered %+v", tool, a)
		}
	}

	var tokens struct {
		First, Second, ExpiresAt string
		Requests                 int
	}
	probe("tokens", &tokens)
	expires, err := time.Parse(time.RFC3339, tokens.ExpiresAt)
	if err != nil {
		t.Errorf("the token's expiresAt %q is not ISO 8601: %v", tokens.ExpiresAt, err)
	} else if left := time.Until(expires); left < time.Minute || left > 10*time.Minute {
		t.Errorf("the token expires in %s", left)
	}
	if tokens.First == "" || tokens.First != tokens.Second || tokens.Requests != 0 {
		t.Fatalf("getAuthToken() twice asked the host %d times (first %.12q…, second %.12q…): the handshake's token was not kept",
			tokens.Requests, tokens.First, tokens.Second)
	}

	var ctx struct {
		HostContext map[string]any   `json:"hostContext"`
		Patches     []map[string]any `json:"patches"`
	}
	probe("context", &ctx)
	if ctx.HostContext["theme"] != "light" || len(ctx.Patches) != 0 {
		t.Fatalf("before any change the guest holds %+v", ctx)
	}
	colourScheme(t, tab, "dark")
	harness.WaitFor[bool](tab, `voicebox.externalApps.state('tba').stats.contextChanges === 1`, externalBound)
	for deadline := time.Now().Add(externalBound); time.Now().Before(deadline) && len(ctx.Patches) == 0; time.Sleep(50 * time.Millisecond) {
		probe("context", &ctx)
	}
	if len(ctx.Patches) != 1 || fmt.Sprint(ctx.Patches[0]) != "map[theme:dark]" || ctx.HostContext["theme"] != "dark" {
		t.Fatalf("after the colour scheme turned dark the guest holds %+v", ctx)
	}
	// Point at: the person clicks the paragraph through the layer over the frame; the app is asked
	// ui/element-at and the composer holds what it said is there. Over the background, nothing.
	harness.WaitFor[bool](tab, `(b => !!b && !b.hidden)(document.querySelector('.xa-card[data-app-id="tba"] .xa-point'))`, externalBound)
	harness.Eval[bool](tab, `(document.querySelector('.xa-card[data-app-id="tba"] .xa-point').click(), true)`)
	at := harness.WaitFor[[]float64](tab, `(l => l && (r => [r.left + 40, r.top + 25])(l.getBoundingClientRect()))(document.querySelector('.xa-point-layer'))`, externalBound)
	if _, err := chromedp.Run(tab.Ctx, chromedp.MouseClickXY(at[0], at[1])); err != nil {
		t.Fatal(err)
	}
	composer := harness.WaitFor[string](tab, `document.getElementById('command').value`, externalBound)
	if composer != "About this in Thunderbolt auth guest: the quarterly figures, pointed at" || harness.Eval[bool](tab, `!!document.querySelector('.xa-point-layer')`) {
		t.Fatalf("after pointing at the paragraph the composer holds %q", composer)
	}
	nothing := harness.Eval[map[string]any](tab, `(f => voicebox.externalApps.pointAt('tba', 5, f.getBoundingClientRect().height - 5))(document.querySelector('.xa-card[data-app-id="tba"] iframe'))`)
	if nothing["ok"] != true || nothing["value"] != nil {
		t.Fatalf("pointing at the background answered %v", nothing)
	}

	// The next legitimate request is served.
	probe("tokens", &tokens)
	if tokens.Requests != 0 {
		t.Fatalf("after the change getAuthToken() asked the host %d times", tokens.Requests)
	}
}

// colourScheme makes the tab's prefers-color-scheme scheme, as a person switching it does.
func colourScheme(t *testing.T, tab *harness.Tab, scheme string) {
	t.Helper()
	err := chromedp.Do(tab.Ctx, chromedp.Func(func(ctx context.Context, target *chromedp.Target) error {
		_, err := cdp.Call(ctx, target, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
		return err
	}))
	if err != nil {
		t.Fatalf("emulate prefers-color-scheme %s: %v", scheme, err)
	}
}
